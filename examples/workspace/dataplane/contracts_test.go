package dataplane_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/examples/workspace/archive"
	"github.com/tendhq/tend/examples/workspace/dataplane"
	"github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// lyingInstances reports success from Start without starting anything.
type lyingInstances struct {
	dataplane.InstanceController
	lie bool
}

func (l *lyingInstances) Start(ctx context.Context, id, image string) error {
	if l.lie {
		return nil
	}
	return l.InstanceController.Start(ctx, id, image)
}

// TestContract1CompletionIsObserved: an actuator's success is not
// completion; the phase moves only when the observed condition holds, in the
// same store write that records the observation.
func TestContract1CompletionIsObserved(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	liar := &lyingInstances{InstanceController: e.procs, lie: true}
	c, err := dataplane.New(dataplane.Config{Store: e.mem, Instances: liar, Storage: e.storage})
	if err != nil {
		t.Fatal(err)
	}
	e.ctrl = c
	e.drive("w1", dataplane.StateStandby, dataplane.Standby)
	w, err := c.Collection().Watch(ctx, e.get("w1").Revision)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	if _, err := c.SetState(ctx, "w1", dataplane.StateRunning); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := c.Reconcile(ctx, "w1"); err != nil {
			t.Fatal(err)
		}
	}
	ws := e.get("w1")
	if ws.Status.Phase != dataplane.Starting {
		t.Fatalf("phase %s after a start that reported success but started nothing; want STARTING", ws.Status.Phase)
	}
	if cond, ok := ws.Status.Condition(dataplane.CondContainerReady); !ok || cond.Status {
		t.Fatalf("container_ready = %+v, %v; want observed false", cond, ok)
	}

	liar.lie = false
	if err := liar.InstanceController.Start(ctx, "w1", "img"); err != nil { // the container comes up
		t.Fatal(err)
	}
	if err := e.reconcile("w1", 5); err != nil {
		t.Fatal(err)
	}
	if ws := e.get("w1"); ws.Status.Phase != dataplane.Running {
		t.Fatalf("phase %s, want RUNNING", ws.Status.Phase)
	}
	// Every write: RUNNING only ever together with container_ready = true,
	// and container_ready = true never written before the phase moved.
	end := e.get("w1").Revision
	for {
		ev, err := w.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		cond, _ := ev.Object.Status.Condition(dataplane.CondContainerReady)
		switch ev.Object.Status.Phase {
		case dataplane.Running:
			if !cond.Status {
				t.Fatalf("revision %d: RUNNING written without container_ready", ev.Revision)
			}
		case dataplane.Starting:
			if cond.Status {
				t.Fatalf("revision %d: container_ready written apart from the phase change", ev.Revision)
			}
		}
		if ev.Revision >= end {
			break
		}
	}
}

// invariantChecker fails the test when a container runs without its volume.
func invariantChecker(t *testing.T, e *env) func(string, string) {
	return func(method, id string) {
		ctx := context.Background()
		running, _ := e.procs.IsRunning(ctx, id)
		volume, _ := e.local.VolumeExists(ctx, id)
		if running && !volume {
			t.Errorf("after %s: container ws-%s runs without its volume", method, id)
		}
	}
}

// TestContract2ContainerNeedsVolume: the volume is provisioned before
// start, the container deleted before the volume, and a start whose volume is
// gone is refused (terminal) without creating a container.
func TestContract2ContainerNeedsVolume(t *testing.T) {
	e := newEnv(t)
	var order []string
	check := invariantChecker(t, e)
	e.instances.after = func(m, id string) { order = append(order, m); check(m, id) }
	e.storage.after = func(m, id string, err error) error { order = append(order, m); check(m, id); return err }

	e.drive("w1", dataplane.StateRunning, dataplane.Running)
	if _, err := e.ctrl.Delete(context.Background(), "w1"); err != nil {
		t.Fatal(err)
	}
	if err := e.reconcile("w1", 30); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ctrl.Get(context.Background(), "w1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleted workspace still stored: %v", err)
	}
	// Archive twice: the first call starts the archive job, the second
	// finds it exited.
	want := []string{"Provision", "Start", "Delete", "Archive", "Archive", "DeleteVolume", "Delete", "DeleteVolume"}
	if !slices.Equal(order, want) {
		t.Fatalf("actuator calls %v, want %v", order, want)
	}

	// The volume vanished behind the controller's back: no container.
	e.drive("w2", dataplane.StateStandby, dataplane.Standby)
	if err := os.RemoveAll(e.local.VolumeDir("w2")); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ctrl.SetState(context.Background(), "w2", dataplane.StateRunning); err != nil {
		t.Fatal(err)
	}
	if err := e.reconcile("w2", 10); !errors.Is(err, dataplane.ErrDataLoss) || !errors.Is(err, controller.ErrTerminal) {
		t.Fatalf("start without a volume: %v, want terminal ErrDataLoss", err)
	}
	if ws := e.get("w2"); ws.Status.Phase != dataplane.Error {
		t.Fatalf("phase %s, want ERROR", ws.Status.Phase)
	}
	if ok, _ := e.procs.IsRunning(context.Background(), "w2"); ok {
		t.Fatal("a container started without its volume")
	}
}

