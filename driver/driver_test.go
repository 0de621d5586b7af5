package driver_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tendhq/tend/driver"

	"github.com/tendhq/tend/controller"
	sm "github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
	"github.com/tendhq/tend/workqueue"
)

// TestDriverLifecycle drives one gateway through every intent of its machine and
// checks the phase, the steps run, the operation ids, a step's output and
// that the final pair removes the document.
func TestDriverLifecycle(t *testing.T) {
	f := newGWFixture(t)
	d := f.driver(t, f.config())
	uid := f.create(t, "team-a/gw-1", gwRunning).UID
	ctx := context.Background()

	steps := func(lists ...[]string) []string { return slices.Concat(lists...) }
	// The first operation's id is the document's UID; NewOperationID
	// names the others.
	for _, tc := range []struct {
		intent    gwState
		wantPhase gwPhase // "" when the document must be gone
		wantSteps []string
		wantOps   []string
	}{
		{gwRunning, phStarted, steps(creatingSteps, startingSteps), []string{uid, uid, uid, "op-1", "op-1", "op-1"}},
		{gwStopped, phStopped, stoppingSteps, []string{"op-2", "op-2", "op-2"}},
		{gwRunning, phStarted, startingSteps, []string{"op-3", "op-3", "op-3"}},
		{gwRestarting, phStarted, steps(stoppingSteps, startingSteps), []string{"op-4", "op-4", "op-4", "op-5", "op-5", "op-5"}},
		{gwDeleted, "", deletingSteps, slices.Repeat([]string{"op-6"}, len(deletingSteps))},
	} {
		before := len(f.world.stepsRun("team-a/gw-1"))
		if _, err := d.UpdateSpec(ctx, "team-a/gw-1", func(s *gwSpec) { s.State, s.Restart = tc.intent, "r-"+string(tc.intent) }); err != nil {
			t.Fatalf("intent %s: %v", tc.intent, err)
		}
		if res := settle(t, d, "team-a/gw-1"); res != (controller.Result{}) {
			t.Fatalf("intent %s: result %+v, want done", tc.intent, res)
		}
		if got := f.world.stepsRun("team-a/gw-1")[before:]; !slices.Equal(got, tc.wantSteps) {
			t.Errorf("intent %s: steps %v, want %v", tc.intent, got, tc.wantSteps)
		}
		if got := f.world.opIDs("team-a/gw-1")[before:]; !slices.Equal(got, tc.wantOps) {
			t.Errorf("intent %s: operation ids %v, want %v", tc.intent, got, tc.wantOps)
		}
		obj, err := f.coll.Get(ctx, "team-a/gw-1")
		if tc.wantPhase == "" {
			if !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("intent %s: document still stored (err %v): %+v", tc.intent, err, obj)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if obj.Status.Phase != tc.wantPhase || obj.Status.Operation != nil || obj.Status.Target != tc.intent {
			t.Errorf("intent %s: status %+v, want phase %s, no operation", tc.intent, obj.Status.Status, tc.wantPhase)
		}
		if !obj.HasFinalizer(driver.DefaultFinalizer) {
			t.Errorf("intent %s: finalizer missing: %v", tc.intent, obj.Finalizers)
		}
		if obj.Status.Namespace != "ns-"+uid {
			t.Errorf("step output: namespace %q, want ns-%s", obj.Status.Namespace, uid)
		}
	}
	if r := f.world.resources("team-a/gw-1"); r.namespace || r.database || r.domain || r.deployment || r.service || r.routes {
		t.Errorf("resources left after the document was removed: %+v", r)
	}
}

// TestDriverWaitsForCompletion checks that an operation whose steps are done
// waits for its completion, with the conditions observed and written.
func TestDriverWaitsForCompletion(t *testing.T) {
	f := newGWFixture(t)
	f.world.startDelay = 1 << 62 // the Deployment never becomes available
	cfg := f.config()
	cfg.WaitInterval = 7e9
	d := f.driver(t, cfg)
	f.create(t, "gw", gwRunning)
	res, err := d.Reconcile(context.Background(), "gw")
	if err != nil || res.RequeueAfter != 100*time.Millisecond { // the first wait is short
		t.Fatalf("reconcile = %+v, %v; want requeue after 100ms", res, err)
	}
	st := f.get(t, "gw").Status
	c, ok := st.Condition("deployment_available")
	if st.Phase != phStarting || !ok || c.Status || len(st.Operation.Done) != len(startingSteps) {
		t.Errorf("status %+v, want Starting, every step done, deployment_available observed false", st.Status)
	}
	rev := f.get(t, "gw").Revision
	if _, err := d.Reconcile(context.Background(), "gw"); err != nil {
		t.Fatal(err)
	}
	if got := f.get(t, "gw").Revision; got != rev {
		t.Errorf("waiting again wrote the unchanged status: revision %d, was %d", got, rev)
	}
}

// TestDriverStepFailureKeepsOperationID checks that a failed step is recorded
// (attempts and error), retried with the same operation id, and that the id
// is stored before the first step runs (the first operation's, the
// document's UID, is stored with the document).
func TestDriverStepFailureKeepsOperationID(t *testing.T) {
	f := newGWFixture(t)
	failures := 2
	var stored []string // the operation id stored when each step ran
	f.world.hook = func(r stepRun) (sm.Outcome, error) {
		doc, err := f.mem.Get(context.Background(), "ApiGateway", r.key)
		if err != nil {
			t.Error(err)
		}
		obj, err := f.coll.Decode(doc)
		if id := runsUnder(obj); err != nil || id == "" {
			t.Errorf("step %s ran with no operation stored (%v)", r.step, err)
		} else {
			stored = append(stored, id)
		}
		if r.step == "create_database" && failures > 0 {
			failures--
			return 0, errInjected
		}
		return 0, nil
	}
	cfg := f.config()
	cfg.Backoff = workqueue.BackoffFunc(func(int) time.Duration { return 0 }) // retry at once
	d := f.driver(t, cfg)
	uid := f.create(t, "gw", gwRunning).UID
	for attempt := 1; attempt <= 2; attempt++ {
		_, err := d.Reconcile(context.Background(), "gw")
		if !errors.Is(err, errInjected) || errors.Is(err, controller.ErrTerminal) {
			t.Fatalf("attempt %d: err %v, want the injected error, not terminal", attempt, err)
		}
		op := f.get(t, "gw").Status.Operation
		if op == nil || op.ID != uid || op.Attempts != attempt || !strings.Contains(op.LastError, "injected") ||
			!slices.Equal(op.Done, []string{"create_namespace"}) {
			t.Fatalf("attempt %d: operation %+v", attempt, op)
		}
	}
	settle(t, d, "gw")
	if got := f.get(t, "gw").Status.Phase; got != phStarted {
		t.Fatalf("phase %s, want Started", got)
	}
	if got, want := f.world.stepsRun("gw"), slices.Concat(creatingSteps, startingSteps); !slices.Equal(got, want) {
		t.Errorf("steps done %v, want %v", got, want)
	}
	// Every attempt, failed or not, ran with its operation's id stored.
	want := []string{uid, uid, uid, uid, uid, "op-1", "op-1", "op-1"}
	if !slices.Equal(stored, want) {
		t.Errorf("operation ids stored when each attempt ran %v, want %v", stored, want)
	}
	if ops := f.world.opIDs("gw"); !slices.Equal(ops, []string{uid, uid, uid, "op-1", "op-1", "op-1"}) {
		t.Errorf("operation ids given to the steps %v", ops)
	}
}

// TestDriverRefusal checks that UpdateSpec refuses an intent past the
// point of no return with an error naming the phase, and that an intent
// written around it is ignored while the deletion finishes.
func TestDriverRefusal(t *testing.T) {
	f := newGWFixture(t)
	d := f.driver(t, f.config())
	f.create(t, "gw", gwRunning)
	settle(t, d, "gw")
	f.world.mu.Lock()
	f.world.of("gw").triggers = 2
	f.world.mu.Unlock()

	ctx := context.Background()
	if _, err := d.UpdateSpec(ctx, "gw", func(s *gwSpec) { s.State = gwDeleted }); err != nil {
		t.Fatal(err)
	}
	res, err := d.Reconcile(ctx, "gw")
	if err != nil || res.RequeueAfter != driver.DefaultProgressInterval {
		t.Fatalf("reconcile = %+v, %v; want a progressed step queued again", res, err)
	}
	before := f.get(t, "gw")
	_, err = d.UpdateSpec(ctx, "gw", func(s *gwSpec) { s.State = gwRunning })
	var refused *sm.RefusalError[gwState, gwPhase]
	if !errors.Is(err, sm.ErrIntentRefused) || !errors.As(err, &refused) || refused.Phase != phDeleting ||
		!strings.Contains(err.Error(), "Deleting") {
		t.Fatalf("UpdateSpec(Running) in Deleting: %v", err)
	}
	if after := f.get(t, "gw"); after.Revision != before.Revision {
		t.Fatalf("a refused intent was written")
	}

	// Written around the check, the intent is ignored: the deletion goes on.
	before.Spec.State = gwRunning
	if _, err := f.coll.UpdateSpec(ctx, before); err != nil {
		t.Fatal(err)
	}
	settle(t, d, "gw")
	if _, err := f.coll.Get(ctx, "gw"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("document not removed after Deleting: %v", err)
	}
}

// TestDriverDeleteThroughStore checks that deleting a document through the
// store drives it to the final pair, runs the cleanup steps and removes it.
func TestDriverDeleteThroughStore(t *testing.T) {
	for _, tc := range []struct {
		name   string
		intent gwState
		steps  []string
	}{
		{"running", gwRunning, deletingSteps},
		{"stopped", gwStopped, deletingSteps},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newGWFixture(t)
			d := f.driver(t, f.config())
			f.create(t, "gw", tc.intent)
			settle(t, d, "gw")
			before := len(f.world.stepsRun("gw"))
			ctx := context.Background()
			if err := f.coll.Delete(ctx, "gw", store.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			if obj := f.get(t, "gw"); !obj.Terminating() {
				t.Fatal("the finalizer did not keep the document")
			}
			settle(t, d, "gw")
			if _, err := f.coll.Get(ctx, "gw"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("document still stored: %v", err)
			}
			if got := f.world.stepsRun("gw")[before:]; !slices.Equal(got, tc.steps) {
				t.Errorf("steps %v, want %v", got, tc.steps)
			}
		})
	}
}

