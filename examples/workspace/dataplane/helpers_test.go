package dataplane_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/examples/workspace/archive"
	"github.com/tendhq/tend/examples/workspace/dataplane"
	"github.com/tendhq/tend/examples/workspace/local"
	"github.com/tendhq/tend/examples/workspace/objstore"
	"github.com/tendhq/tend/examples/workspace/storagejob"
	"github.com/tendhq/tend/store"
	"github.com/tendhq/tend/workqueue"
)

var errInjected = errors.New("injected failure")

// env is a workspace world on the embedded backends, with hooks around every
// actuator call.
type env struct {
	t         *testing.T
	mem       *memory.Store
	objects   *faultyObjects
	storage   *hookedStorage
	instances *hookedInstances
	local     *local.Storage
	procs     *local.Instances
	ctrl      *dataplane.Controller
	ops       int
}

func newEnv(t *testing.T) *env {
	t.Helper()
	dir := t.TempDir()
	d, err := objstore.NewDir(filepath.Join(dir, "objects"))
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, objects: &faultyObjects{Addressable: d}}
	jobs, err := archive.New(archive.Config{Objects: e.objects, Scratch: filepath.Join(dir, "scratch")})
	if err != nil {
		t.Fatal(err)
	}
	runner := &syncJobs{jobs: jobs, jobsRun: map[string]dataplane.JobStatus{}}
	e.local, err = local.NewStorage(local.StorageConfig{Dir: dir, Objects: e.objects, Runner: runner})
	runner.volume = e.local.VolumeDir
	if err != nil {
		t.Fatal(err)
	}
	e.procs, err = local.NewInstances(local.InstancesConfig{Dir: filepath.Join(dir, "run"), Volume: e.local.VolumeDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.procs.Close() })
	e.storage = &hookedStorage{StorageProvider: e.local}
	e.instances = &hookedInstances{InstanceController: e.procs}
	e.mem, err = memory.New(memory.Config{Kinds: []string{dataplane.Kind}})
	if err != nil {
		t.Fatal(err)
	}
	e.restart()
	return e
}

// restart replaces the controller by a new one on the same store and world,
// as a crashed and restarted process would be.
func (e *env) restart() {
	e.t.Helper()
	c, err := dataplane.New(dataplane.Config{
		Store: e.mem, Instances: e.instances, Storage: e.storage,
		NewOperationID: func() string { e.ops++; return fmt.Sprintf("op%d", e.ops) },
		Backoff:        retryAtOnce, // the tests drive retries one reconcile at a time
	})
	if err != nil {
		e.t.Fatal(err)
	}
	e.ctrl = c
}

// reconcile runs reconciles of id until one ends without an error and wants
// nothing more, or a terminal error, or n reconciles.
func (e *env) reconcile(id string, n int) error {
	e.t.Helper()
	var err error
	for range n {
		var res controller.Result
		res, err = e.ctrl.Reconcile(context.Background(), id)
		if errors.Is(err, controller.ErrTerminal) || (err == nil && res.RequeueAfter == 0) {
			return err
		}
	}
	return err
}

// firstError runs reconciles of id until one fails, or one wants nothing
// more, or n reconciles, and returns that reconcile's error: one attempt of
// a step whose storage job starts at one reconcile and is seen to have
// exited at the next.
func (e *env) firstError(id string, n int) error {
	e.t.Helper()
	for range n {
		res, err := e.ctrl.Reconcile(context.Background(), id)
		if err != nil || res.RequeueAfter == 0 {
			return err
		}
	}
	return nil
}

