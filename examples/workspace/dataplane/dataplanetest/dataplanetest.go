// Package dataplanetest holds the test mechanics every workspace backend
// shares: a Driver that runs the WorkspaceController over a memory store,
// unique workspace ids, the cleanup of what a test left behind and the
// idempotent archive round of a StorageProvider.
package dataplanetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/examples/workspace/archive"
	"github.com/tendhq/tend/examples/workspace/dataplane"
	"github.com/tendhq/tend/examples/workspace/storagejob"
	"github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
	"github.com/tendhq/tend/workqueue"
)

// settleTimeout bounds how long Reconcile, and the waits for a storage job,
// go on before they give up.
const settleTimeout = 2 * time.Minute

// pollInterval is how long Reconcile, and the waits for a storage job, wait
// before they look again.
const pollInterval = 20 * time.Millisecond

// Config configures a Driver.
type Config struct {
	// ID is the workspace the Driver drives. Required.
	ID string
	// Image is the image of the workspace's container. Required.
	Image string
	// Instances runs the workspace's container. Required.
	Instances dataplane.InstanceController
	// Storage keeps the workspace's volume. Required.
	Storage dataplane.StorageProvider
}

// Driver drives one workspace with a WorkspaceController over a memory
// store, failing its test on any error.
type Driver struct {
	t    *testing.T
	id   string
	img  string
	ctrl *dataplane.Controller
}

// NewDriver returns a Driver of workspace cfg.ID whose operation ids are
// op1, op2, ... It fails t when the controller cannot be built.
func NewDriver(t *testing.T, cfg Config) *Driver {
	t.Helper()
	mem, err := memory.New(memory.Config{Kinds: []string{dataplane.Kind}})
	if err != nil {
		t.Fatal(err)
	}
	ops := 0
	ctrl, err := dataplane.New(dataplane.Config{
		Store: mem, Instances: cfg.Instances, Storage: cfg.Storage,
		NewOperationID: func() string { ops++; return fmt.Sprintf("op%d", ops) },
		// The tests drive retries one reconcile at a time.
		Backoff: workqueue.BackoffFunc(func(int) time.Duration { return 0 }),
	})
	if err != nil {
		t.Fatal(err)
	}
	return &Driver{t: t, id: cfg.ID, img: cfg.Image, ctrl: ctrl}
}

// Reconcile runs reconciles of the workspace until it has settled: until
// one wants nothing more, or its machine has nothing to do (a settled phase
// that the controller only watches over, or Fault holding for an operator).
// It pauses briefly between reconciles that wait (for a condition, for a
// storage job to exit) and fails the test after two minutes.
func (d *Driver) Reconcile() {
	d.t.Helper()
	ctx := context.Background()
	var ws *dataplane.Workspace
	for deadline := time.Now().Add(settleTimeout); time.Now().Before(deadline); {
		res, err := d.ctrl.Reconcile(ctx, d.id)
		if err != nil {
			d.t.Fatalf("reconcile: %v", err)
		}
		if res.RequeueAfter == 0 {
			return
		}
		if ws, err = d.ctrl.Get(ctx, d.id); err != nil {
			d.t.Fatal(err)
		}
		dec, err := d.ctrl.Machine().Decide(ws.Spec.State, ws.Status.Status, time.Now())
		if err != nil {
			d.t.Fatal(err)
		}
		if dec.Action == statemachine.Nothing || dec.Action == statemachine.Hold {
			return
		}
		time.Sleep(min(res.RequeueAfter, pollInterval))
	}
	d.t.Fatalf("workspace %s not settled after %v: state %s, phase %s, operation %+v",
		d.id, settleTimeout, ws.Spec.State, ws.Status.Phase, ws.Status.Operation)
}

// Exited calls f until it returns anything but an error matching
// dataplane.ErrJobRunning: until the storage job an Archive or a Restore
// started has exited and the call returns its result. It fails the test
// after two minutes.
func Exited[T any](t *testing.T, f func() (T, error)) (T, error) {
	t.Helper()
	for deadline := time.Now().Add(settleTimeout); ; {
		v, err := f()
		if !errors.Is(err, dataplane.ErrJobRunning) {
			return v, err
		}
		if time.Now().After(deadline) {
			t.Fatalf("storage job still running after %v: %v", settleTimeout, err)
		}
		time.Sleep(pollInterval)
	}
}

// Drive creates the workspace with state s, or sets its state to s when it
// exists, reconciles until settled and fails the test unless its phase is
// then want. It returns the workspace.
func (d *Driver) Drive(s dataplane.State, want dataplane.Phase) *dataplane.Workspace {
	d.t.Helper()
	ctx := context.Background()
	if _, err := d.ctrl.Get(ctx, d.id); errors.Is(err, store.ErrNotFound) {
		_, err = d.ctrl.Create(ctx, d.id, dataplane.Spec{State: s, Image: d.img})
		if err != nil {
			d.t.Fatal(err)
		}
	} else if _, err := d.ctrl.SetState(ctx, d.id, s); err != nil {
		d.t.Fatal(err)
	}
	d.Reconcile()
	ws, err := d.ctrl.Get(ctx, d.id)
	if err != nil {
		d.t.Fatal(err)
	}
	if ws.Status.Phase != want {
		d.t.Fatalf("phase %s, want %s", ws.Status.Phase, want)
	}
	return ws
}

