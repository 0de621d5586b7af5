package probe

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// ErrInvalidConfig is returned, wrapped with the reason, by [New].
var ErrInvalidConfig = errors.New("probe: invalid config")

// Config configures a Writer.
type Config struct {
	// Endpoints returns the cluster's current client URLs; the writer asks
	// before each write. Required.
	Endpoints func(ctx context.Context) []string
	// Key is the key written. Empty means "probe".
	Key string
	// Tries is how many attempts a write or a read gets. Zero means 10.
	Tries int
	// Timeout bounds each attempt. Zero means 1 second.
	Timeout time.Duration
	// Interval is the pause between writes. Zero means 20 milliseconds.
	Interval time.Duration
}

// Writer writes 0, 1, 2… to a key and reads each value back.
type Writer struct {
	cfg        Config
	ok, failed atomic.Int64

	mu      sync.Mutex // guards lastErr
	lastErr error
}

// New returns a writer configured by cfg. It starts nothing.
func New(cfg Config) (*Writer, error) {
	if cfg.Endpoints == nil {
		return nil, fmt.Errorf("%w: Endpoints is required", ErrInvalidConfig)
	}
	if cfg.Tries < 0 || cfg.Timeout < 0 || cfg.Interval < 0 {
		return nil, fmt.Errorf("%w: negative value", ErrInvalidConfig)
	}
	if cfg.Key == "" {
		cfg.Key = "probe"
	}
	if cfg.Tries == 0 {
		cfg.Tries = 10
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = time.Second
	}
	if cfg.Interval == 0 {
		cfg.Interval = 20 * time.Millisecond
	}
	return &Writer{cfg: cfg}, nil
}

// Run writes until ctx ends and returns once its client is closed.
func (w *Writer) Run(ctx context.Context) error {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   w.cfg.Endpoints(ctx),
		DialTimeout: w.cfg.Timeout,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return err
	}
	defer cli.Close()
	for i := 0; ctx.Err() == nil; i++ {
		if eps := w.cfg.Endpoints(ctx); len(eps) > 0 && !slices.Equal(eps, cli.Endpoints()) {
			cli.SetEndpoints(eps...)
		}
		err := w.writeRead(ctx, cli, i)
		switch {
		case ctx.Err() != nil:
		case err != nil:
			w.failed.Add(1)
			w.mu.Lock()
			w.lastErr = err
			w.mu.Unlock()
		default:
			w.ok.Add(1)
		}
		sleep(ctx, w.cfg.Interval)
	}
	return nil
}

// Counts returns how many writes (each read back) succeeded and how many
// failed after their retries.
func (w *Writer) Counts() (ok, failed int64) { return w.ok.Load(), w.failed.Load() }

// LastErr returns the error of the last failed write, or nil.
func (w *Writer) LastErr() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastErr
}

// writeRead writes value i and reads it back.
func (w *Writer) writeRead(ctx context.Context, cli *clientv3.Client, i int) error {
	want := fmt.Sprint(i)
	err := w.retry(ctx, func(ctx context.Context) error {
		_, err := cli.Put(ctx, w.cfg.Key, want)
		return err
	})
	if err != nil {
		return fmt.Errorf("probe: put %d: %w", i, err)
	}
	return w.retry(ctx, func(ctx context.Context) error {
		r, err := cli.Get(ctx, w.cfg.Key)
		if err != nil {
			return fmt.Errorf("probe: get: %w", err)
		}
		if len(r.Kvs) != 1 || string(r.Kvs[0].Value) != want {
			return fmt.Errorf("probe: read %v after writing %s", r.Kvs, want)
		}
		return nil
	})
}

func (w *Writer) retry(ctx context.Context, f func(context.Context) error) error {
	var err error
	for range w.cfg.Tries {
		c, cancel := context.WithTimeout(ctx, w.cfg.Timeout)
		err = f(c)
		cancel()
		if err == nil || ctx.Err() != nil {
			return err
		}
		sleep(ctx, 100*time.Millisecond)
	}
	return err
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
