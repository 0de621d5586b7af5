package driver_test

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/history"
	"github.com/tendhq/tend/internal/metrictest"
	sm "github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// The errors of the classes the tests declare.
var (
	errInvalidArgument = errors.New("invalid argument")
	errQuotaExceeded   = errors.New("quota exceeded")
)

// throttledError is an API's error type, matched by type (sm.ErrorAs).
type throttledError struct{ status int }

func (e *throttledError) Error() string { return fmt.Sprintf("HTTP %d: slow down", e.status) }

// classes declares the error classes of the tests on the gateway machine:
// invalid arguments are final everywhere, a quota exceeded in
// create_database retries after 1 s, 2 s, then 5 s, and a throttled API
// after 1 s.
func classes(def *sm.Definition[gwState, gwPhase]) {
	def.Errors = []sm.ErrorClass{
		{Name: "invalid", Match: sm.ErrorIs(errInvalidArgument), Final: true},
		{Name: "quota", Steps: []string{"create_database"}, Match: sm.ErrorIs(errQuotaExceeded),
			Retry: []time.Duration{time.Second, 2 * time.Second, 5 * time.Second}},
		{Name: "throttled", Match: sm.ErrorAs[*throttledError](), Retry: []time.Duration{time.Second}},
	}
}

// An error of a final class ends the operation on its first occurrence, in
// the Fault phase, with the class in status, history and metrics.
func TestFinalClassEndsInFault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, rec := operatorFixture(t)
		f.edit(t, classes)
		c := &calls{start: time.Now()}
		failing(f, "create_database", fmt.Errorf("create database: %w", errInvalidArgument), c, func() {})
		reg := prometheus.NewRegistry()
		cfg := operatorConfig(f, rec)
		cfg.MetricsRegisterer = reg
		stop := running(t, f.driver(t, cfg), nil, nil)
		f.create(t, "gw", gwRunning)
		time.Sleep(time.Minute)
		stop()
		if n := len(c.times()); n != 1 {
			t.Fatalf("the step failing with a final class ran %d times, want 1", n)
		}
		st := f.get(t, "gw").Status
		if st.Phase != phFailed || st.Failure == nil || st.Failure.Cause != sm.CauseTerminal {
			t.Fatalf("status %v, failure %+v: want Failed, terminal", st.Phase, st.Failure)
		}
		if got := st.Failure.Operation.ErrorClass; got != "invalid" {
			t.Errorf("class in status %q, want invalid", got)
		}
		if n := metrictest.Value(t, reg, "tend_step_errors_total", map[string]string{"step": "create_database", "class": "invalid"}); n != 1 {
			t.Errorf("tend_step_errors_total{class=invalid} = %v, want 1", n)
		}
		rec.Flush(t.Context())
		ended := ofType(readHistory(t, f.mem, "gw"), history.StepEnded)
		if i := slices.IndexFunc(ended, func(e history.Entry) bool { return e.Step == "create_database" }); i < 0 || ended[i].ErrorClass != "invalid" {
			t.Errorf("history of the step: %+v", ended)
		}
	})
}

// A class's schedule replaces the driver's backoff for the errors it
// matches, and the class is kept in status while the step fails.
func TestClassScheduleFollowed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newGWFixture(t)
		f.edit(t, classes)
		c := &calls{start: time.Now()}
		failing(f, "create_database", fmt.Errorf("create database: %w", errQuotaExceeded), c, func() {})
		reg := prometheus.NewRegistry()
		cfg := f.config()
		cfg.MetricsRegisterer = reg
		stop := running(t, f.driver(t, cfg), nil, nil)
		f.create(t, "gw", gwRunning)
		time.Sleep(20 * time.Second)
		stop()
		want := []time.Duration{0, time.Second, 3 * time.Second, 8 * time.Second, 13 * time.Second, 18 * time.Second}
		if got := c.times(); !slices.Equal(got, want) {
			t.Fatalf("calls at %v, want %v", got, want)
		}
		op := f.get(t, "gw").Status.Operation
		if op == nil || op.ErrorClass != "quota" || op.Attempts != len(want) {
			t.Fatalf("operation in status: %+v", op)
		}
		if n := metrictest.Value(t, reg, "tend_step_errors_total", map[string]string{"step": "create_database", "class": "quota"}); n != float64(len(want)) {
			t.Errorf("tend_step_errors_total{class=quota} = %v, want %d", n, len(want))
		}
	})
}

// An error no class matches keeps the driver's backoff and no class.
func TestUnclassifiedErrorFollowsBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newGWFixture(t)
		f.edit(t, classes)
		c := &calls{start: time.Now()}
		// The quota class names create_database only.
		failing(f, "create_namespace", errQuotaExceeded, c, func() {})
		stop := running(t, f.driver(t, f.config()), nil, nil)
		f.create(t, "gw", gwRunning)
		time.Sleep(100 * time.Millisecond)
		stop()
		if got, want := len(c.times()), allowed(100*time.Millisecond); got != want {
			t.Fatalf("the step ran %d times in 100 ms, the backoff allows %d", got, want)
		}
		if op := f.get(t, "gw").Status.Operation; op == nil || op.ErrorClass != "" {
			t.Fatalf("operation in status: %+v", op)
		}
	})
}

// stepPlant is a defect planted around a step: it rewrites the step's error.
type stepPlant func(err error) error

// delayLost returns the error a step's error marks with a delay, without
// the mark, as a helper that rewraps errors carelessly would: the error
// keeps its class, and loses its delay.
func delayLost(err error) error { return cmp.Or(errors.Unwrap(err), err) }

