package driver_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tendhq/tend/driver"
	"github.com/tendhq/tend/internal/metrictest"
	"github.com/tendhq/tend/manager"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/history"
	"github.com/tendhq/tend/history/historyprom"
	sm "github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// recording runs a recorder writing to b until the returned stop is called;
// stop returns once it has written what was left.
func recording(t *testing.T, b store.Backend, cfg history.RecorderConfig) (*history.Recorder, func()) {
	t.Helper()
	rec, err := history.NewRecorder(b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- rec.Run(ctx) }()
	stopped := false
	return rec, func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("recorder Run: %v", err)
		}
	}
}

func readHistory(t *testing.T, b store.Reader, key string) []history.Entry {
	t.Helper()
	entries, err := history.NewReader(b).History(t.Context(), "ApiGateway", key)
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

func ofType(entries []history.Entry, typ history.Type) []history.Entry {
	var out []history.Entry
	for _, e := range entries {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// TestHistoryRecordsEveryEvent drives one gateway through each kind of
// event a driver records — transitions, step calls (one failing), a
// restart request, a refused intent, a drift repair and a deadline — and
// checks each is in its history, joined to the reconcile's log line and
// span by the reconcile id.
func TestHistoryRecordsEveryEvent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newGWFixture(t, history.Kinds("ApiGateway")...)
		f.edit(t, func(def *sm.Definition[gwState, gwPhase]) {
			def.Bounds.Deadline = 10 * time.Minute
			def.Phases[3].Health = []sm.Require{sm.Is("deployment_available")}
			def.Phases[3].Repair = phStarting
			def.Phases[3].HealthEvery = time.Minute
		})
		failed := false
		f.world.hook = func(r stepRun) (sm.Outcome, error) {
			if r.step == "create_service" && !failed {
				failed = true
				return 0, errInjected
			}
			return 0, nil
		}
		rec, stopRec := recording(t, f.mem, history.RecorderConfig{Replica: "r1"})
		defer stopRec()
		core, logs := observer.New(zap.InfoLevel)
		tp := &spanRecorder{}
		cfg := f.config()
		cfg.History, cfg.TracerProvider = rec, tp
		d := f.driver(t, cfg)
		c, err := controller.New(controller.Config{Name: "gateways", Reconciler: d, Sources: []controller.Source{d.Source()},
			Logger: zap.New(core), TracerProvider: tp})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := run(c, ctx)
		defer func() { cancel(); <-done }()

		f.create(t, "gw", gwRunning)
		time.Sleep(time.Minute)
		synctest.Wait()
		if p := f.get(t, "gw").Status.Phase; p != phStarted {
			t.Fatalf("phase %v, want Started", p)
		}
		// A restart request.
		if _, err := d.UpdateSpec(t.Context(), "gw", func(s *gwSpec) { s.State, s.Restart = gwRestarting, "r-1" }); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		// An intent no state of the machine, written past the driver.
		obj := f.get(t, "gw")
		obj.Spec.State = "Bogus"
		if _, err := f.coll.UpdateSpec(t.Context(), obj); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		obj = f.get(t, "gw")
		obj.Spec.State = gwRunning
		if _, err := f.coll.UpdateSpec(t.Context(), obj); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		// The Deployment disappears and never comes back: a drift repair,
		// then the deadline of Starting.
		f.world.mu.Lock()
		f.world.startDelay = 1000 * time.Hour
		f.world.of("gw").deployment = false
		f.world.mu.Unlock()
		time.Sleep(15 * time.Minute)
		synctest.Wait()
		if p := f.get(t, "gw").Status.Phase; p != phFailed {
			t.Fatalf("phase %v, want Failed past the deadline", p)
		}
		stopRec()

		entries := readHistory(t, f.mem, "gw")
		var transitions []string
		for _, e := range ofType(entries, history.Transition) {
			transitions = append(transitions, e.Phase+"→"+e.To)
		}
		want := []string{"Creating→Created", "Created→Starting", "Starting→Started", // created
			"Started→Stopping", "Stopping→Stopped", "Stopped→Starting", "Starting→Started", // restarted
			"Started→Starting", "Starting→Failed"} // drift, deadline
		if !slices.Equal(transitions, want) {
			t.Errorf("transitions %v\nwant %v", transitions, want)
		}
		if n, m := len(ofType(entries, history.StepStarted)), len(ofType(entries, history.StepEnded)); n == 0 || n != m {
			t.Errorf("%d step starts and %d step ends, want as many, some", n, m)
		}
		var failedCall *history.Entry
		for _, e := range ofType(entries, history.StepEnded) {
			if e.Outcome == "failed" {
				failedCall = &e
			}
		}
		if failedCall == nil || failedCall.Step != "create_service" || failedCall.Attempt != 1 || !strings.Contains(failedCall.Error, errInjected.Error()) {
			t.Errorf("failed step call %+v, want create_service's first attempt with its error", failedCall)
		}
		if r := ofType(entries, history.Request); len(r) != 1 || r[0].Name != "restart" || r[0].Outcome != "served" {
			t.Errorf("request entries %+v, want restart served", r)
		}
		if r := ofType(entries, history.Refused); len(r) != 1 || r[0].Intent != "Bogus" || r[0].Reason == "" {
			t.Errorf("refusals %+v, want Bogus refused with a reason", r)
		}
		if r := ofType(entries, history.Drift); len(r) != 1 || r[0].To != "Starting" || !strings.Contains(r[0].Reason, "deployment_available=false") {
			t.Errorf("drift entries %+v, want a repair to Starting naming deployment_available", r)
		}
		if r := ofType(entries, history.GaveUp); len(r) != 1 || r[0].Cause != "deadline" || r[0].Phase != "Starting" || r[0].To != "Failed" {
			t.Errorf("gave-up entries %+v, want Starting given up at its deadline", r)
		}

		// Each entry names the reconcile that recorded it; a transition's
		// reconcile is the one of its log line and of its span.
		spans := map[string]recorded{}
		for _, s := range tp.named(controller.SpanReconcile) {
			spans[s.attr("tend.reconcile.id")] = s
		}
		for _, e := range entries {
			if e.ReconcileID == "" || e.Replica != "r1" {
				t.Fatalf("entry without a reconcile id or replica: %v", e)
			}
			s, ok := spans[e.ReconcileID]
			if !ok || s.SpanContext.TraceID().String() != e.TraceID {
				t.Fatalf("entry %v: no reconcile span with its id and trace", e)
			}
			if e.Type != history.Transition {
				continue
			}
			lines := logs.FilterMessage("phase changed").FilterField(zap.String("reconcileID", e.ReconcileID)).
				FilterField(zap.Any("from", gwPhase(e.Phase))).FilterField(zap.Any("to", gwPhase(e.To)))
			if lines.Len() != 1 {
				t.Fatalf("transition %v: %d log lines of its reconcile, want 1", e, lines.Len())
			}
		}
	})
}

