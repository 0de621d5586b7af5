package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/tendhq/tend/manager"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/console"
	"github.com/tendhq/tend/examples/workspace/dataplane"
	"github.com/tendhq/tend/examples/workspace/gc"
	"github.com/tendhq/tend/examples/workspace/local"
	"github.com/tendhq/tend/examples/workspace/objstore"
	"github.com/tendhq/tend/examples/workspace/storagejob"
	"github.com/tendhq/tend/history"
	"github.com/tendhq/tend/history/historyprom"
	"github.com/tendhq/tend/store"
)

// removed is the phase shown for a document the controller removed.
const removed = "(removed)"

// board shows each workspace's phase and operation as the store reports
// them, and lets the scenario wait for a phase.
type board struct {
	out     io.Writer
	start   time.Time
	mu      sync.Mutex // guards the fields below
	rows    map[string]string
	phases  map[string]string
	changed chan struct{} // closed and replaced on every change
}

func newBoard(out io.Writer) *board {
	return &board{out: out, start: time.Now(), rows: map[string]string{}, phases: map[string]string{}, changed: make(chan struct{})}
}

// follow prints every change of a workspace's phase, operation or step until
// ctx ends.
func (b *board) follow(ctx context.Context, coll *store.Collection[dataplane.Spec, dataplane.Status]) error {
	w, err := coll.Watch(ctx, 0)
	if err != nil {
		return err
	}
	defer w.Close()
	for {
		ev, err := w.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		ws := ev.Object
		st := ws.Status
		phase := string(st.Phase)
		row := fmt.Sprintf("%-8s intent %-8s phase %-12s operation %-12s", ws.Key, ws.Spec.State, phase, st.OperationName())
		if st.Operation != nil {
			row += fmt.Sprintf(" op_id %s  steps done %v", st.Operation.ID, st.Operation.Done)
			if st.Operation.LastError != "" {
				row += "  retrying: " + st.Operation.LastError
			}
		}
		if st.ArchiveKey != "" {
			row += "  archive_key " + st.ArchiveKey
		}
		if st.Failure != nil {
			row += "  failure: " + st.Failure.Reason
		}
		if ev.Type == store.Deleted {
			phase, row = removed, fmt.Sprintf("%-8s removed from the store", ws.Key)
		} else if phase == "" {
			phase = string(dataplane.Pending)
		}
		b.mu.Lock()
		if b.rows[ws.Key] != row {
			b.rows[ws.Key] = row
			fmt.Fprintf(b.out, "%6.2fs  %s\n", time.Since(b.start).Seconds(), row)
		}
		b.phases[ws.Key] = phase
		close(b.changed)
		b.changed = make(chan struct{})
		b.mu.Unlock()
	}
}

// wait blocks until workspace id is in phase (or ERROR, which fails).
func (b *board) wait(ctx context.Context, id, phase string) error {
	for {
		b.mu.Lock()
		got, ch := b.phases[id], b.changed
		b.mu.Unlock()
		switch {
		case got == phase:
			return nil
		case got == string(dataplane.Error):
			return fmt.Errorf("%s is in ERROR, waiting for %s", id, phase)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s to be %s (it is %s): %w", id, phase, got, ctx.Err())
		case <-ch:
		}
	}
}

func (b *board) say(format string, args ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	fmt.Fprintf(b.out, "\n%6.2fs  ▶ %s\n", time.Since(b.start).Seconds(), fmt.Sprintf(format, args...))
}

// world is where the scenario's workspaces live: the backends that run
// their containers and keep their volumes, and a way into their homes.
type world struct {
	instances dataplane.InstanceController
	storage   dataplane.StorageProvider
	home      home
	image     string // the containers' image
}

// workspaces are the scenario's workspace ids.
var workspaces = []string{"alice", "bob"}

// home reads and writes files in a workspace's home, as its user would.
type home interface {
	// where says how the home of workspace id is reached.
	where(ctx context.Context, id string) string
	put(ctx context.Context, id, file, content string) error
	get(ctx context.Context, id, file string) (string, error)
}

// archives is where the scenario keeps its archives: an object store, and
// what its storage jobs reach it with.
type archives struct {
	// objects holds the archives; nil means a directory in the scenario's
	// directory.
	objects objstore.Addressable
	// creds reach an S3 bucket's server from a storage job.
	creds storagejob.Credentials
}

