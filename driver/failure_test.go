package driver_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tendhq/tend/driver"
	"github.com/tendhq/tend/internal/metrictest"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tendhq/tend/controller"
	sm "github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// These tests run the real driver under a real controller, fed by the
// driver's own source over the memory store, in fake time: what a user runs,
// with faults that never heal and intents that change at the worst moment.

// schedule is the default backoff: 5 ms, doubling, up to 1000 s.
func schedule(n int) time.Duration {
	return min(5*time.Millisecond<<(n-1), 1000*time.Second)
}

// allowed returns how many calls of an always-failing step the schedule
// allows within window, counting the first one at once.
func allowed(window time.Duration) int {
	calls, at := 1, time.Duration(0)
	for n := 1; ; n++ {
		if at += schedule(n); at > window {
			return calls
		}
		calls++
	}
}

// calls records when each call of a step happened, since start.
type calls struct {
	start time.Time
	mu    sync.Mutex
	at    []time.Duration
}

func (c *calls) add() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at = append(c.at, time.Since(c.start))
	return len(c.at)
}

func (c *calls) times() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.at)
}

// running starts a controller of d and returns a func that stops it and
// waits for Run to return.
// The controller's metrics and logs go to reg and log.
func running(t *testing.T, d *driver.Driver[gwSpec, gwStatus], reg prometheus.Registerer, log *zap.Logger) func() {
	t.Helper()
	c, err := controller.New(controller.Config{Name: "gateways", Reconciler: d, Sources: []controller.Source{d.Source()},
		MetricsRegisterer: reg, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := run(c, ctx)
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
}

// failing makes step fail with err on every call, recording the calls; a
// runaway loop stops the test instead of hanging it.
func failing(f *gwFixture, step string, err error, c *calls, stop func()) {
	f.world.hook = func(r stepRun) (sm.Outcome, error) {
		if r.step != step {
			return 0, nil
		}
		if c.add() == 1000 {
			stop()
		}
		return 0, err
	}
}

// An always-failing step runs exactly as often as the backoff allows: the
// driver's own status writes do not queue the document again, and the retry
// time is read from status, whatever queued the key.
func TestAlwaysFailingStepFollowsBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newGWFixture(t)
		c := &calls{start: time.Now()}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		failing(f, "create_database", errors.New("quota exceeded"), c, cancel)
		d := f.driver(t, f.config())
		stop := running(t, d, nil, nil)
		f.create(t, "gw", gwRunning)
		select {
		case <-time.After(3 * time.Second):
		case <-ctx.Done():
		}
		stop()
		got := c.times()
		if want := allowed(3 * time.Second); len(got) != want {
			t.Fatalf("the failing step ran %d times in 3 s, the backoff allows %d (first calls at %v)", len(got), want, got[:min(len(got), 12)])
		}
		for i := 1; i < len(got); i++ {
			if gap := got[i] - got[i-1]; gap != schedule(i) {
				t.Errorf("call %d came %v after the one before, want %v", i+1, gap, schedule(i))
			}
		}
		op := f.get(t, "gw").Status.Operation
		if op == nil || op.Attempts != len(got) || !strings.Contains(op.LastError, "quota exceeded") {
			t.Fatalf("operation in status: %+v", op)
		}
	})
}

// A rule out of the Fault phase back into the failed phase resumes the
// operation with its failure count: laps through Fault follow the same
// schedule as plain retries, never a fresh budget.
func TestFaultLapsKeepTheBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newGWFixture(t)
		f.edit(t, func(def *sm.Definition[gwState, gwPhase]) {
			def.Rules = append(def.Rules, sm.Rule[gwState, gwPhase]{State: gwRunning, Phase: phFailed, Begin: phCreating})
		})
		c := &calls{start: time.Now()}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		failing(f, "create_database", controller.Terminal(errors.New("quota exceeded")), c, cancel)
		stop := running(t, f.driver(t, f.config()), nil, nil)
		f.create(t, "gw", gwRunning)
		select {
		case <-time.After(3 * time.Second):
		case <-ctx.Done():
		}
		stop()
		if got, want := len(c.times()), allowed(3*time.Second); got != want {
			t.Fatalf("the terminally failing step ran %d times in 3 s through Fault laps, the backoff allows %d", got, want)
		}
		st := f.get(t, "gw").Status
		if st.Phase != phCreating && st.Phase != phFailed {
			t.Fatalf("phase %v", st.Phase)
		}
	})
}

