package driver_test

import (
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tendhq/tend/history"
	"github.com/tendhq/tend/internal/metrictest"
	sm "github.com/tendhq/tend/statemachine"
)

// A request counts as served at one moment, in history, metrics and
// status: the write that records its token served, when the operation
// carrying it completes; nothing while that operation runs, or fails.
func TestDriverRequestServedWhenCompleted(t *testing.T) {
	f := newGWFixture(t, history.Kinds("ApiGateway")...)
	rec, stopRec := recording(t, f.mem, history.RecorderConfig{Replica: "r1"})
	defer stopRec()
	reg := prometheus.NewRegistry()
	cfg := f.config()
	cfg.History, cfg.MetricsRegisterer = rec, reg
	d := f.driver(t, cfg)
	served := func() float64 {
		return metrictest.Value(t, reg, "tend_requests_total", map[string]string{"request": "restart", "result": "served"})
	}
	f.create(t, "gw", gwRunning)
	settle(t, d, "gw")

	// The restart begins Stopping, whose steps fail: the operation carries
	// the token, and it is not served.
	f.world.hook = func(r stepRun) (sm.Outcome, error) {
		if slices.Contains(stoppingSteps, r.step) {
			return sm.Failed, errInjected
		}
		return 0, nil
	}
	if _, err := d.UpdateSpec(t.Context(), "gw", func(s *gwSpec) { s.State, s.Restart = gwRestarting, "r-1" }); err != nil {
		t.Fatal(err)
	}
	_, _ = d.Reconcile(t.Context(), "gw") // the step fails: an error is expected
	st := f.get(t, "gw").Status
	if st.Operation == nil || st.Operation.Request != "restart" || len(st.Requests) != 1 || len(st.Requests[0].Served) != 0 {
		t.Fatalf("status %+v: want an operation carrying restart r-1, not served", st)
	}
	if n := served(); n != 0 {
		t.Fatalf("tend_requests_total{result=served} = %v while the operation runs, want 0", n)
	}

	f.world.hook = nil
	// The failed step waits out its backoff, then the restart completes.
	for i := 0; ; i++ {
		res, err := d.Reconcile(t.Context(), "gw")
		if err == nil && res.RequeueAfter == 0 {
			break
		}
		if i == 100 {
			t.Fatalf("gw did not settle: %v", err)
		}
		time.Sleep(max(res.RequeueAfter, 10*time.Millisecond))
	}
	if st := f.get(t, "gw").Status; len(st.Requests) != 1 || !slices.Equal(st.Requests[0].Served, []string{"r-1"}) {
		t.Fatalf("requests %+v, want r-1 served", st.Requests)
	}
	if n := served(); n != 1 {
		t.Fatalf("tend_requests_total{result=served} = %v, want 1", n)
	}
	stopRec()
	r := ofType(readHistory(t, f.mem, "gw"), history.Request)
	if len(r) != 1 || r[0].Outcome != "served" || r[0].Phase != string(phStopping) || r[0].Operation == "" {
		t.Fatalf("request entries %+v, want one, served as Stopping completed, naming its operation", r)
	}
}