// TestDriverOtherFinalizerKeepsDocument checks that the driver removes only
// its own finalizer and leaves a Terminating document of another
// controller alone.
func TestDriverOtherFinalizerKeepsDocument(t *testing.T) {
	f := newGWFixture(t)
	d := f.driver(t, f.config())
	ctx := context.Background()
	obj, err := f.coll.Create(ctx, &gwObject{Meta: store.Meta{Key: "gw", Finalizers: []string{"example.com/other"}},
		Spec: gwSpec{State: gwDeleted}})
	if err != nil {
		t.Fatal(err)
	}
	settle(t, d, "gw")
	obj = f.get(t, "gw")
	if !obj.Terminating() || !slices.Equal(obj.Finalizers, []string{"example.com/other"}) {
		t.Fatalf("document %+v: want Terminating with only the other finalizer", obj.Meta)
	}
	rev := obj.Revision
	settle(t, d, "gw")
	if got := f.get(t, "gw").Revision; got != rev {
		t.Errorf("the driver wrote a document left to another finalizer")
	}
}

// TestDriverConflicts checks that a status write that conflicts with a spec
// write reads the document again and goes on, and that a conflict outlasting
// ConflictRetries is returned.
func TestDriverConflicts(t *testing.T) {
	for _, tc := range []struct {
		name      string
		conflicts int
		intent    gwState // the intent the conflicting writer sets
		wantErr   bool
		wantPhase gwPhase
	}{
		{"one", 1, gwRunning, false, phStarted},
		{"at the bound", 3, gwRunning, false, phStarted},
		{"intent changed meanwhile", 2, gwStopped, false, phCreated},
		// Each status write that holds a step's outcome is retried on the
		// document as it now is before the document is read again.
		{"beyond the bound", 100, gwRunning, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := newGWFixture(t).mem
			cb := &conflictBackend{Backend: mem, left: tc.conflicts, intent: tc.intent}
			f := newGWFixtureOn(t, mem, cb)
			cb.coll = f.coll
			cfg := f.config()
			cfg.ConflictRetries = 3
			d := f.driver(t, cfg)
			f.create(t, "gw", gwRunning)
			// The first write adds the finalizer; the conflicts hit the
			// status writes after it.
			res, err := d.Reconcile(context.Background(), "gw")
			if tc.wantErr {
				if !errors.Is(err, store.ErrConflict) {
					t.Fatalf("reconcile = %+v, %v; want a conflict", res, err)
				}
				return
			}
			if err != nil || res != (controller.Result{}) {
				t.Fatalf("reconcile = %+v, %v; want done", res, err)
			}
			if got := f.get(t, "gw").Status.Phase; got != tc.wantPhase {
				t.Errorf("phase %s, want %s", got, tc.wantPhase)
			}
			if cb.left != 0 {
				t.Errorf("%d conflicts not injected", cb.left)
			}
		})
	}
}