// The backoff lives in status: a new process (a restart, a failover) waits
// for the recorded retry time instead of starting over at the first delay.
func TestBackoffSurvivesRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newGWFixture(t)
		c := &calls{start: time.Now()}
		failing(f, "create_database", errors.New("quota exceeded"), c, func() {})
		stop := running(t, f.driver(t, f.config()), nil, nil)
		f.create(t, "gw", gwRunning)
		time.Sleep(100 * time.Millisecond) // calls at 0, 5, 15, 35, 75 ms; the next is due at 155 ms
		stop()
		if n := len(c.times()); n != 5 {
			t.Fatalf("%d calls before the restart, want 5", n)
		}
		retryAt := f.get(t, "gw").Status.Operation.RetryAt
		if want := c.start.Add(155 * time.Millisecond); !retryAt.Equal(want) {
			t.Fatalf("retry time in status %v, want %v", retryAt.Sub(c.start), want.Sub(c.start))
		}
		stop = running(t, f.driver(t, f.config()), nil, nil) // a new process: nothing in memory
		time.Sleep(time.Second)
		stop()
		got := c.times()
		if len(got) < 6 || got[5] != 155*time.Millisecond || (len(got) > 6 && got[6] != 315*time.Millisecond) {
			t.Fatalf("calls after the restart at %v, want the schedule continued at 155 ms then 315 ms", got)
		}
	})
}

// A spec change retries a failing step at once; the schedule goes on from
// there.
func TestSpecChangeRetriesAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newGWFixture(t)
		c := &calls{start: time.Now()}
		failing(f, "create_database", errors.New("quota exceeded"), c, func() {})
		d := f.driver(t, f.config())
		stop := running(t, d, nil, nil)
		defer stop()
		f.create(t, "gw", gwRunning)
		time.Sleep(100 * time.Millisecond) // the next call is due at 155 ms
		if _, err := d.UpdateSpec(t.Context(), "gw", func(s *gwSpec) { s.State = gwStopped }); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := c.times(); len(got) != 6 || got[5] != 100*time.Millisecond {
			t.Fatalf("calls at %v, want a sixth at once on the spec change (100 ms)", got)
		}
	})
}

// A deletion request retries a failing step at once too: the intent changed.
func TestDeletionRetriesAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newGWFixture(t)
		c := &calls{start: time.Now()}
		failing(f, "create_database", errors.New("quota exceeded"), c, func() {})
		stop := running(t, f.driver(t, f.config()), nil, nil)
		defer stop()
		f.create(t, "gw", gwRunning)
		time.Sleep(100 * time.Millisecond) // the next call is due at 155 ms
		if err := f.coll.Delete(t.Context(), "gw", store.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := c.times(); len(got) != 6 || got[5] != 100*time.Millisecond {
			t.Fatalf("calls at %v, want a sixth at once on the deletion request (100 ms)", got)
		}
	})
}

// A phase whose completion is never observed ends at its deadline, in the
// Fault phase, with the reason in status, a count in the metrics and the
// error in the log once.
func TestDeadlineMovesToFault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newGWFixture(t)
		f.edit(t, func(def *sm.Definition[gwState, gwPhase]) {
			def.Bounds.Deadline = 10 * time.Minute
		})
		f.world.startDelay = 1000 * time.Hour // the Deployment never becomes available
		reg := prometheus.NewRegistry()
		core, logs := observer.New(zap.InfoLevel)
		cfg := f.config()
		cfg.MetricsRegisterer = reg
		stop := running(t, f.driver(t, cfg), reg, zap.New(core))
		f.create(t, "gw", gwRunning)
		time.Sleep(10*time.Minute - time.Second)
		synctest.Wait()
		if p := f.get(t, "gw").Status.Phase; p != phStarting {
			t.Fatalf("phase %v before the deadline, want Starting", p)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		stop()
		st := f.get(t, "gw").Status
		if st.Phase != phFailed || st.Failure == nil || st.Failure.Cause != sm.CauseDeadline ||
			!strings.Contains(st.Failure.Reason, "still waiting for deployment_available") {
			t.Fatalf("status %+v, failure %+v; want Failed past the deadline, waiting for the Deployment", st.Status, st.Failure)
		}
		if n := metrictest.Value(t, reg, "tend_operation_failures_total", map[string]string{"phase": "Starting", "cause": "deadline"}); n != 1 {
			t.Errorf("deadline failures counted %v, want 1", n)
		}
		if n := logs.FilterMessage("reconcile failed; not retrying").FilterFieldKey("error").Len(); n != 1 {
			t.Errorf("the failure was logged %d times, want once", n)
		}
	})
}