// Delete deletes the workspace, reconciles until settled and fails the test
// unless the workspace is then gone from the store.
func (d *Driver) Delete() {
	d.t.Helper()
	ctx := context.Background()
	if _, err := d.ctrl.Delete(ctx, d.id); err != nil {
		d.t.Fatal(err)
	}
	d.Reconcile()
	if _, err := d.ctrl.Get(ctx, d.id); !errors.Is(err, store.ErrNotFound) {
		d.t.Fatalf("deleted workspace still stored: %v", err)
	}
}

// WorkspaceID returns an id no earlier run left anything under.
func WorkspaceID() string {
	return fmt.Sprintf("t%d", time.Now().UnixNano())
}

// Cleanup deletes workspace id's container and volume when t ends,
// reporting any error.
func Cleanup(t *testing.T, id string, in dataplane.InstanceController, st dataplane.StorageProvider) {
	t.Helper()
	t.Cleanup(func() {
		ctx := context.Background()
		if err := in.Delete(ctx, id); err != nil {
			t.Error(err)
		}
		if err := st.DeleteVolume(ctx, id); err != nil {
			t.Error(err)
		}
	})
}

// ArchiveTwice writes src/main.go into workspace id's provisioned volume
// (whose files file(name) locates on this host), provisions again (which
// must keep the data), archives twice under op1 (both must return the same
// key) and checks the archive is ready. It returns the archive key.
func ArchiveTwice(t *testing.T, st dataplane.StorageProvider, id string, file func(name string) string) string {
	t.Helper()
	ctx := context.Background()
	if err := os.MkdirAll(file("src"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file("src/main.go"), []byte("package main"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Provisioning again keeps the data.
	if err := st.Provision(ctx, id); err != nil {
		t.Fatal(err)
	}
	var key string
	for range 2 {
		k, err := Exited(t, func() (string, error) { return st.Archive(ctx, id, "op1") })
		if err != nil {
			t.Fatal(err)
		}
		if key != "" && k != key {
			t.Fatalf("Archive keys differ: %s, %s", key, k)
		}
		key = k
	}
	if ok, err := st.ArchiveReady(ctx, key); !ok || err != nil {
		t.Fatalf("ArchiveReady = %v, %v", ok, err)
	}
	return key
}

// StartArchiveJob provisions workspace id's volume, writes a file into it
// (file(name) locates it on this host) and asks for its archive under op1,
// which must start the archive's storage job and report it running. It
// returns the archive's key and the job's name.
func StartArchiveJob(t *testing.T, st dataplane.StorageProvider, id string, file func(name string) string) (key, job string) {
	t.Helper()
	ctx := context.Background()
	if err := st.Provision(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file("a.txt"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Archive(ctx, id, "op1"); !errors.Is(err, dataplane.ErrJobRunning) {
		t.Fatalf("first Archive: %v, want ErrJobRunning", err)
	}
	key = archive.Key(id, "op1")
	return key, dataplane.JobName(id, storagejob.Archive, key)
}

// RestoreTwice provisions workspace id's volume anew (its restore marker
// must be empty), restores it twice from the archive under key (both must
// return key as the marker) and checks the volume's marker is then key.
func RestoreTwice(t *testing.T, st dataplane.StorageProvider, id, key string) {
	t.Helper()
	ctx := context.Background()
	if err := st.Provision(ctx, id); err != nil {
		t.Fatal(err)
	}
	if m, err := st.RestoreMarker(ctx, id); m != "" || err != nil {
		t.Fatalf("marker of a new volume = %q, %v", m, err)
	}
	for range 2 {
		m, err := Exited(t, func() (string, error) { return st.Restore(ctx, id, key) })
		if err != nil || m != key {
			t.Fatalf("Restore = %q, %v", m, err)
		}
	}
	if m, err := st.RestoreMarker(ctx, id); m != key || err != nil {
		t.Fatalf("RestoreMarker = %q, %v; want %q", m, err, key)
	}
}

// CheckRestoredThenDelete checks that workspace id's restored volume (whose
// files file(name) locates on this host) holds the src/main.go ArchiveTwice
// wrote, that a restore from a missing archive fails terminally and leaves
// no restore marker, then deletes the volume twice.
func CheckRestoredThenDelete(t *testing.T, st dataplane.StorageProvider, id string, file func(name string) string) {
	t.Helper()
	ctx := context.Background()
	if b, err := os.ReadFile(file("src/main.go")); string(b) != "package main" {
		t.Fatalf("restored file = %q, %v", b, err)
	}
	if _, err := Exited(t, func() (string, error) { return st.Restore(ctx, id, archive.Key(id, "nope")) }); !errors.Is(err, controller.ErrTerminal) {
		t.Fatalf("Restore of a missing archive: %v, want terminal", err)
	}
	if m, _ := st.RestoreMarker(ctx, id); m != "" {
		t.Fatalf("a failed restore left the marker %q", m)
	}
	for range 2 {
		if err := st.DeleteVolume(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
}