// TestHistoryBounded: a driver's history keeps the newest MaxEntries.
func TestHistoryBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newGWFixture(t, history.Kinds("ApiGateway")...)
		rec, stopRec := recording(t, f.mem, history.RecorderConfig{MaxEntries: 5})
		cfg := f.config()
		cfg.History = rec
		stop := running(t, f.driver(t, cfg), nil, nil)
		f.create(t, "gw", gwRunning)
		time.Sleep(time.Second)
		synctest.Wait()
		stop()
		stopRec()
		entries := readHistory(t, f.mem, "gw")
		if len(entries) != 5 {
			t.Fatalf("%d entries, want MaxEntries 5", len(entries))
		}
		if last := entries[4]; last.Type != history.Transition || last.To != "Started" {
			t.Fatalf("last entry %v, want the newest: the move to Started", last)
		}
	})
}

// TestHistoryAcrossReplicas runs two managers on one store, electing a
// leader: the standby reads the leader's history, and once the leader stops
// and the standby takes over, the history holds both replicas' entries, the
// first one's kept across the restart, and is served over HTTP.
func TestHistoryAcrossReplicas(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, err := memory.New(memory.Config{Kinds: append([]string{"ApiGateway"}, history.Kinds("ApiGateway")...)})
		if err != nil {
			t.Fatal(err)
		}
		world := newGWWorld()
		type replica struct {
			d      *driver.Driver[gwSpec, gwStatus]
			m      *manager.Manager
			stop   func()
			reader *history.Reader
		}
		start := func(name string) *replica {
			f := newGWFixtureOn(t, mem, mem)
			f.world = world
			rec, stopRec := recording(t, mem, history.RecorderConfig{Replica: name})
			cfg := f.config()
			cfg.History = rec
			d := f.driver(t, cfg)
			c, err := controller.New(controller.Config{Name: "gateways", Reconciler: d, Sources: []controller.Source{d.Source()}})
			if err != nil {
				t.Fatal(err)
			}
			m, err := manager.New(manager.Config{Controllers: []*controller.Controller{c},
				Mode: manager.LeaderElection, Leaser: mem, Identity: name})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() { done <- m.Run(ctx) }()
			return &replica{d: d, m: m, reader: history.NewReader(mem), stop: func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("manager %s: %v", name, err)
				}
				stopRec()
			}}
		}
		a := start("a")
		time.Sleep(time.Second)
		synctest.Wait()
		b := start("b")
		defer b.stop()
		f := newGWFixtureOn(t, mem, mem)
		f.create(t, "gw", gwRunning)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if !a.m.IsLeader() || b.m.IsLeader() {
			t.Fatalf("a leads: %t, b leads: %t; want a", a.m.IsLeader(), b.m.IsLeader())
		}
		seen, err := b.reader.History(t.Context(), "ApiGateway", "gw")
		if err != nil || len(ofType(seen, history.Transition)) != 3 {
			t.Fatalf("the standby reads %v (%v), want the leader's three transitions", seen, err)
		}

		a.stop() // a restart: b takes over
		time.Sleep(time.Minute)
		synctest.Wait()
		if !b.m.IsLeader() {
			t.Fatal("b did not take the lead")
		}
		if _, err := b.d.UpdateSpec(t.Context(), "gw", func(s *gwSpec) { s.State = gwStopped }); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second)
		synctest.Wait()

		h := b.m.Handler(manager.HandlerConfig{History: b.reader})
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/history/ApiGateway/gw", nil))
		var body history.Response
		if err := json.NewDecoder(w.Body).Decode(&body); err != nil || w.Code != http.StatusOK {
			t.Fatalf("GET /history: %d, %v", w.Code, err)
		}
		by := map[string][]string{}
		for _, e := range ofType(body.Entries, history.Transition) {
			by[e.Replica] = append(by[e.Replica], e.Phase+"→"+e.To)
		}
		if !slices.Equal(by["a"], []string{"Creating→Created", "Created→Starting", "Starting→Started"}) ||
			!slices.Equal(by["b"], []string{"Started→Stopping", "Stopping→Stopped"}) {
			t.Fatalf("transitions by replica %v", by)
		}
		w = httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/history/Unknown/gw", nil))
		if w.Code != http.StatusNotFound {
			t.Fatalf("GET /history of an unknown kind: %d, want 404", w.Code)
		}
	})
}