// Deletion during a Starting that never completes ends the document's life:
// with a declared abort at the next step boundary, without one at the
// phase's deadline, through the Fault phase's deletion rule.
func TestDeletionEndsAStuckOperation(t *testing.T) {
	for _, tc := range []struct {
		name   string
		aborts bool
		within time.Duration
	}{
		{"declared abort", true, time.Second},
		{"deadline then the fault phase's rule", false, 10*time.Minute + time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newGWFixture(t)
				f.edit(t, func(def *sm.Definition[gwState, gwPhase]) {
					def.Bounds.Deadline = 10 * time.Minute
					if tc.aborts {
						def.Aborts = []sm.AbortRule[gwState, gwPhase]{{State: gwDeleted, Phase: phStarting, To: phDeleting}}
					}
				})
				f.world.startDelay = 1000 * time.Hour
				stop := running(t, f.driver(t, f.config()), nil, nil)
				defer stop()
				f.create(t, "gw", gwRunning)
				time.Sleep(time.Minute)
				synctest.Wait()
				if p := f.get(t, "gw").Status.Phase; p != phStarting {
					t.Fatalf("phase %v, want stuck in Starting", p)
				}
				if err := f.coll.Delete(t.Context(), "gw", store.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
				time.Sleep(tc.within)
				synctest.Wait()
				if _, err := f.coll.Get(t.Context(), "gw"); !errors.Is(err, store.ErrNotFound) {
					obj, _ := f.coll.Get(t.Context(), "gw")
					t.Fatalf("document not removed %v after deletion: %+v", tc.within, obj.Status.Status)
				}
				if r := f.world.resources("gw"); r.deployment || r.database || r.namespace {
					t.Errorf("resources left behind: %+v", r)
				}
			})
		})
	}
}

// An intent the machine refuses is shown in status with the machine's
// reason, counted and logged once, however often the document is
// reconciled, and the driver keeps serving the intent it adopted.
func TestRefusalIsVisible(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newGWFixture(t)
		f.world.hook = func(r stepRun) (sm.Outcome, error) {
			if r.step == "delete_database" {
				return 0, errors.New("database busy") // keep it in Deleting a while
			}
			return 0, nil
		}
		reg := prometheus.NewRegistry()
		core, logs := observer.New(zap.InfoLevel)
		cfg := f.config()
		cfg.MetricsRegisterer = reg
		d := f.driver(t, cfg)
		stop := running(t, d, reg, zap.New(core))
		defer stop()
		f.create(t, "gw", gwDeleted)
		time.Sleep(10 * time.Millisecond)
		synctest.Wait()
		if p := f.get(t, "gw").Status.Phase; p != phDeleting {
			t.Fatalf("phase %v, want Deleting", p)
		}
		// The driver's own UpdateSpec refuses to write it…
		if _, err := d.UpdateSpec(t.Context(), "gw", func(s *gwSpec) { s.State = gwRunning }); !errors.Is(err, sm.ErrIntentRefused) ||
			!strings.Contains(err.Error(), "cannot be brought back") {
			t.Fatalf("UpdateSpec = %v, want the refusal with its reason", err)
		}
		// …and one written past it is shown, counted and logged once.
		obj := f.get(t, "gw")
		obj.Spec.State = gwRunning
		if _, err := f.coll.UpdateSpec(t.Context(), obj); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		st := f.get(t, "gw").Status
		if st.Refused == nil || st.Refused.Intent != gwRunning || st.Refused.Reason != "a gateway being deleted cannot be brought back" ||
			st.Target != gwDeleted {
			t.Fatalf("status %+v, want the refusal shown and Deleted served", st.Status)
		}
		if n := metrictest.Value(t, reg, "tend_intent_refusals_total", map[string]string{"phase": "Deleting"}); n != 1 {
			t.Errorf("refusals counted %v, want 1", n)
		}
		if n := logs.FilterMessage("intent refused").Len(); n != 1 {
			t.Errorf("refusal logged %d times, want once", n)
		}
	})
}