// retryTimeRewritten rewrites the retry time of each status the driver
// writes to the driver's default backoff: the running process keeps the
// delay it decided, and a new one finds the default in the store.
func retryTimeRewritten(b store.Backend, coll *store.Collection[gwSpec, gwStatus]) store.Backend {
	return &faultyStore{Backend: b, coll: coll, write: func(_ *gwObject, st *gwStatus, _ bool) bool {
		if op := st.Operation; op != nil && !op.RetryAt.IsZero() {
			op.RetryAt = time.Now().Add(schedule(op.Attempts))
		}
		return false
	}}
}

// retryAfterScenario fails create_database twice with a throttled API's 429
// and Retry-After: 30, then lets it succeed, over three processes: one
// stopped at 10 s, a second stopped at 40 s and a third. The calls must
// come at 0, 30 s and 60 s, the server's delay winning over the class's
// 1 s schedule, and the retry time in status must be 30 s after each
// failure. It returns the problems found with the defects planted.
func retryAfterScenario(t *testing.T, plantStep stepPlant, plantStore fault) []string {
	var p problems
	synctest.Test(t, func(t *testing.T) {
		f := newGWFixture(t)
		f.edit(t, classes)
		start := time.Now()
		var (
			mu sync.Mutex
			at []time.Duration
		)
		f.world.hook = func(r stepRun) (sm.Outcome, error) {
			if r.step != "create_database" {
				return 0, nil
			}
			mu.Lock()
			defer mu.Unlock()
			if at = append(at, time.Since(start)); len(at) > 2 {
				return 0, nil
			}
			resp := &http.Response{StatusCode: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"30"}}}
			err := controller.RetryAfterHTTP(fmt.Errorf("create database: %w", &throttledError{status: resp.StatusCode}), resp)
			if plantStep != nil {
				err = plantStep(err)
			}
			return 0, err
		}
		checkRetryAt := func(after time.Duration) {
			op := f.get(t, "gw").Status.Operation
			switch {
			case op == nil:
				p.add("no operation in status after the failure at %v", after)
			case !op.RetryAt.Equal(start.Add(after + 30*time.Second)):
				p.add("retry time in status %v after the failure at %v, want 30 s after it", op.RetryAt.Sub(start), after)
			case op.ErrorClass != "throttled":
				p.add("class in status %q, want throttled", op.ErrorClass)
			}
		}
		process := func(until time.Duration) {
			stop := running(t, f.driverWith(t, f.config(), plantStore), nil, nil)
			time.Sleep(start.Add(until).Sub(time.Now()))
			stop()
		}
		f.create(t, "gw", gwRunning)
		process(10 * time.Second)
		checkRetryAt(0)
		process(40 * time.Second) // a restart
		checkRetryAt(30 * time.Second)
		process(70 * time.Second) // another one
		mu.Lock()
		got := slices.Clone(at)
		mu.Unlock()
		if want := []time.Duration{0, 30 * time.Second, 60 * time.Second}; !slices.Equal(got, want) {
			p.add("create_database called at %v, want %v", got, want)
		}
		if st := f.get(t, "gw").Status; st.Phase != phStarted {
			p.add("phase %v at the end, want Started", st.Phase)
		}
	})
	return p.all()
}

// A delay the error carries (an HTTP 429's Retry-After) is stored as the
// retry time and honoured across restarts, over the class's schedule.
func TestRetryAfterHonouredAcrossRestarts(t *testing.T) {
	if p := retryAfterScenario(t, nil, nil); len(p) > 0 {
		t.Fatal(strings.Join(p, "\n"))
	}
}

// The scenario catches a step whose error loses its delay, and a store
// that rewrites the retry time to the default backoff (which only a
// restart reads back).
func TestRetryAfterScenarioFindsDefects(t *testing.T) {
	for _, tc := range []struct {
		name  string
		step  stepPlant
		store fault
		want  string
	}{
		{"a step whose error loses its delay", delayLost, nil, "called at"},
		{"a store rewriting the retry time", nil, retryTimeRewritten, "called at"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := retryAfterScenario(t, tc.step, tc.store)
			if !slices.ContainsFunc(p, func(s string) bool { return strings.Contains(s, tc.want) }) {
				t.Fatalf("the scenario did not report %q: %q", tc.want, p)
			}
		})
	}
}

// A delay past the phase's deadline is stored as it is, and the deadline
// ends the operation: it fails at the deadline, not an hour later.
func TestRetryAfterBoundedByDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newGWFixture(t)
		f.edit(t, func(def *sm.Definition[gwState, gwPhase]) {
			for i := range def.Phases {
				if def.Phases[i].Phase == phStarting {
					def.Phases[i].Bounds.Deadline = 10 * time.Minute
				}
			}
		})
		c := &calls{start: time.Now()}
		failing(f, "create_deployment", controller.RetryAfter(errors.New("capacity exhausted"), time.Hour), c, func() {})
		stop := running(t, f.driver(t, f.config()), nil, nil)
		defer stop()
		f.create(t, "gw", gwRunning)
		synctest.Wait()
		st := f.get(t, "gw").Status
		if st.Phase != phStarting || st.Operation == nil {
			t.Fatalf("status %v %+v, want Starting with the step failed", st.Phase, st.Operation)
		}
		if !st.Operation.RetryAt.Equal(st.Since.Add(time.Hour)) {
			t.Fatalf("retry time %v after entering Starting, want 1h0m0s", st.Operation.RetryAt.Sub(st.Since))
		}
		time.Sleep(10*time.Minute + time.Second)
		st = f.get(t, "gw").Status
		if st.Phase != phFailed || st.Failure == nil || st.Failure.Cause != sm.CauseDeadline {
			t.Fatalf("status %v, failure %+v: want Failed at the deadline", st.Phase, st.Failure)
		}
		if n := len(c.times()); n != 1 {
			t.Fatalf("the step ran %d times, want 1", n)
		}
	})
}