// historyDown is a store whose writes of histories fail.
type historyDown struct{ store.Backend }

var errHistoryDown = errors.New("history store down")

func (h historyDown) Create(ctx context.Context, doc store.Document) (store.Document, error) {
	if strings.HasSuffix(doc.Meta.Kind, history.KindSuffix) {
		return store.Document{}, errHistoryDown
	}
	return h.Backend.Create(ctx, doc)
}

func (h historyDown) UpdateSpec(ctx context.Context, doc store.Document) (store.Document, error) {
	if strings.HasSuffix(doc.Meta.Kind, history.KindSuffix) {
		return store.Document{}, errHistoryDown
	}
	return h.Backend.UpdateSpec(ctx, doc)
}

// TestHistoryStoreDown: history that cannot be written is dropped and
// counted, and the documents converge as without it.
func TestHistoryStoreDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newGWFixture(t, history.Kinds("ApiGateway")...)
		reg := prometheus.NewRegistry()
		rec, stopRec := recording(t, historyDown{f.mem}, history.RecorderConfig{Metrics: historyprom.New(historyprom.Config{Registerer: reg})})
		cfg := f.config()
		cfg.History = rec
		stop := running(t, f.driver(t, cfg), nil, nil)
		f.create(t, "gw", gwRunning)
		time.Sleep(time.Minute)
		synctest.Wait()
		stop()
		stopRec()
		if p := f.get(t, "gw").Status.Phase; p != phStarted {
			t.Fatalf("phase %v, want Started whatever became of history", p)
		}
		dropped := rec.Dropped(history.DropWriteFailed)
		if dropped == 0 {
			t.Fatal("no entry counted as dropped")
		}
		if got := metrictest.Value(t, reg, "tend_history_entries_dropped_total", map[string]string{"reason": "write_failed"}); got != float64(dropped) {
			t.Fatalf("tend_history_entries_dropped_total{reason=write_failed} = %v, want %d", got, dropped)
		}
		if got := readHistory(t, f.mem, "gw"); len(got) != 0 {
			t.Fatalf("history %v written through a store that was down", got)
		}
	})
}