// A step call is bounded by its phase's step timeout: a step hung on I/O
// gets its context cancelled and counts as a failed attempt.
func TestStepTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newGWFixture(t)
		f.edit(t, func(def *sm.Definition[gwState, gwPhase]) {
			def.Phases[0].Bounds.StepTimeout = time.Second
		})
		cfg := f.config()
		cfg.Steps["create_database"] = func(ctx context.Context, _ *gwObject, _ string) (sm.Outcome, error) {
			<-ctx.Done() // hung until cancelled
			return 0, ctx.Err()
		}
		stop := running(t, f.driver(t, cfg), nil, nil)
		f.create(t, "gw", gwRunning)
		time.Sleep(time.Second + time.Millisecond)
		synctest.Wait()
		stop()
		op := f.get(t, "gw").Status.Operation
		if op == nil || op.Attempts != 1 || !strings.Contains(op.LastError, "timed out after 1s") {
			t.Fatalf("operation %+v, want one attempt that timed out", op)
		}
	})
}

// Driver.Create admits only intents the machine knows and sets the status
// itself.
func TestDriverCreateValidates(t *testing.T) {
	f := newGWFixture(t)
	d := f.driver(t, f.config())
	ctx := context.Background()
	for _, intent := range []gwState{"", "Flying"} {
		_, err := d.Create(ctx, &gwObject{Meta: store.Meta{Key: "gw"}, Spec: gwSpec{State: intent}})
		if !errors.Is(err, sm.ErrUnknownState) || !strings.Contains(err.Error(), "Running, Stopped, Restarting, Deleted") {
			t.Errorf("Create with intent %q = %v, want an unknown-state error listing the states", intent, err)
		}
	}
	forged := gwStatus{Status: sm.Status[gwState, gwPhase]{Phase: phStarted, Target: gwRunning}, Namespace: "forged"}
	obj, err := d.Create(ctx, &gwObject{Meta: store.Meta{Key: "gw"}, Spec: gwSpec{State: gwRunning}, Status: forged})
	if err != nil {
		t.Fatal(err)
	}
	if obj.Status.Phase != phCreating || obj.Status.Namespace != "" || obj.Status.Target != "" {
		t.Fatalf("created with status %+v, want the machine's initial status only", obj.Status)
	}
}

// A failed observation is retried when waiting would have observed again
// (WaitInterval), not on the error backoff: a completion that needs several
// reads to succeed at once does not slow down while they fail.
func TestFailedObservationRetriesAtWaitInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newGWFixture(t)
		c := &calls{start: time.Now()}
		cfg := f.config()
		cfg.WaitInterval = 50 * time.Millisecond
		available := cfg.Observers["deployment_available"]
		cfg.Observers["deployment_available"] = func(ctx context.Context, obj *gwObject) (bool, string, error) {
			if c.add() <= 10 {
				return false, "", errors.New("read failed")
			}
			return available(ctx, obj)
		}
		stop := running(t, f.driver(t, cfg), nil, nil)
		defer stop()
		f.create(t, "gw", gwRunning)
		time.Sleep(time.Second)
		synctest.Wait()
		got := c.times()
		if len(got) < 11 || f.get(t, "gw").Status.Phase != phStarted {
			t.Fatalf("%d observations, phase %v: want Started after the eleventh", len(got), f.get(t, "gw").Status.Phase)
		}
		for i := 1; i < 11; i++ {
			if gap := got[i] - got[i-1]; gap != 50*time.Millisecond {
				t.Fatalf("observation %d came %v after the one before, want the wait interval, 50ms (all at %v)", i+1, gap, got[:11])
			}
		}
	})
}