func (e *env) get(id string) *dataplane.Workspace {
	e.t.Helper()
	ws, err := e.ctrl.Get(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return ws
}

// drive sets the intent of id and reconciles until it rests in phase.
func (e *env) drive(id string, s dataplane.State, phase dataplane.Phase) {
	e.t.Helper()
	ctx := context.Background()
	if _, err := e.ctrl.Get(ctx, id); errors.Is(err, store.ErrNotFound) {
		if _, err := e.ctrl.Create(ctx, id, dataplane.Spec{State: s, Image: "workspace:latest"}); err != nil {
			e.t.Fatal(err)
		}
	} else if _, err := e.ctrl.SetState(ctx, id, s); err != nil {
		e.t.Fatal(err)
	}
	if err := e.reconcile(id, 20); err != nil {
		e.t.Fatalf("reconcile %s towards %s: %v", id, s, err)
	}
	if got := e.get(id).Status.Phase; got != phase {
		e.t.Fatalf("%s: phase %s, want %s", id, got, phase)
	}
}

// hookedStorage calls before/after hooks around each call.
type hookedStorage struct {
	dataplane.StorageProvider
	mu     sync.Mutex // guards the hooks and calls
	before func(method, id string) error
	after  func(method, id string, err error) error
	calls  []string
}

func (h *hookedStorage) hook(method, id string, call func() error) error {
	h.mu.Lock()
	h.calls = append(h.calls, method)
	before, after := h.before, h.after
	h.mu.Unlock()
	if before != nil {
		if err := before(method, id); err != nil {
			return err
		}
	}
	err := call()
	if after != nil {
		err = after(method, id, err)
	}
	return err
}

func (h *hookedStorage) count(method string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return countCalls(h.calls, method)
}

func (h *hookedInstances) count(method string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return countCalls(h.calls, method)
}

// countCalls returns how many of calls are to method.
func countCalls(calls []string, method string) int {
	n := 0
	for _, c := range calls {
		if c == method {
			n++
		}
	}
	return n
}

func (h *hookedStorage) Provision(ctx context.Context, id string) error {
	return h.hook("Provision", id, func() error { return h.StorageProvider.Provision(ctx, id) })
}
func (h *hookedStorage) Restore(ctx context.Context, id, key string) (m string, err error) {
	err = h.hook("Restore", id, func() error { m, err = h.StorageProvider.Restore(ctx, id, key); return err })
	return m, err
}
func (h *hookedStorage) Archive(ctx context.Context, id, op string) (k string, err error) {
	err = h.hook("Archive", id, func() error { k, err = h.StorageProvider.Archive(ctx, id, op); return err })
	return k, err
}
func (h *hookedStorage) DeleteVolume(ctx context.Context, id string) error {
	return h.hook("DeleteVolume", id, func() error { return h.StorageProvider.DeleteVolume(ctx, id) })
}

// hookedInstances calls an after hook after each Start and Delete.
type hookedInstances struct {
	dataplane.InstanceController
	mu    sync.Mutex // guards after and calls
	after func(method, id string)
	calls []string
}

func (h *hookedInstances) record(method, id string) {
	h.mu.Lock()
	h.calls = append(h.calls, method)
	after := h.after
	h.mu.Unlock()
	if after != nil {
		after(method, id)
	}
}

func (h *hookedInstances) Start(ctx context.Context, id, image string) error {
	err := h.InstanceController.Start(ctx, id, image)
	h.record("Start", id)
	return err
}
func (h *hookedInstances) Delete(ctx context.Context, id string) error {
	err := h.InstanceController.Delete(ctx, id)
	h.record("Delete", id)
	return err
}

// syncJobs runs each storage job in this process, to completion, when it
// is started, on the test's object store: the faults the tests inject
// reach it, which they would not in a job's own process, and the controller
// still learns of the job's end only by looking at it. A job's error
// crosses to the controller as a job's would: as an exit code and a message.
type syncJobs struct {
	jobs    *archive.Jobs
	volume  func(id string) string
	mu      sync.Mutex
	jobsRun map[string]dataplane.JobStatus // by name, until removed
}

func (r *syncJobs) Start(ctx context.Context, job dataplane.Job) error {
	r.mu.Lock()
	_, ok := r.jobsRun[job.Name]
	r.mu.Unlock()
	if ok {
		return nil
	}
	_, key, release, err := storagejob.Open(ctx, job.ArchiveURL, storagejob.Credentials{})
	if err != nil {
		return err
	}
	release()
	if job.Command == storagejob.Archive {
		_, err = r.jobs.Archive(ctx, key, r.volume(job.WorkspaceID))
	} else {
		err = r.jobs.Restore(ctx, key, r.volume(job.WorkspaceID))
	}
	st := dataplane.JobStatus{State: dataplane.JobSucceeded}
	if err != nil {
		st = dataplane.JobStatus{State: dataplane.JobFailed, ExitCode: storagejob.ExitCode(err), Message: err.Error()}
	}
	r.mu.Lock()
	r.jobsRun[job.Name] = st
	r.mu.Unlock()
	return nil
}

func (r *syncJobs) Status(_ context.Context, name string) (dataplane.JobStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.jobsRun[name], nil // absent when unknown
}

func (r *syncJobs) Remove(_ context.Context, name string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.jobsRun, name)
	return nil
}

// faultyObjects fails puts on demand.
type faultyObjects struct {
	objstore.Addressable
	mu      sync.Mutex // guards failPut and puts
	failPut func(key string) error
	puts    int
}

func (f *faultyObjects) Put(ctx context.Context, key string, r io.Reader) error {
	f.mu.Lock()
	fail := f.failPut
	f.puts++
	f.mu.Unlock()
	if fail != nil {
		if err := fail(key); err != nil {
			return err
		}
	}
	return f.Addressable.Put(ctx, key, r)
}

func (f *faultyObjects) putCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.puts
}

// retryAtOnce is a backoff of zero: a failed step may run again at the next
// reconcile.
var retryAtOnce = workqueue.BackoffFunc(func(int) time.Duration { return 0 })