// A timer that fires is in the history too, with its name and the phase it
// fired in: the renewal after a time in the phase, and the rotation at a
// time computed from the object.
func TestHistoryRecordsTimers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, err := memory.New(memory.Config{Kinds: append([]string{"Certificate"}, history.Kinds("Certificate")...)})
		if err != nil {
			t.Fatal(err)
		}
		certs, err := store.NewCollection[certSpec, certStatus](mem, "Certificate", store.CollectionConfig{})
		if err != nil {
			t.Fatal(err)
		}
		rec, stopRec := recording(t, mem, history.RecorderConfig{})
		defer stopRec()
		done := func(context.Context, *certObject, string) (sm.Outcome, error) { return sm.Done, nil }
		d, err := driver.New(certs, certMachine(t, time.Hour), driver.Config[certSpec, certStatus]{
			Steps: map[string]driver.StepFunc[certSpec, certStatus]{"issue": done, "revoke": done, "renew": done},
			Observers: map[string]driver.ObserverFunc[certSpec, certStatus]{
				"valid": func(context.Context, *certObject) (bool, string, error) { return true, "", nil },
			},
			Timers:  map[string]func(*certObject) time.Time{"rotate": func(obj *certObject) time.Time { return obj.Spec.RotateAt }},
			History: rec,
		})
		if err != nil {
			t.Fatal(err)
		}
		c, err := controller.New(controller.Config{Name: "certs", Reconciler: d, Sources: []controller.Source{d.Source()}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		stopped := run(c, ctx)
		defer func() { cancel(); <-stopped }()

		start := time.Now()
		if _, err := certs.Create(t.Context(), &certObject{Meta: store.Meta{Key: "c"}, Spec: certSpec{State: "Active", RotateAt: start.Add(90 * time.Minute)}}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Minute) // the renewal at 1h, the rotation at 1h30m
		synctest.Wait()
		stopRec()

		entries, err := history.NewReader(mem).History(t.Context(), "Certificate", "c")
		if err != nil {
			t.Fatal(err)
		}
		var fired []string
		for _, e := range ofType(entries, history.Timer) {
			fired = append(fired, e.Name+" in "+e.Phase+" at "+e.Time.Sub(start).Round(time.Minute).String())
		}
		if want := []string{"renew in Issued at 1h0m0s", "rotate in Issued at 1h30m0s"}; !slices.Equal(fired, want) {
			t.Fatalf("timer entries %q, want %q", fired, want)
		}
		for _, e := range ofType(entries, history.Timer) {
			if e.ReconcileID == "" {
				t.Errorf("timer entry %+v has no reconcile id", e)
			}
		}
	})
}