// in returns a, or when it names no store a directory store under dir.
func (a archives) in(dir string) (archives, error) {
	if a.objects != nil {
		return a, nil
	}
	d, err := objstore.NewDir(filepath.Join(dir, "objects"))
	return archives{objects: d}, err
}

// run runs the scenario on the embedded default in dir, with the archives
// in a; each archive and restore is a child process.
func run(ctx context.Context, dir string, a archives, o ops, out io.Writer) error {
	a, err := a.in(dir)
	if err != nil {
		return err
	}
	storage, err := local.NewStorage(local.StorageConfig{Dir: dir, Objects: a.objects, Credentials: a.creds})
	if err != nil {
		return err
	}
	defer storage.Close()
	instances, err := local.NewInstances(local.InstancesConfig{Dir: filepath.Join(dir, "run"), Volume: storage.VolumeDir})
	if err != nil {
		return err
	}
	defer instances.Close()
	return play(ctx, world{instances: instances, storage: storage, home: containerHomes{instances}, image: "workspace:latest"}, a.objects, o, out)
}

// play runs the scenario's controller, board and summary in w until the
// scenario ends, and what o asks for.
func play(ctx context.Context, w world, objects objstore.Store, o ops, out io.Writer) error {
	// The controller's builder gives the store the kinds it needs: the
	// workspaces, their histories and the machine's registration.
	mem, err := memory.New(memory.Config{})
	if err != nil {
		return err
	}
	var rec *history.Recorder // nil: no history
	var con *console.Console
	if o.listener != nil {
		if rec, err = history.NewRecorder(mem, history.RecorderConfig{Metrics: historyMetrics(o.registerer())}); err != nil {
			return err
		}
		cfg := console.Config{Store: mem, Prefix: "/console/", Actor: func(*http.Request) string { return "demo-operator" }}
		if o.consoleActions {
			cfg.Authorize = func(*http.Request, console.Action) error { return nil }
		}
		if con, err = console.New(cfg); err != nil {
			return err
		}
	}
	ctrl, err := dataplane.New(dataplane.Config{Store: mem, Instances: w.instances, Storage: w.storage, WaitInterval: 50 * time.Millisecond,
		Manager: manager.Config{MetricsRegisterer: o.registerer(), History: rec}})
	if err != nil {
		return err
	}
	mgr := ctrl.Manager()
	b := newBoard(out)
	runCtx, stop := context.WithCancel(ctx)
	g, gctx := errgroup.WithContext(runCtx)
	g.Go(func() error { return mgr.Run(gctx) })
	g.Go(func() error { return b.follow(gctx, ctrl.Collection()) })
	g.Go(func() error { return b.summarize(gctx, ctrl.Collection(), cmp.Or(o.summaryEvery, time.Second)) })
	if o.listener != nil {
		hc := manager.HandlerConfig{History: history.NewReader(mem), Fallback: con}
		if o.registry != nil {
			hc.Gatherer = o.registry
		}
		g.Go(func() error { return mgr.ServeListener(gctx, o.listener, hc) })
		b.say("serving probes, metrics and history on http://%s (/readyz, /healthz, /metrics, /history/%s/alice)",
			o.listener.Addr(), dataplane.Kind)
		b.say("the console: http://%s/console/", o.listener.Addr())
	}
	err = scenario(gctx, b, ctrl, w, objects)
	stop()
	return errors.Join(err, g.Wait())
}