// lossyBackend fails the next status write after a step has run, as a crash
// between the step and the write would: the step runs again.
type lossyBackend struct {
	store.Backend
	drop *bool
}

func (l lossyBackend) UpdateStatus(ctx context.Context, d store.Document) (store.Document, error) {
	if *l.drop {
		*l.drop = false
		return store.Document{}, errInjected
	}
	return l.Backend.UpdateStatus(ctx, d)
}

// TestContract3ActuatorsIdempotent: every actuator runs again after its
// outcome was lost (a crash before the status write) and the workspace still
// converges with its data; start on a container that is not running cleans
// up and recreates it.
func TestContract3ActuatorsIdempotent(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	drop := false
	c, err := dataplane.New(dataplane.Config{Store: lossyBackend{e.mem, &drop}, Instances: e.instances, Storage: e.storage})
	if err != nil {
		t.Fatal(err)
	}
	e.ctrl = c
	ran := map[string]int{}
	after := func(m, _ string) { // lose the outcome of every other run of each actuator
		if ran[m]++; ran[m]%2 == 1 {
			drop = true
		}
	}
	e.instances.after = after
	e.storage.after = func(m, id string, err error) error {
		if !errors.Is(err, dataplane.ErrJobRunning) { // a job that runs has no outcome yet
			after(m, id)
		}
		return err
	}

	e.drive("w1", dataplane.StateRunning, dataplane.Running)
	if err := os.WriteFile(filepath.Join(e.local.VolumeDir("w1"), "kept.txt"), []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.drive("w1", dataplane.StateArchived, dataplane.Archived)
	e.drive("w1", dataplane.StateRunning, dataplane.Running)
	if b, _ := os.ReadFile(filepath.Join(e.local.VolumeDir("w1"), "kept.txt")); string(b) != "kept" {
		t.Fatalf("data after replayed steps: %q", b)
	}
	// Each step ended twice: once lost, once recorded.
	if n := ran["Archive"]; n != 2 {
		t.Errorf("Archive returned %d outcomes, want 2 (one lost)", n)
	}

	// A crashed container: start cleans up and recreates it.
	e.instances.after, e.storage.after = nil, nil
	e.drive("w1", dataplane.StateStandby, dataplane.Standby)
	if err := e.procs.Kill("w1"); err != nil {
		t.Fatal(err)
	}
	e.drive("w1", dataplane.StateRunning, dataplane.Running)
	if ok, _ := e.procs.IsRunning(ctx, "w1"); !ok {
		t.Fatal("container not running")
	}
}

// TestContract4OpIDStoredAndReused: op_id is stored before archive() is
// called and is the one every retry uses; the ARCHIVING crash table resumes
// correctly.
func TestContract4OpIDStoredAndReused(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	var seen []string
	e.storage.before = func(m, id string) error {
		if m != "Archive" {
			return nil
		}
		ws := e.get(id)
		if ws.Status.Operation == nil || ws.Status.Operation.Phase != dataplane.Archiving || ws.Status.Operation.ID == "" {
			t.Errorf("archive() called before op_id was stored: %+v", ws.Status.Operation)
			return nil
		}
		seen = append(seen, ws.Status.Operation.ID)
		return nil
	}
	e.objects.failPut = func(key string) error {
		if len(seen) < 3 {
			return errInjected
		}
		return nil
	}
	e.drive("w1", dataplane.StateStandby, dataplane.Standby)
	if _, err := e.ctrl.SetState(ctx, "w1", dataplane.StateArchived); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		_ = e.reconcile("w1", 1)
		e.restart()
	}
	if err := e.reconcile("w1", 10); err != nil {
		t.Fatal(err)
	}
	ws := e.get("w1")
	if ws.Status.Phase != dataplane.Archived || len(seen) < 3 {
		t.Fatalf("phase %s after %d archive calls", ws.Status.Phase, len(seen))
	}
	for _, id := range seen {
		if id != seen[0] {
			t.Fatalf("op_id changed across retries: %v", seen)
		}
	}
	if want := archive.Key("w1", seen[0]); ws.Status.ArchiveKey != want {
		t.Fatalf("archive_key %q, want %q", ws.Status.ArchiveKey, want)
	}
}

