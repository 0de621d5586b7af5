package gc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/tendhq/tend/examples/workspace/archive"
	"github.com/tendhq/tend/examples/workspace/objstore"
)

// Defaults of [Config].
const (
	// DefaultDelay is how long an orphan waits before it is deleted when
	// Config.Delay is zero.
	DefaultDelay = 2 * time.Hour
	// DefaultInterval is the time between cycles when Config.Interval is
	// zero.
	DefaultInterval = 10 * time.Minute
)

// ErrInvalidConfig reports a Config that cannot be used.
var ErrInvalidConfig = errors.New("gc: invalid config")

// Timers keeps the orphan timers (archive key → first seen as an orphan)
// across restarts.
type Timers interface {
	// Load returns the saved timers (none when nothing was saved).
	Load(ctx context.Context) (map[string]time.Time, error)
	// Save replaces the saved timers.
	Save(ctx context.Context, timers map[string]time.Time) error
}

// Config configures [New].
type Config struct {
	// Objects is the object storage holding the archives. Required.
	Objects objstore.Store
	// References reads every workspace from the store. Required.
	References func(ctx context.Context) ([]Reference, error)
	// Timers keeps the orphan timers. Nil means in memory only: a restart
	// then waits one more delay.
	Timers Timers
	// Delay is the safety delay between finding an orphan and deleting it.
	// Zero means [DefaultDelay].
	Delay time.Duration
	// Interval is the time between cycles of [Runner.Run]. Zero means
	// [DefaultInterval].
	Interval time.Duration
	// Now is the clock. Nil means time.Now (which testing/synctest fakes).
	Now func() time.Time
	// Logger receives a line per cycle that did something. Nil means none.
	Logger *zap.Logger
}

// Runner is the GC runner. Cycles must not overlap: call [Runner.Cycle] from
// one goroutine at a time, or use [Runner.Run].
type Runner struct {
	cfg    Config
	timers map[string]time.Time // nil until loaded; owned by the cycle running
}

// New returns a runner. It starts nothing; call [Runner.Run].
func New(cfg Config) (*Runner, error) {
	if cfg.Objects == nil || cfg.References == nil {
		return nil, fmt.Errorf("%w: Objects and References are required", ErrInvalidConfig)
	}
	if cfg.Delay < 0 || cfg.Interval < 0 {
		return nil, fmt.Errorf("%w: negative Delay or Interval", ErrInvalidConfig)
	}
	if cfg.Delay == 0 {
		cfg.Delay = DefaultDelay
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	return &Runner{cfg: cfg}, nil
}

// Report is what one cycle found and did.
type Report struct {
	// Archives is the number of archives listed.
	Archives int
	// Protected maps each protected archive listed to its rule.
	Protected map[string]Rule
	// Waiting lists the orphans whose delay has not passed.
	Waiting []string
	// Deleted lists the orphans deleted, archive and .meta.
	Deleted []string
	// Failed lists the orphans whose deletion failed; retried next cycle.
	Failed []string
}

// Run runs a cycle at once and then every Interval until ctx ends. A failed
// cycle is logged and the next one runs on time. It returns nil when ctx
// ends.
func (r *Runner) Run(ctx context.Context) error {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if _, err := r.Cycle(ctx); err != nil && ctx.Err() == nil {
			r.cfg.Logger.Warn("gc cycle skipped", zap.Error(err))
		}
		t.Reset(r.cfg.Interval)
	}
}

// Cycle runs one cycle. It returns an error, and changes nothing, when the
// listing or the store cannot be read.
func (r *Runner) Cycle(ctx context.Context) (Report, error) {
	if r.timers == nil {
		r.timers = map[string]time.Time{}
		if r.cfg.Timers != nil {
			saved, err := r.cfg.Timers.Load(ctx)
			if err != nil {
				// Starting afresh only delays deletion by one delay.
				r.cfg.Logger.Warn("gc timers lost; orphans wait one more delay", zap.Error(err))
			}
			maps.Copy(r.timers, saved)
		}
	}
	listing, err := r.cfg.Objects.List(ctx, "")
	if err != nil {
		return Report{}, fmt.Errorf("gc: listing archives: %w", err)
	}
	refs, err := r.cfg.References(ctx)
	if err != nil {
		return Report{}, fmt.Errorf("gc: reading workspaces: %w", err)
	}
	protected := Protected(refs)
	now := r.cfg.Now()

	archives := map[string]bool{}
	for _, o := range listing {
		if ws, op, ok := archive.ParseKey(o.Key); ok {
			archives[archive.Key(ws, op)] = true
		}
	}
	rep := Report{Archives: len(archives), Protected: map[string]Rule{}}
	for _, key := range slices.Sorted(maps.Keys(archives)) {
		if rule, ok := protected[key]; ok {
			rep.Protected[key] = rule
			delete(r.timers, key)
			continue
		}
		first, ok := r.timers[key]
		if !ok || first.After(now) {
			r.timers[key] = now
			rep.Waiting = append(rep.Waiting, key)
			continue
		}
		if now.Sub(first) < r.cfg.Delay {
			rep.Waiting = append(rep.Waiting, key)
			continue
		}
		if err := r.delete(ctx, key); err != nil {
			r.cfg.Logger.Warn("gc delete failed; retried next cycle", zap.String("archive", key), zap.Error(err))
			rep.Failed = append(rep.Failed, key)
			continue
		}
		delete(r.timers, key)
		rep.Deleted = append(rep.Deleted, key)
	}
	for key := range r.timers {
		if !archives[key] {
			delete(r.timers, key) // gone by other means
		}
	}
	if r.cfg.Timers != nil {
		if err := r.cfg.Timers.Save(ctx, maps.Clone(r.timers)); err != nil {
			r.cfg.Logger.Warn("gc timers not saved", zap.Error(err))
		}
	}
	if len(rep.Deleted)+len(rep.Failed) > 0 {
		r.cfg.Logger.Info("gc cycle", zap.Int("archives", rep.Archives), zap.Strings("deleted", rep.Deleted),
			zap.Strings("failed", rep.Failed), zap.Int("waiting", len(rep.Waiting)))
	}
	return rep, nil
}

// delete removes an archive's .meta, then the archive.
func (r *Runner) delete(ctx context.Context, key string) error {
	if err := r.cfg.Objects.Delete(ctx, archive.MetaKey(key)); err != nil {
		return err
	}
	return r.cfg.Objects.Delete(ctx, key)
}

// FileTimers keeps the timers in a JSON file, replaced atomically on each
// save.
type FileTimers struct {
	// Path is the file.
	Path string
}

// Load implements [Timers]. A missing file holds no timers.
func (f FileTimers) Load(ctx context.Context) (map[string]time.Time, error) {
	b, err := os.ReadFile(f.Path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]time.Time{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("gc: %w", err)
	}
	var m map[string]time.Time
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("gc: timers in %s: %w", f.Path, err)
	}
	return m, nil
}

// Save implements [Timers].
func (f FileTimers) Save(ctx context.Context, timers map[string]time.Time) error {
	b, err := json.Marshal(timers)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(f.Path), ".timers-*")
	if err != nil {
		return fmt.Errorf("gc: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), f.Path)
	}
	if err != nil {
		return fmt.Errorf("gc: saving timers: %w", err)
	}
	return nil
}