func scenario(ctx context.Context, b *board, ctrl *dataplane.Controller, w world, objects objstore.Store) error {
	b.say("create alice (RUNNING) and bob (STANDBY)")
	if _, err := ctrl.Create(ctx, "alice", dataplane.Spec{State: dataplane.StateRunning, Image: w.image}); err != nil {
		return err
	}
	if _, err := ctrl.Create(ctx, "bob", dataplane.Spec{State: dataplane.StateStandby, Image: w.image}); err != nil {
		return err
	}
	if err := errors.Join(b.wait(ctx, "alice", "RUNNING"), b.wait(ctx, "bob", "STANDBY")); err != nil {
		return err
	}

	const file, content = "projects/hello.txt", "hello from alice's home\n"
	b.say("write %s into alice's home %s", file, w.home.where(ctx, "alice"))
	if err := w.home.put(ctx, "alice", file, content); err != nil {
		return err
	}

	b.say("stop alice (STANDBY), then archive her (ARCHIVED): her volume goes to object storage")
	if err := setAndWait(ctx, b, ctrl, "alice", dataplane.StateStandby, "STANDBY"); err != nil {
		return err
	}
	if err := setAndWait(ctx, b, ctrl, "alice", dataplane.StateArchived, "ARCHIVED"); err != nil {
		return err
	}
	first, err := ctrl.Get(ctx, "alice")
	if err != nil {
		return err
	}

	b.say("start alice again (RUNNING): restore from %s, then start", first.Status.ArchiveKey)
	if err := setAndWait(ctx, b, ctrl, "alice", dataplane.StateRunning, "RUNNING"); err != nil {
		return err
	}
	got, err := w.home.get(ctx, "alice", file)
	if err != nil {
		return err
	}
	if got != content {
		return fmt.Errorf("%s after restore holds %q, want %q", file, got, content)
	}
	b.say("%s survived the archive and the restore: %q", file, strings.TrimSpace(got))

	b.say("archive alice once more: her first archive becomes an orphan")
	if err := setAndWait(ctx, b, ctrl, "alice", dataplane.StateArchived, "ARCHIVED"); err != nil {
		return err
	}

	// The GC's clock is simulated so the two-hour safety delay passes at once.
	now := time.Now()
	runner, err := gc.New(gc.Config{Objects: objects, References: ctrl.ArchiveReferences, Now: func() time.Time { return now }})
	if err != nil {
		return err
	}
	report := func(what string) error {
		rep, err := runner.Cycle(ctx)
		if err != nil {
			return err
		}
		b.say("GC %s: %d archives, protected %v, waiting %v, deleted %v", what, rep.Archives, rep.Protected, rep.Waiting, rep.Deleted)
		return nil
	}
	if err := report("cycle"); err != nil {
		return err
	}
	now = now.Add(gc.DefaultDelay)
	if err := report("cycle two hours later"); err != nil {
		return err
	}
	if ok, _ := objects.Head(ctx, first.Status.ArchiveKey); ok.Key != "" {
		return fmt.Errorf("orphan %s not collected", first.Status.ArchiveKey)
	}

	b.say("delete alice and bob (deleted_at set first; bob steps down: archive, then delete)")
	for _, id := range workspaces {
		if _, err := ctrl.Delete(ctx, id); err != nil {
			return err
		}
	}
	if err := errors.Join(b.wait(ctx, "alice", removed), b.wait(ctx, "bob", removed)); err != nil {
		return err
	}
	if err := report("cycle after the deletes"); err != nil {
		return err
	}
	now = now.Add(gc.DefaultDelay)
	if err := report("cycle two hours later"); err != nil {
		return err
	}

	left, err := objects.List(ctx, "")
	if err != nil {
		return err
	}
	for _, id := range workspaces {
		if ok, _ := w.instances.IsRunning(ctx, id); ok {
			return fmt.Errorf("container ws-%s still running", id)
		}
	}
	if len(left) != 0 {
		return fmt.Errorf("objects left in storage: %v", left)
	}
	return nil
}

func setAndWait(ctx context.Context, b *board, ctrl *dataplane.Controller, id string, s dataplane.State, phase string) error {
	if _, err := ctrl.SetState(ctx, id, s); err != nil {
		return err
	}
	return b.wait(ctx, id, phase)
}

// containerHomes reaches a workspace's home through its container, which
// serves it over HTTP.
type containerHomes struct{ instances *local.Instances }

func (c containerHomes) where(_ context.Context, id string) string {
	return "through the container (" + c.instances.Addr(id) + ")"
}

var client = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

func (c containerHomes) put(ctx context.Context, id, file, content string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, "http://"+c.instances.Addr(id)+"/"+file, strings.NewReader(content))
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("PUT %s: %s", file, resp.Status)
	}
	return nil
}

func (c containerHomes) get(ctx context.Context, id, file string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+c.instances.Addr(id)+"/"+file, nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", file, resp.Status)
	}
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// historyMetrics returns the metrics of a history recorder registered with
// reg, or none when reg is nil.
func historyMetrics(reg prometheus.Registerer) history.MetricsProvider {
	if reg == nil {
		return nil
	}
	return historyprom.New(historyprom.Config{Registerer: reg})
}