// A driver whose controller stops and starts again (a replica losing and
// taking back the lead) resumes a document waiting on its own last write:
// the requeue it asked for went with the old queue, so the new list must
// queue the document even though the driver wrote its revision.
func TestDriverResumesAfterItsControllerRestarts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newGWFixture(t)
		f.world.startDelay = time.Minute // Starting waits on its own write
		d := f.driver(t, f.config())
		stop := running(t, d, nil, nil)
		f.create(t, "gw", gwRunning)
		time.Sleep(time.Second)
		stop()
		if got := f.get(t, "gw").Status.Phase; got != phStarting {
			t.Fatalf("phase %v before the restart, want %v", got, phStarting)
		}
		stop = running(t, d, nil, nil) // the same driver, a new queue
		defer stop()
		time.Sleep(2 * time.Minute)
		if got := f.get(t, "gw").Status.Phase; got != phStarted {
			t.Fatalf("phase %v after the restart, want %v", got, phStarted)
		}
	})
}

// A step that panics has failed: the attempt is recorded, with its retry
// time and the panic's message (its stack goes to the log, not the status).
func TestPanickingStepIsAFailedAttempt(t *testing.T) {
	f := newGWFixture(t)
	f.world.hook = func(r stepRun) (sm.Outcome, error) {
		if r.step == "create_namespace" {
			panic("out of luck")
		}
		return 0, nil
	}
	core, logs := observer.New(zapcore.ErrorLevel)
	synctest.Test(t, func(t *testing.T) {
		stop := running(t, f.driver(t, f.config()), nil, zap.New(core))
		f.create(t, "gw", gwRunning)
		time.Sleep(time.Millisecond) // the first attempt; the second comes at 5ms
		stop()
	})
	op := f.get(t, "gw").Status.Operation
	if op == nil || op.Attempts != 1 || op.RetryAt.IsZero() || op.LastError != "step create_namespace panicked: out of luck" {
		t.Fatalf("operation %+v, want one failed attempt with a retry time and the panic, no stack", op)
	}
	if e := logs.FilterMessage("step panicked").All(); len(e) != 1 || !strings.Contains(fmt.Sprint(e[0].ContextMap()["stack"]), "goroutine") {
		t.Fatalf("logged %v, want the panic once with its stack", logs.All())
	}
}

