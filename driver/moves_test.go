package driver_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tendhq/tend/driver"

	"pgregory.net/rapid"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/controller"
	sm "github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// Beyond a single State: one-shot requests, timers and drift repair, run by
// the real driver under a real controller in fake time.

// certSpec asks for a certificate and, with RotateAt, for its rotation at a
// time of the user's choosing.
type certSpec struct {
	State    string    `json:"state"`
	RotateAt time.Time `json:"rotateAt,omitzero"`
}

func (s certSpec) Intent() string { return s.State }

type certStatus struct {
	sm.Status[string, string]
}

type certObject = store.Object[certSpec, certStatus]

// certMachine renews an issued certificate every renewEvery (a timer after
// a time in the phase) and rotates it when its spec says (a timer computed
// from the object).
func certMachine(t testing.TB, renewEvery time.Duration) *sm.Machine[string, string] {
	t.Helper()
	T := sm.Transitional
	m, err := sm.New(sm.Definition[string, string]{
		Name:    "Certificate",
		States:  []string{"Active", "Deleted"},
		Initial: "Issuing",
		Phases: []sm.PhaseSpec[string]{
			{Phase: "Issuing", Type: T, Steps: []string{"issue"}, Completion: []sm.Require{sm.Is("valid")}, Then: "Issued"},
			{Phase: "Issued"},
			{Phase: "Renewing", Type: T, Steps: []string{"renew"}, Completion: []sm.Require{sm.Is("valid")}, Then: "Issued"},
			{Phase: "Deleting", Type: T, Steps: []string{"revoke"}, Completion: []sm.Require{sm.Not("valid")}, Then: "Deleted"},
			{Phase: "Deleted", Type: sm.Terminal},
			{Phase: "Failed", Type: sm.Fault},
		},
		Settled: []sm.Settle[string, string]{{State: "Active", Phase: "Issued"}, {State: "Deleted", Phase: "Deleted", Final: true}},
		Rules: []sm.Rule[string, string]{
			{State: "Deleted", Phase: "Issued", Begin: "Deleting"},
			{State: "Deleted", Phase: "Failed", Begin: "Deleting"},
		},
		Refusals: []sm.RefusalRule[string, string]{{States: []string{"Active"}, Phases: []string{"Deleting", "Deleted"}, Reason: "deleted"}},
		Timers: []sm.Timer[string]{
			{Name: "renew", Phase: "Issued", After: renewEvery, Begin: "Renewing"},
			{Name: "rotate", Phase: "Issued", Begin: "Renewing"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A timer's due time lives in status: a controller restarted half way keeps
// it, and a timer computed from the object fires at the object's time.
func TestTimersSurviveRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, err := memory.New(memory.Config{Kinds: []string{"Certificate"}})
		if err != nil {
			t.Fatal(err)
		}
		certs, err := store.NewCollection[certSpec, certStatus](mem, "Certificate", store.CollectionConfig{})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		var mu sync.Mutex
		var renewals []time.Duration
		newDriver := func() *driver.Driver[certSpec, certStatus] {
			d, err := driver.New(certs, certMachine(t, time.Hour), driver.Config[certSpec, certStatus]{
				Steps: map[string]driver.StepFunc[certSpec, certStatus]{
					"issue":  func(context.Context, *certObject, string) (sm.Outcome, error) { return sm.Done, nil },
					"revoke": func(context.Context, *certObject, string) (sm.Outcome, error) { return sm.Done, nil },
					"renew": func(context.Context, *certObject, string) (sm.Outcome, error) {
						mu.Lock()
						renewals = append(renewals, time.Since(start))
						mu.Unlock()
						return sm.Done, nil
					},
				},
				Observers: map[string]driver.ObserverFunc[certSpec, certStatus]{
					"valid": func(_ context.Context, obj *certObject) (bool, string, error) { return !obj.Terminating(), "", nil },
				},
				Timers: map[string]func(*certObject) time.Time{
					"rotate": func(obj *certObject) time.Time { return obj.Spec.RotateAt },
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			return d
		}
		runDriver := func(d *driver.Driver[certSpec, certStatus]) func() {
			c, err := controller.New(controller.Config{Name: "certs", Reconciler: d, Sources: []controller.Source{d.Source()}})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			done := run(c, ctx)
			return func() { cancel(); <-done }
		}

		stop := runDriver(newDriver())
		if _, err := certs.Create(t.Context(), &certObject{Meta: store.Meta{Key: "c"}, Spec: certSpec{State: "Active"}}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(30 * time.Minute)
		stop() // a restart half way to the renewal
		stop = runDriver(newDriver())
		defer stop()
		time.Sleep(40 * time.Minute)
		synctest.Wait()
		mu.Lock()
		got := slices.Clone(renewals)
		mu.Unlock()
		if !slices.Equal(got, []time.Duration{time.Hour}) {
			t.Fatalf("%d renewals, first at %v, want one at 1h0m0s, across the restart", len(got), got[:min(len(got), 5)])
		}

		// A rotation the user schedules: a timer computed from the object.
		obj, err := certs.Get(t.Context(), "c")
		if err != nil {
			t.Fatal(err)
		}
		obj.Spec.RotateAt = start.Add(100 * time.Minute)
		if _, err := certs.UpdateSpec(t.Context(), obj); err != nil {
			t.Fatal(err)
		}
		time.Sleep(40 * time.Minute) // to 1h50m: the rotation at 1h40m, not the renewal (due at 2h40m after it)
		synctest.Wait()
		mu.Lock()
		got = slices.Clone(renewals)
		mu.Unlock()
		if !slices.Equal(got, []time.Duration{time.Hour, 100 * time.Minute}) {
			t.Fatalf("%d renewals, first at %v, want 1h0m0s and the rotation at 1h40m0s", len(got), got[:min(len(got), 5)])
		}
	})
}

// Drift repair: the Deployment of a Started gateway deleted behind the
// controller's back is noticed at the phase's next health check and made
// again by the Starting operation.
func TestDriftRepair(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newGWFixture(t)
		f.edit(t, func(def *sm.Definition[gwState, gwPhase]) {
			def.Phases[3].Health = []sm.Require{sm.Is("deployment_available")}
			def.Phases[3].Repair = phStarting
			def.Phases[3].HealthEvery = time.Minute
		})
		stop := running(t, f.driver(t, f.config()), nil, nil)
		defer stop()
		f.create(t, "gw", gwRunning)
		time.Sleep(time.Second)
		synctest.Wait()
		if p := f.get(t, "gw").Status.Phase; p != phStarted {
			t.Fatalf("phase %v, want Started", p)
		}
		before := len(f.world.stepsRun("gw"))
		f.world.mu.Lock()
		f.world.of("gw").deployment = false // deleted out of band
		f.world.mu.Unlock()
		time.Sleep(time.Minute + time.Second)
		synctest.Wait()
		if got := f.world.stepsRun("gw")[before:]; !slices.Equal(got, startingSteps) {
			t.Fatalf("steps after the drift %v, want the Starting operation again %v", got, startingSteps)
		}
		st := f.get(t, "gw").Status
		if st.Phase != phStarted || !f.world.resources("gw").deployment {
			t.Fatalf("phase %v, deployment %v: want repaired", st.Phase, f.world.resources("gw").deployment)
		}
	})
}

// Requests are never lost or served twice, whatever the interleaving of
// intent writes, restart requests and controller restarts: every restart
// token still asked for at the end is served, by exactly one operation, and
// no token is served by two.
func TestRequestsServedOnce(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var problem string // reported to rapid, so that it shrinks the actions
		synctest.Test(t, func(t *testing.T) {
			f := newGWFixture(t)
			var mu sync.Mutex
			servedBy := map[string]map[string]bool{} // token → ids of the operations that served it
			cfg := f.config()
			cfg.ConflictRetries = 1000 // the test's spec writes race the driver's status writes
			for name, step := range cfg.Steps {
				cfg.Steps[name] = func(ctx context.Context, obj *gwObject, opID string) (sm.Outcome, error) {
					if op := obj.Status.Operation; op != nil && op.Request == "restart" {
						mu.Lock()
						for _, tok := range op.Tokens {
							if servedBy[tok] == nil {
								servedBy[tok] = map[string]bool{}
							}
							servedBy[tok][opID] = true
						}
						mu.Unlock()
					}
					return step(ctx, obj, opID)
				}
			}
			d := f.driver(t, cfg)
			stop := running(t, d, nil, nil)
			f.create(t, "gw", gwRunning)
			tokens := 0
			for i := range rapid.IntRange(1, 12).Draw(rt, "actions") {
				switch rapid.IntRange(0, 4).Draw(rt, fmt.Sprint("action ", i)) {
				case 0, 1:
					tokens++
					tok := fmt.Sprint("r", tokens)
					if _, err := d.UpdateSpec(t.Context(), "gw", func(s *gwSpec) { s.State, s.Restart = gwRestarting, tok }); err != nil {
						t.Fatal(err)
					}
				case 2:
					if _, err := d.UpdateSpec(t.Context(), "gw", func(s *gwSpec) { s.State = gwRunning }); err != nil {
						t.Fatal(err)
					}
				case 3:
					stop() // a crash at whatever point the controller is
					d = f.driver(t, cfg)
					stop = running(t, d, nil, nil)
				}
				time.Sleep(time.Duration(rapid.IntRange(0, 3).Draw(rt, "wait")) * time.Millisecond)
			}
			time.Sleep(time.Minute) // quiescence
			synctest.Wait()
			stop()
			problem = servedOnce(f.get(t, "gw"), servedBy)
		})
		if problem != "" {
			rt.Fatal(problem)
		}
	})
}

// servedOnce checks, at quiescence, that obj is settled, that no restart
// token was served by two operations and that the one still asked for was
// served by one and recorded; it returns what is wrong, or "".
func servedOnce(obj *gwObject, servedBy map[string]map[string]bool) string {
	if obj.Status.Phase != phStarted {
		return fmt.Sprintf("not settled: %+v", obj.Status.Status)
	}
	for tok, ops := range servedBy {
		if len(ops) > 1 {
			return fmt.Sprintf("restart %s served by %d operations", tok, len(ops))
		}
	}
	want, ok := obj.Spec.Requests()["restart"]
	if !ok {
		return ""
	}
	if len(servedBy[want[0]]) != 1 {
		return fmt.Sprintf("restart %s still asked for at the end was served by %d operations; status %+v", want[0], len(servedBy[want[0]]), obj.Status.Requests)
	}
	if i := slices.IndexFunc(obj.Status.Requests, func(r sm.RequestState) bool { return r.Name == "restart" }); i < 0 ||
		!slices.Contains(obj.Status.Requests[i].Served, want[0]) {
		return fmt.Sprintf("restart %s not recorded as served: %+v", want[0], obj.Status.Requests)
	}
	return ""
}