// TestArchivingCrashTable: a crash at each point of ARCHIVING resumes
// correctly after a restart.
func TestArchivingCrashTable(t *testing.T) {
	for _, tc := range []struct {
		name string
		// arm sets up the crash; it returns after the crash what is expected
		// of the resumed operation.
		arm            func(e *env)
		archiveAgain   bool // the resumed run calls archive() again
		uploadsOnRetry int  // objects uploaded by the resumed run
	}{
		{
			name: "during upload",
			arm: func(e *env) {
				e.objects.failPut = func(key string) error {
					if strings.HasSuffix(key, archive.MetaSuffix) {
						e.objects.failPut = nil
						return errInjected // the archive is up, its .meta not
					}
					return nil
				}
			},
			archiveAgain:   true,
			uploadsOnRetry: 2, // archive without .meta is incomplete: redone
		},
		{
			name: "after archive_key stored",
			arm: func(e *env) {
				e.storage.before = func(m, id string) error {
					if m == "DeleteVolume" {
						e.storage.before = nil
						return errInjected
					}
					return nil
				}
			},
			archiveAgain: false, uploadsOnRetry: 0, // only delete_volume runs
		},
		{
			name: "after volume deleted",
			arm: func(e *env) {
				e.storage.after = func(m, id string, err error) error {
					if m == "DeleteVolume" && err == nil {
						e.storage.after = nil
						return errInjected // deleted, but the crash lost the news
					}
					return err
				}
			},
			archiveAgain: false, uploadsOnRetry: 0, // only the commit
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t)
			e.drive("w1", dataplane.StateStandby, dataplane.Standby)
			if err := os.WriteFile(filepath.Join(e.local.VolumeDir("w1"), "work.txt"), []byte("work"), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := e.ctrl.SetState(ctx, "w1", dataplane.StateArchived); err != nil {
				t.Fatal(err)
			}
			tc.arm(e)
			if err := e.firstError("w1", 5); err == nil || !strings.Contains(err.Error(), errInjected.Error()) {
				t.Fatalf("crash not reached: %v", err)
			}
			crashed := e.get("w1").Status
			if crashed.Phase != dataplane.Archiving || crashed.OpID() == "" {
				t.Fatalf("after the crash: phase %s, op_id %q", crashed.Phase, crashed.OpID())
			}
			archives, puts := e.storage.count("Archive"), e.objects.putCount()

			e.restart()
			if err := e.reconcile("w1", 10); err != nil {
				t.Fatal(err)
			}
			ws := e.get("w1")
			if ws.Status.Phase != dataplane.Archived {
				t.Fatalf("phase %s, want ARCHIVED", ws.Status.Phase)
			}
			if again := e.storage.count("Archive") > archives; again != tc.archiveAgain {
				t.Errorf("archive() called again: %v, want %v", again, tc.archiveAgain)
			}
			if n := e.objects.putCount() - puts; n != tc.uploadsOnRetry {
				t.Errorf("%d uploads on retry, want %d", n, tc.uploadsOnRetry)
			}
			if want := archive.Key("w1", crashed.OpID()); ws.Status.ArchiveKey != want {
				t.Errorf("archive_key %q, want %q (same op_id)", ws.Status.ArchiveKey, want)
			}
			// The data survived: restore it.
			e.drive("w1", dataplane.StateStandby, dataplane.Standby)
			if b, _ := os.ReadFile(filepath.Join(e.local.VolumeDir("w1"), "work.txt")); string(b) != "work" {
				t.Fatalf("restored work.txt = %q", b)
			}
		})
	}
}

