package drivertest

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/driver"
	sm "github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

type onSpec struct{ On bool }

func (onSpec) Intent() string { return "on" }

type onStatus struct{ sm.Status[string, string] }

// accountingRun returns a run of a one-step machine, with no replica
// running: the test makes its step calls by hand.
func accountingRun(t *testing.T, classes ...sm.ErrorClass) *run[onSpec, onStatus, string, string] {
	t.Helper()
	m, err := sm.New(sm.Definition[string, string]{
		Errors:  classes,
		Name:    "On",
		States:  []string{"on"},
		Initial: "Making",
		Phases: []sm.PhaseSpec[string]{
			{Phase: "Making", Type: sm.Transitional, Then: "Made", Steps: []string{"make"},
				Completion: []sm.Require{sm.Is("made")}, Unbounded: true},
			{Phase: "Made"},
		},
		Settled: []sm.Settle[string, string]{{State: "on", Phase: "Made"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	step := func(context.Context, *store.Object[onSpec, onStatus], string) (sm.Outcome, error) {
		return sm.Done, nil
	}
	made := func(context.Context, *store.Object[onSpec, onStatus]) (bool, string, error) { return true, "", nil }
	cfg := Config[onSpec, onStatus, string, string]{Machine: m, Kind: "On", Kinds: []string{"On"},
		Fixture: func(Env) (Fixture[onSpec, onStatus], error) {
			return Fixture[onSpec, onStatus]{Driver: driver.Config[onSpec, onStatus]{
				Steps:     map[string]driver.StepFunc[onSpec, onStatus]{"make": step},
				Observers: map[string]driver.ObserverFunc[onSpec, onStatus]{"made": made}}}, nil
		},
		SetIntent: func(*onSpec, string) {},
	}
	r, err := newRun(t.Context(), cfg, rand.New(rand.NewPCG(1, 2)), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// callMake makes one call of the one-step machine's step "make", of
// operation "op", through the harness on replica rep: the call ends as
// end does.
func callMake(ctx context.Context, r *run[onSpec, onStatus, string, string], rep int, obj *store.Object[onSpec, onStatus], end func(context.Context) (sm.Outcome, error)) {
	_, _ = r.step(&replica{id: rep}, "make", func(ctx context.Context, _ *store.Object[onSpec, onStatus], _ string) (sm.Outcome, error) {
		return end(ctx)
	})(ctx, obj, "op")
}

// ended is a step call's end that returns out and err.
func ended(out sm.Outcome, err error) func(context.Context) (sm.Outcome, error) {
	return func(context.Context) (sm.Outcome, error) { return out, err }
}

// wantProblem fails t unless r found a problem naming want, or, with
// want "", none.
func wantProblem(t *testing.T, r *run[onSpec, onStatus, string, string], want string) {
	t.Helper()
	if got := strings.Join(r.failed(), "; "); want == "" && got != "" || !strings.Contains(got, want) {
		t.Fatalf("problems %q, want %q", got, want)
	}
}

// A failed step call may be retried at once by whoever takes the document
// over: when a lease passes to a new holder (or back to its holder), or the
// call is cancelled by its replica losing the document, the failure may be
// stored nowhere, and the document's owner knows only what is stored.
// Without such a disruption the same retry breaks the backoff.
func TestStreakHandOver(t *testing.T) {
	type ends func(context.Context) (sm.Outcome, error)
	failed := func(context.Context) (sm.Outcome, error) { return sm.Failed, errInjected }
	tests := []struct {
		name          string
		during, after int64 // the shard lease's fence granted during the failed call, then before the retry (0: none)
		end           func(ctx context.Context, cancel context.CancelFunc) ends
		want          string // the problem found ("": none)
	}{
		{name: "no hand-over", want: "its backoff allows 1"},
		{name: "the owner keeps its lease", during: 1, after: 1, want: "its backoff allows 1"},
		{name: "hand-over after the call", after: 2},
		{name: "hand-over during the call", during: 2},
		{name: "the call is cancelled by its replica", end: func(_ context.Context, cancel context.CancelFunc) ends {
			return func(ctx context.Context) (sm.Outcome, error) { cancel(); return sm.Failed, ctx.Err() }
		}},
		{name: "the call times out", end: func(ctx context.Context, _ context.CancelFunc) ends {
			return func(context.Context) (sm.Outcome, error) {
				ctx, cancel := context.WithTimeout(ctx, 0)
				defer cancel()
				return sm.Failed, ctx.Err()
			}
		}, want: "its backoff allows 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := accountingRun(t)
			obj := &store.Object[onSpec, onStatus]{}
			obj.Key = key
			acquire := func(fence int64) {
				if fence != 0 {
					r.leaseAcquired(store.Lease{Name: "shard/1", Holder: "replica-1", Fence: fence})
				}
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			end := failed
			if tt.end != nil {
				end = tt.end(ctx, cancel)
			}
			acquire(1)
			callMake(ctx, r, 0, obj, func(ctx context.Context) (sm.Outcome, error) {
				acquire(tt.during)
				return end(ctx)
			})
			acquire(tt.after)
			callMake(t.Context(), r, 1, obj, ended(sm.Done, nil))
			wantProblem(t, r, tt.want)
		})
	}
}

// A failed call's error may declare its own delay (controller.RetryAfter)
// or belong to an error class with a schedule of its own: the driver then
// retries on that schedule, which may be sooner than its backoff (5 ms
// after a first failure, by default).
func TestStreakDeclaredDelay(t *testing.T) {
	quick := sm.ErrorClass{Name: "quick", Match: sm.ErrorIs(errInjected), Retry: []time.Duration{time.Millisecond}}
	tests := []struct {
		name    string
		err     error
		classes []sm.ErrorClass
		want    string // the problem of a retry 1 ms after the failure ("": none)
	}{
		{name: "the backoff", err: errInjected, want: "its backoff allows 1"},
		{name: "a delay of the error's", err: controller.RetryAfter(errInjected, time.Millisecond)},
		{name: "a longer delay of the error's", err: controller.RetryAfter(errInjected, time.Second), want: "its backoff allows 1"},
		{name: "its class's schedule", err: errInjected, classes: []sm.ErrorClass{quick}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := accountingRun(t, tt.classes...)
				obj := &store.Object[onSpec, onStatus]{}
				obj.Key = key
				callMake(t.Context(), r, 0, obj, ended(sm.Failed, tt.err))
				time.Sleep(time.Millisecond)
				callMake(t.Context(), r, 0, obj, ended(sm.Done, nil))
				wantProblem(t, r, tt.want)
			})
		})
	}
}

// An operator's retry forgets a failing step's attempts: the driver's
// write that carries it out restarts the step's schedule, and its next
// call comes at once.
func TestStreakOperatorRetry(t *testing.T) {
	for _, retried := range []bool{false, true} {
		r := accountingRun(t)
		obj := &store.Object[onSpec, onStatus]{}
		obj.Kind, obj.Key, obj.UID = "On", key, "uid"
		callMake(t.Context(), r, 0, obj, ended(sm.Failed, errInjected))
		if retried {
			obj.Status.Phase = "Making"
			obj.Status.Operation = &sm.Operation[string]{ID: "op", Phase: "Making", Attempts: 1}
			obj.Status.Commands = []sm.Command{{ID: "cmd-1", Verb: sm.VerbRetry}}
			before, err := r.coll.EncodeStatus(obj)
			if err != nil {
				t.Fatal(err)
			}
			obj.Status.Operation.Attempts, obj.Status.Commands = 0, nil
			after, err := r.coll.EncodeStatus(obj)
			if err != nil {
				t.Fatal(err)
			}
			r.statusWritten(before, after)
		}
		callMake(t.Context(), r, 0, obj, ended(sm.Done, errInjected))
		want := "its backoff allows 1" // a retry at once, unless the operator's retry restarted the schedule
		if retried {
			want = ""
		}
		wantProblem(t, r, want)
	}
}