// A step's outcome is recorded even when the document changed while the
// step ran: its status write conflicts, and the driver records the outcome
// on the document as it now is instead of calling the step again. A label
// written during every call of an always-failing step leaves the backoff
// exactly as it is; a step that succeeds while the labels change runs once.
func TestStepOutcomeSurvivesConcurrentWrites(t *testing.T) {
	touch := func(t *testing.T, f *gwFixture, key string, n int) {
		obj, err := f.coll.Get(t.Context(), key)
		if err != nil {
			t.Error(err)
			return
		}
		obj.Labels = map[string]string{"touched": fmt.Sprint(n)}
		if _, err := f.coll.UpdateSpec(t.Context(), obj); err != nil {
			t.Error(err)
		}
	}
	t.Run("failing", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := newGWFixture(t)
			c := &calls{start: time.Now()}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			f.world.hook = func(r stepRun) (sm.Outcome, error) {
				if r.step != "create_database" {
					return 0, nil
				}
				n := c.add()
				touch(t, f, r.key, n)
				if n == 1000 {
					cancel()
				}
				return 0, errors.New("quota exceeded")
			}
			stop := running(t, f.driver(t, f.config()), nil, nil)
			f.create(t, "gw", gwRunning)
			select {
			case <-time.After(3 * time.Second):
			case <-ctx.Done():
			}
			stop()
			got := c.times()
			if want := allowed(3 * time.Second); len(got) != want {
				t.Fatalf("the failing step ran %d times in 3 s with a label written during each call, the backoff allows %d (first calls at %v)",
					len(got), want, got[:min(len(got), 12)])
			}
			obj := f.get(t, "gw")
			if op := obj.Status.Operation; op == nil || op.Attempts != len(got) || !strings.Contains(op.LastError, "quota exceeded") {
				t.Fatalf("operation in status: %+v", op)
			}
			if obj.Labels["touched"] != fmt.Sprint(len(got)) {
				t.Fatalf("labels %v: the last write during a call was lost", obj.Labels)
			}
		})
	})
	t.Run("succeeding", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := newGWFixture(t)
			c := &calls{start: time.Now()}
			f.world.hook = func(r stepRun) (sm.Outcome, error) {
				if r.step != "create_namespace" {
					return 0, nil
				}
				if n := c.add(); n < 100 { // a runaway loop ends
					touch(t, f, r.key, n)
				}
				return 0, nil
			}
			stop := running(t, f.driver(t, f.config()), nil, nil)
			f.create(t, "gw", gwRunning)
			time.Sleep(time.Minute)
			stop()
			if got := c.times(); len(got) != 1 {
				t.Fatalf("create_namespace ran at %v, want once", got)
			}
			if obj := f.get(t, "gw"); obj.Status.Phase != phStarted || obj.Status.Namespace == "" {
				t.Fatalf("status %+v, want Started with the namespace the step recorded", obj.Status)
			}
		})
	})
	// A status someone else wrote while the step ran is not written over:
	// the step's outcome is dropped and the step runs again on the status
	// as it now is.
	t.Run("status changed", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := newGWFixture(t)
			c := &calls{start: time.Now()}
			f.world.hook = func(r stepRun) (sm.Outcome, error) {
				if r.step != "create_namespace" || c.add() > 1 {
					return 0, nil
				}
				obj, err := f.coll.Get(t.Context(), r.key)
				if err != nil {
					t.Error(err)
					return 0, nil
				}
				obj.Status.Namespace = "written by someone else"
				if _, err := f.coll.UpdateStatus(t.Context(), obj); err != nil {
					t.Error(err)
				}
				return 0, nil
			}
			stop := running(t, f.driver(t, f.config()), nil, nil)
			f.create(t, "gw", gwRunning)
			time.Sleep(time.Minute)
			stop()
			if got := c.times(); len(got) != 2 || got[1] != 0 {
				t.Fatalf("create_namespace ran at %v, want twice, the second at once", got)
			}
			if obj := f.get(t, "gw"); obj.Status.Phase != phStarted || !strings.HasPrefix(obj.Status.Namespace, "ns-") {
				t.Fatalf("status %+v, want Started with the namespace the second call recorded", obj.Status)
			}
		})
	})
}

// A step that starts work elsewhere reports Pending until the work ends: a
// job that is started, found failed, started again and found failed again
// counts its failures and backs off between them, as a failing step does;
// while it runs the step is looked at every WaitInterval.
func TestPendingKeepsTheFailureCount(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newGWFixture(t)
		c := &calls{start: time.Now()}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		f.world.hook = func(r stepRun) (sm.Outcome, error) {
			if r.step != "create_database" {
				return 0, nil
			}
			if n := c.add(); n == 1000 {
				cancel()
			} else if n%2 == 1 {
				return sm.Pending, nil // the job starts
			}
			return sm.Failed, errors.New("job exited with 1") // and is found failed
		}
		cfg := f.config()
		cfg.WaitInterval = time.Second
		stop := running(t, f.driver(t, cfg), nil, nil)
		f.create(t, "gw", gwRunning)
		select {
		case <-time.After(time.Minute):
		case <-ctx.Done():
		}
		stop()
		got := c.times()
		op := f.get(t, "gw").Status.Operation
		if op == nil || op.Attempts != len(got)/2 || op.Attempts < 5 {
			t.Fatalf("operation %+v after %d calls (at %v); want one failure counted per job", op, len(got), got[:min(len(got), 12)])
		}
		for i := 1; i < len(got); i += 2 { // a job is looked at the first wait (100 ms) after it starts
			if gap := got[i] - got[i-1]; gap != 100*time.Millisecond {
				t.Errorf("call %d came %v after the job started, want 100ms", i+1, gap)
			}
		}
		for i := 2; i < len(got); i += 2 { // a new job starts after the backoff of the failures so far
			if gap := got[i] - got[i-1]; gap != schedule(i/2) {
				t.Errorf("job %d started %v after the last failure, want %v", i/2+1, gap, schedule(i/2))
			}
		}
	})
}