// TestContract5ArchiveKeyBeforeVolumeDeleted: when the volume is deleted,
// archive_key is already stored and its archive complete; a status that says
// otherwise never gets its volume deleted.
func TestContract5ArchiveKeyBeforeVolumeDeleted(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.storage.before = func(m, id string) error {
		if m != "DeleteVolume" {
			return nil
		}
		st := e.get(id).Status
		if st.Phase == dataplane.Archiving {
			if st.ArchiveKey != archive.Key(id, st.OpID()) {
				t.Errorf("volume deleted before archive_key was stored: %q", st.ArchiveKey)
			}
			if ok, _ := e.local.ArchiveReady(ctx, st.ArchiveKey); !ok {
				t.Errorf("volume deleted before its archive was complete")
			}
		}
		return nil
	}
	e.drive("w1", dataplane.StateStandby, dataplane.Standby)
	e.drive("w1", dataplane.StateArchived, dataplane.Archived)
	if e.storage.count("DeleteVolume") != 1 {
		t.Fatal("delete_volume did not run")
	}

	// A checkpoint that claims the archive step done without archive_key
	// (a corrupted status): the volume is kept and the workspace held.
	e.drive("w2", dataplane.StateStandby, dataplane.Standby)
	ws := e.get("w2")
	ws.Status.Phase = dataplane.Archiving
	ws.Status.Operation = &statemachine.Operation[dataplane.Phase]{ID: "opX", Phase: dataplane.Archiving, From: dataplane.Standby,
		Done: []string{dataplane.StepArchive}}
	ws.Spec.State = dataplane.StateArchived
	if _, err := e.ctrl.Collection().UpdateStatus(ctx, ws); err != nil {
		t.Fatal(err)
	}
	if err := e.reconcile("w2", 5); !errors.Is(err, dataplane.ErrDataLoss) {
		t.Fatalf("reconcile: %v, want ErrDataLoss", err)
	}
	if ok, _ := e.local.VolumeExists(ctx, "w2"); !ok {
		t.Fatal("volume deleted without a stored archive_key")
	}
	if ph := e.get("w2").Status.Phase; ph != dataplane.Error {
		t.Fatalf("phase %s, want ERROR", ph)
	}
}

// TestRestoreTamperedArchiveEndsInError: a checksum mismatch moves the
// workspace to ERROR and leaves the volume untouched.
func TestRestoreTamperedArchiveEndsInError(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.drive("w1", dataplane.StateStandby, dataplane.Standby)
	_ = os.WriteFile(filepath.Join(e.local.VolumeDir("w1"), "a.txt"), []byte("archived"), 0o644)
	e.drive("w1", dataplane.StateArchived, dataplane.Archived)
	key := e.get("w1").Status.ArchiveKey

	r, err := e.objects.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(r)
	r.Close()
	body[len(body)/2] ^= 0x01
	if err := e.objects.Addressable.Put(ctx, key, bytes.NewReader(body)); err != nil {
		t.Fatal(err)
	}
	// What RESTORING's provision step will find: a volume with local data.
	if err := e.local.Provision(ctx, "w1"); err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(e.local.VolumeDir("w1"), "local.txt"), []byte("local"), 0o644)

	if _, err := e.ctrl.SetState(ctx, "w1", dataplane.StateStandby); err != nil {
		t.Fatal(err)
	}
	// The job's error reaches the controller as its exit code and message.
	if err := e.reconcile("w1", 10); !errors.Is(err, dataplane.ErrJobFailed) || !errors.Is(err, controller.ErrTerminal) ||
		!strings.Contains(err.Error(), archive.ErrChecksum.Error()) {
		t.Fatalf("reconcile: %v, want a terminal job failure naming the checksum mismatch", err)
	}
	ws := e.get("w1")
	if ws.Status.Phase != dataplane.Error || ws.Status.Failure == nil || !strings.Contains(ws.Status.Failure.Reason, "checksum") {
		t.Fatalf("phase %s, failure %+v; want ERROR with the checksum failure", ws.Status.Phase, ws.Status.Failure)
	}
	entries, _ := os.ReadDir(e.local.VolumeDir("w1"))
	if len(entries) != 1 || entries[0].Name() != "local.txt" {
		t.Fatalf("volume changed: %v", entries)
	}
	if m, _ := e.local.RestoreMarker(ctx, "w1"); m != "" {
		t.Fatalf("restore marker %q set by a failed restore", m)
	}
}