// conflictBackend writes the spec of the document (setting intent) before
// each of the first left status writes, so that they conflict.
type conflictBackend struct {
	store.Backend
	coll   *store.Collection[gwSpec, gwStatus]
	left   int
	intent gwState
}

func (b *conflictBackend) UpdateStatus(ctx context.Context, doc store.Document) (store.Document, error) {
	if b.left > 0 {
		b.left--
		obj, err := b.coll.Get(ctx, doc.Meta.Key)
		if err != nil {
			return store.Document{}, err
		}
		obj.Spec.State = b.intent
		obj.Labels = map[string]string{"touched": strconv.Itoa(b.left)}
		if _, err := b.coll.UpdateSpec(ctx, obj); err != nil {
			return store.Document{}, err
		}
	}
	return b.Backend.UpdateStatus(ctx, doc)
}

// TestNewDriverValidates checks that New names every missing or unknown
// action and observer and every bad value.
func TestNewDriverValidates(t *testing.T) {
	f := newGWFixture(t)
	for _, tc := range []struct {
		name   string
		change func(*driver.Config[gwSpec, gwStatus])
		want   []string
	}{
		{"missing step", func(c *driver.Config[gwSpec, gwStatus]) { delete(c.Steps, "create_service") },
			[]string{`step "create_service" has no action`}},
		{"unknown step", func(c *driver.Config[gwSpec, gwStatus]) { c.Steps["launch"] = c.Steps["create_service"] },
			[]string{`action "launch" is not a step`}},
		{"missing observer", func(c *driver.Config[gwSpec, gwStatus]) { delete(c.Observers, "database_ready") },
			[]string{`condition "database_ready" has no observer`}},
		{"unknown observer", func(c *driver.Config[gwSpec, gwStatus]) {
			c.Observers["weather"] = c.Observers["database_ready"]
		}, []string{`observer "weather"`}},
		{"bad finalizer", func(c *driver.Config[gwSpec, gwStatus]) { c.Finalizer = "cleanup" },
			[]string{"finalizer \"cleanup\""}},
		{"negative wait", func(c *driver.Config[gwSpec, gwStatus]) { c.WaitInterval = -1 }, []string{"WaitInterval"}},
		{"negative progress", func(c *driver.Config[gwSpec, gwStatus]) { c.ProgressInterval = -1 }, []string{"ProgressInterval"}},
		{"negative retries", func(c *driver.Config[gwSpec, gwStatus]) { c.ConflictRetries = -1 }, []string{"ConflictRetries"}},
		{"two at once", func(c *driver.Config[gwSpec, gwStatus]) {
			delete(c.Steps, "create_service")
			delete(c.Observers, "database_ready")
		}, []string{"create_service", "database_ready"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := f.config()
			tc.change(&cfg)
			_, err := driver.New(f.coll, f.m, cfg)
			if !errors.Is(err, driver.ErrInvalidConfig) {
				t.Fatalf("err %v, want ErrInvalidConfig", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
	if _, err := driver.New(f.coll, f.m, f.config()); err != nil {
		t.Errorf("valid config: %v", err)
	}
}

// TestDriverSettle checks that Settle writes the intent of every selected
// document and reports Progressed until each has settled on it, and that
// Retire with no set deletes them and reports Done once they are gone.
func TestDriverSettle(t *testing.T) {
	f := newGWFixture(t)
	d := f.driver(t, f.config())
	ctx := context.Background()
	for _, key := range []string{"a", "b"} {
		f.create(t, key, gwRunning)
		settle(t, d, key)
	}
	stop := func(s *gwSpec) { s.State = gwStopped }
	if out, err := d.Settle(ctx, store.ListOptions{}, stop); out != sm.Progressed || err != nil {
		t.Fatalf("Settle before reconciling = %v, %v; want progressed", out, err)
	}
	if got := f.get(t, "b").Spec.State; got != gwStopped {
		t.Fatalf("intent of b %s, want Stopped", got)
	}
	settle(t, d, "a")
	if out, err := d.Settle(ctx, store.ListOptions{}, stop); out != sm.Progressed || err != nil {
		t.Fatalf("Settle with b unsettled = %v, %v; want progressed", out, err)
	}
	settle(t, d, "b")
	if out, err := d.Settle(ctx, store.ListOptions{}, stop); out != sm.Done || err != nil {
		t.Fatalf("Settle once both stopped = %v, %v; want done", out, err)
	}

	if out, err := d.Retire(ctx, store.ListOptions{}, nil); out != sm.Progressed || err != nil {
		t.Fatalf("Retire = %v, %v; want progressed", out, err)
	}
	settle(t, d, "a")
	settle(t, d, "b")
	if out, err := d.Retire(ctx, store.ListOptions{}, nil); out != sm.Done || err != nil {
		t.Fatalf("Retire once both are gone = %v, %v; want done", out, err)
	}
}

// A Status without the machine's part is refused when the driver is built,
// with an error that says what to embed.
func TestNewDriverNeedsMachineStatus(t *testing.T) {
	type bareStatus struct{ Endpoint string }
	f := newGWFixture(t)
	coll, err := store.NewCollection[gwSpec, bareStatus](f.mem, "ApiGateway", store.CollectionConfig{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = driver.New(coll, f.m, driver.Config[gwSpec, bareStatus]{})
	if !errors.Is(err, driver.ErrInvalidConfig) || !strings.Contains(err.Error(), "embed statemachine.Status[") {
		t.Fatalf("err %v, want ErrInvalidConfig naming the status to embed", err)
	}
}