// TestContract8ErrorsClassified: transient failures are retried (the
// workspace stays in its operation, attempts counted) and then succeed;
// terminal ones move the workspace to ERROR for an operator, where only
// deletion is accepted.
func TestContract8ErrorsClassified(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.drive("w1", dataplane.StateStandby, dataplane.Standby)
	failures := 3
	e.objects.failPut = func(string) error {
		if failures > 0 {
			failures--
			return fmt.Errorf("network: %w", errInjected)
		}
		return nil
	}
	if _, err := e.ctrl.SetState(ctx, "w1", dataplane.StateArchived); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		err := e.firstError("w1", 5)
		if err == nil || errors.Is(err, controller.ErrTerminal) {
			t.Fatalf("attempt %d: %v, want a transient error", i, err)
		}
		st := e.get("w1").Status
		if st.Phase != dataplane.Archiving || st.Operation.Attempts != i || !strings.Contains(st.Operation.LastError, "network") {
			t.Fatalf("attempt %d: phase %s, operation %+v", i, st.Phase, st.Operation)
		}
	}
	if err := e.reconcile("w1", 10); err != nil {
		t.Fatal(err)
	}
	if ph := e.get("w1").Status.Phase; ph != dataplane.Archived {
		t.Fatalf("phase %s after transient failures, want ARCHIVED", ph)
	}

	// Terminal: the archive is gone (data loss).
	key := e.get("w1").Status.ArchiveKey
	_ = e.objects.Delete(ctx, key)
	if _, err := e.ctrl.SetState(ctx, "w1", dataplane.StateStandby); err != nil {
		t.Fatal(err)
	}
	if err := e.reconcile("w1", 10); !errors.Is(err, controller.ErrTerminal) {
		t.Fatalf("restore of a lost archive: %v, want terminal", err)
	}
	st := e.get("w1").Status
	if st.Phase != dataplane.Error || st.Failure == nil || st.Failure.Operation.Phase != dataplane.Restoring {
		t.Fatalf("phase %s, failure %+v", st.Phase, st.Failure)
	}
	// Held for an operator: other intents wait, deletion proceeds.
	if _, err := e.ctrl.SetState(ctx, "w1", dataplane.StateRunning); err != nil {
		t.Fatal(err)
	}
	if err := e.reconcile("w1", 3); err != nil || e.get("w1").Status.Phase != dataplane.Error {
		t.Fatalf("ERROR workspace moved on intent RUNNING: %v", err)
	}
	if _, err := e.ctrl.Delete(ctx, "w1"); err != nil {
		t.Fatal(err)
	}
	if err := e.reconcile("w1", 10); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ctrl.Get(ctx, "w1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleted ERROR workspace still stored: %v", err)
	}
}

// TestKilledContainerIsRestarted: a RUNNING workspace whose container dies
// behind the controller's back drifts from its health (container_ready), and
// STARTING makes the container again; the intent is never touched.
func TestKilledContainerIsRestarted(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.drive("w1", dataplane.StateRunning, dataplane.Running)
	if err := e.procs.Kill("w1"); err != nil {
		t.Fatal(err)
	}
	starts := e.instances.count("Start")
	if err := e.reconcile("w1", 20); err != nil {
		t.Fatal(err)
	}
	ws := e.get("w1")
	if ok, _ := e.procs.IsRunning(ctx, "w1"); !ok || ws.Status.Phase != dataplane.Running || ws.Spec.State != dataplane.StateRunning {
		t.Fatalf("after the kill: running %v, phase %s, intent %s", ok, ws.Status.Phase, ws.Spec.State)
	}
	if n := e.instances.count("Start") - starts; n != 1 {
		t.Errorf("start ran %d times to repair the drift, want 1", n)
	}
}
