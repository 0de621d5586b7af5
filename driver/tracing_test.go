package driver_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tendhq/tend/driver"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tendhq/tend/controller"
	sm "github.com/tendhq/tend/statemachine"
)

// runControllerIn runs c under ctx until the test ends, and fails the test
// if Run returns an error.
func runControllerIn(t *testing.T, ctx context.Context, c *controller.Controller) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("%s: Run: %v", c.Name(), err)
		}
	})
}

// tracedGateways runs a controller named gateways over a driver of the
// fixture's gateways configured by cfg, under a span called run started
// with rec, and returns that span. The controller traces with ctrlTP and
// logs to the returned observer at debug level.
func tracedGateways(t *testing.T, f *gwFixture, rec *spanRecorder, cfg driver.Config[gwSpec, gwStatus], ctrlTP trace.TracerProvider) (trace.Span, *observer.ObservedLogs) {
	t.Helper()
	d := f.driver(t, cfg)
	core, logs := observer.New(zap.DebugLevel)
	c, err := controller.New(controller.Config{Name: "gateways", Reconciler: d, Sources: []controller.Source{d.Source()},
		Logger: zap.New(core), TracerProvider: ctrlTP})
	if err != nil {
		t.Fatal(err)
	}
	ctx, run := rec.Tracer("test").Start(context.Background(), "run")
	runControllerIn(t, ctx, c)
	return run, logs
}

// TestTracingSpans follows one gateway from its creation to Started in one
// reconcile, traced: a reconcile span parented to the context Run was given,
// a span per step call and per observer call under it with their
// attributes, the span a step starts from its context under the step's, the
// phase changes as events, and the reconcile's id and trace in its logs.
func TestTracingSpans(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newGWFixture(t)
		rec := &spanRecorder{}
		cfg := f.config()
		cfg.TracerProvider = rec
		createNamespace := cfg.Steps["create_namespace"]
		cfg.Steps["create_namespace"] = func(ctx context.Context, obj *gwObject, opID string) (sm.Outcome, error) {
			ctx, span := rec.Tracer("user").Start(ctx, "user.create_namespace")
			defer span.End()
			return createNamespace(ctx, obj, opID)
		}
		run, logs := tracedGateways(t, f, rec, cfg, rec)

		f.create(t, "gw", gwRunning)
		synctest.Wait()
		if got := f.get(t, "gw").Status.Phase; got != phStarted {
			t.Fatalf("phase %s, want Started", got)
		}
		runSpan := rec.named("run")[0]

		reconciles := rec.named(controller.SpanReconcile)
		if len(reconciles) != 1 {
			t.Fatalf("%d reconcile spans, want 1: %+v", len(reconciles), reconciles)
		}
		r := reconciles[0]
		if !r.childOf(runSpan) {
			t.Errorf("reconcile span's parent %v, want the span of Run's context %v", r.Parent, runSpan.SpanContext)
		}
		if r.Scope != controller.TracerName {
			t.Errorf("reconcile span from tracer %q, want %q", r.Scope, controller.TracerName)
		}
		for k, want := range map[string]string{"tend.controller": "gateways", "tend.key": "gw", "tend.reconcile.result": "success"} {
			if got := r.attr(k); got != want {
				t.Errorf("reconcile span: %s=%q, want %q", k, got, want)
			}
		}
		id := r.attr("tend.reconcile.id")
		if id == "" {
			t.Error("reconcile span without tend.reconcile.id")
		}
		if !r.Ended || r.Status != codes.Unset {
			t.Errorf("reconcile span ended %t with status %v, want ended and unset", r.Ended, r.Status)
		}
		var changes []string
		for _, e := range r.Events {
			if e.Name == driver.EventPhaseChanged {
				changes = append(changes, e.Attrs["tend.transition.from"].Emit()+"->"+e.Attrs["tend.transition.to"].Emit())
			}
		}
		if want := []string{"Creating->Created", "Created->Starting", "Starting->Started"}; !slices.Equal(changes, want) {
			t.Errorf("phase change events %v, want %v", changes, want)
		}

		steps := rec.named(driver.SpanStep)
		names := slices.Concat(creatingSteps, startingSteps)
		opIDs := f.world.opIDs("gw")
		if len(steps) != len(names) || len(opIDs) != len(names) {
			t.Fatalf("%d step spans and %d step runs, want %d", len(steps), len(opIDs), len(names))
		}
		for i, s := range steps {
			phase := phCreating
			if i >= len(creatingSteps) {
				phase = phStarting
			}
			want := map[string]string{"tend.kind": "ApiGateway", "tend.key": "gw", "tend.state": "Running",
				"tend.phase": string(phase), "tend.step.name": names[i], "tend.operation.id": opIDs[i],
				"tend.step.attempt": "1", "tend.step.outcome": "done"}
			for k, v := range want {
				if got := s.attr(k); got != v {
					t.Errorf("step span %d (%s): %s=%q, want %q", i, names[i], k, got, v)
				}
			}
			if !s.childOf(r) {
				t.Errorf("step span %s: parent %v, want the reconcile span", names[i], s.Parent)
			}
			if !s.Ended || s.Status != codes.Unset {
				t.Errorf("step span %s ended %t with status %v, want ended and unset", names[i], s.Ended, s.Status)
			}
		}
		if opIDs[0] == opIDs[len(opIDs)-1] {
			t.Errorf("Creating and Starting share operation id %s", opIDs[0])
		}

		users := rec.named("user.create_namespace")
		if len(users) != 1 || !users[0].childOf(steps[0]) {
			t.Errorf("the step's own span %+v, want one child of the step span %v", users, steps[0].SpanContext)
		}

		observes := rec.named(driver.SpanObserve)
		if len(observes) == 0 {
			t.Fatal("no observe spans")
		}
		seen := map[string]bool{}
		for _, o := range observes {
			cond := o.attr("tend.condition.name")
			seen[cond] = true
			if !o.childOf(r) || o.attr("tend.kind") != "ApiGateway" || o.attr("tend.key") != "gw" ||
				o.attr("tend.phase") == "" || o.attr("tend.condition.status") == "" {
				t.Errorf("observe span of %s: %+v", cond, o)
			}
		}
		for _, cond := range []string{"namespace_ready", "database_ready", "runtime_domain_present", "deployment_available"} {
			if !seen[cond] {
				t.Errorf("no observe span of %s", cond)
			}
		}

		entries := logs.FilterField(zap.String("reconcileID", id)).All()
		if len(entries) == 0 {
			t.Fatalf("no log line with the span's reconcile id %s", id)
		}
		for _, e := range entries {
			fields := e.ContextMap()
			if fields["traceID"] != r.SpanContext.TraceID().String() || fields["spanID"] != r.SpanContext.SpanID().String() {
				t.Errorf("log %q: traceID %v spanID %v, want the reconcile span's %v", e.Message, fields["traceID"],
					fields["spanID"], r.SpanContext)
			}
		}
		if n := logs.FilterMessage("phase changed").FilterField(zap.String("reconcileID", id)).Len(); n != 3 {
			t.Errorf("%d phase-change logs with the reconcile id, want 3", n)
		}
		run.End()
	})
}

// TestTracingFailures checks the spans of failing steps and observers: the
// step's outcome and attempt, status Error with the error recorded, the
// reconcile's result, and the retry's span with the next attempt number and
// the same operation id.
func TestTracingFailures(t *testing.T) {
	tests := []struct {
		name string
		// hook is create_database's first call.
		hook    func() (sm.Outcome, error)
		outcome string // of the first create_database span
		result  string // of the first reconcile span
		errText string // in the step span's status
		retried bool   // the step runs again and is done
	}{
		{name: "failed", hook: func() (sm.Outcome, error) { return sm.Failed, errInjected },
			outcome: "failed", result: "error", errText: errInjected.Error(), retried: true},
		{name: "failed without error", hook: func() (sm.Outcome, error) { return sm.Failed, nil },
			outcome: "failed", result: "error", errText: "failed", retried: true},
		{name: "terminal", hook: func() (sm.Outcome, error) { return sm.Outcome(0), controller.Terminal(errInjected) },
			outcome: "failed-terminal", result: "terminal", errText: errInjected.Error()},
		{name: "panic", hook: func() (sm.Outcome, error) { panic("boom") },
			outcome: "failed", result: "error", errText: "step create_database panicked: boom", retried: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newGWFixture(t)
				failed := false
				f.world.hook = func(r stepRun) (sm.Outcome, error) {
					if r.step != "create_database" || failed {
						return 0, nil
					}
					failed = true
					return tt.hook()
				}
				rec := &spanRecorder{}
				cfg := f.config()
				cfg.TracerProvider = rec
				run, _ := tracedGateways(t, f, rec, cfg, rec)
				defer run.End()

				f.create(t, "gw", gwRunning)
				synctest.Wait()
				time.Sleep(time.Minute) // past the backoff of a retry
				synctest.Wait()

				var db []recorded
				for _, s := range rec.named(driver.SpanStep) {
					if s.attr("tend.step.name") == "create_database" {
						db = append(db, s)
					}
				}
				reconciles := rec.named(controller.SpanReconcile)
				if len(db) == 0 || len(reconciles) == 0 {
					t.Fatalf("%d create_database spans, %d reconcile spans", len(db), len(reconciles))
				}
				first, r := db[0], reconciles[0]
				if got := first.attr("tend.step.outcome"); got != tt.outcome {
					t.Errorf("outcome %q, want %q", got, tt.outcome)
				}
				if got := first.attr("tend.step.attempt"); got != "1" {
					t.Errorf("attempt %s, want 1", got)
				}
				if first.Status != codes.Error || !strings.Contains(first.Description, tt.errText) {
					t.Errorf("step span status %v %q, want Error with %q", first.Status, first.Description, tt.errText)
				}
				if !hasEvent(first, "exception") {
					t.Errorf("step span without the error recorded: %+v", first.Events)
				}
				if !first.childOf(r) {
					t.Errorf("failed step's span is not a child of the first reconcile's")
				}
				if got := r.attr("tend.reconcile.result"); got != tt.result {
					t.Errorf("reconcile result %q, want %q", got, tt.result)
				}
				if r.Status != codes.Error || !hasEvent(r, "exception") {
					t.Errorf("reconcile span status %v, events %+v; want Error with the error recorded", r.Status, r.Events)
				}
				if strings.Contains(r.Description, "goroutine") {
					t.Errorf("reconcile span's status holds a stack: %q", r.Description)
				}

				if !tt.retried {
					if len(db) != 1 {
						t.Errorf("%d create_database spans, want 1", len(db))
					}
					if got := f.get(t, "gw").Status.Phase; got != phFailed {
						t.Errorf("phase %s, want Failed", got)
					}
					return
				}
				if len(db) != 2 {
					t.Fatalf("%d create_database spans, want 2", len(db))
				}
				second := db[1]
				if got := second.attr("tend.step.attempt"); got != "2" {
					t.Errorf("retry's attempt %s, want 2", got)
				}
				if got := second.attr("tend.step.outcome"); got != "done" || second.Status != codes.Unset {
					t.Errorf("retry: outcome %q, status %v; want done, unset", got, second.Status)
				}
				if a, b := first.attr("tend.operation.id"), second.attr("tend.operation.id"); a == "" || a != b {
					t.Errorf("operation ids %q and %q, want one id", a, b)
				}
				if len(reconciles) < 2 || !second.childOf(reconciles[1]) {
					t.Errorf("retry's span is not a child of the second reconcile's")
				}
				if got := f.get(t, "gw").Status.Phase; got != phStarted {
					t.Errorf("phase %s, want Started", got)
				}
			})
		})
	}
}

// TestTracingObserverError checks the span of an observer that fails: status
// Error, and the reconcile's span too.
func TestTracingObserverError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newGWFixture(t)
		rec := &spanRecorder{}
		cfg := f.config()
		cfg.TracerProvider = rec
		failed := false
		databaseReady := cfg.Observers["database_ready"]
		cfg.Observers["database_ready"] = func(ctx context.Context, obj *gwObject) (bool, string, error) {
			if !failed {
				failed = true
				return false, "", errInjected
			}
			return databaseReady(ctx, obj)
		}
		run, _ := tracedGateways(t, f, rec, cfg, rec)
		defer run.End()
		f.create(t, "gw", gwRunning)
		synctest.Wait()
		time.Sleep(time.Minute)
		synctest.Wait()

		var spans []recorded
		for _, s := range rec.named(driver.SpanObserve) {
			if s.attr("tend.condition.name") == "database_ready" {
				spans = append(spans, s)
			}
		}
		if len(spans) < 2 {
			t.Fatalf("%d observe spans of database_ready, want at least 2", len(spans))
		}
		if s := spans[0]; s.Status != codes.Error || !strings.Contains(s.Description, errInjected.Error()) ||
			!hasEvent(s, "exception") || s.attr("tend.condition.status") != "" {
			t.Errorf("failed observation's span: %+v", s)
		}
		if s := spans[len(spans)-1]; s.Status != codes.Unset || s.attr("tend.condition.status") != "true" {
			t.Errorf("last observation's span: %+v", s)
		}
		if r := rec.named(controller.SpanReconcile)[0]; r.Status != codes.Error || r.attr("tend.reconcile.result") != "error" {
			t.Errorf("first reconcile span: %+v", r)
		}
		if got := f.get(t, "gw").Status.Phase; got != phStarted {
			t.Errorf("phase %s, want Started", got)
		}
	})
}

// TestTracingOff checks that without a TracerProvider nothing is recorded
// and nothing changes: the step's context carries the span of Run's context
// itself, the logs carry no trace, and the gateway is Started. With a
// provider in the driver's config only, the step spans are children of the
// span of Run's context.
func TestTracingOff(t *testing.T) {
	for _, driverTraced := range []bool{false, true} {
		t.Run("driver traced "+strconv.FormatBool(driverTraced), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newGWFixture(t)
				rec := &spanRecorder{}
				cfg := f.config()
				if driverTraced {
					cfg.TracerProvider = rec
				}
				var stepSpans []trace.SpanContext
				createNamespace := cfg.Steps["create_namespace"]
				cfg.Steps["create_namespace"] = func(ctx context.Context, obj *gwObject, opID string) (sm.Outcome, error) {
					stepSpans = append(stepSpans, trace.SpanContextFromContext(ctx))
					return createNamespace(ctx, obj, opID)
				}
				run, logs := tracedGateways(t, f, rec, cfg, nil)
				defer run.End()

				f.create(t, "gw", gwRunning)
				synctest.Wait()
				if got := f.get(t, "gw").Status.Phase; got != phStarted {
					t.Fatalf("phase %s, want Started", got)
				}
				if n := len(rec.named(controller.SpanReconcile)); n != 0 {
					t.Errorf("%d reconcile spans, want none", n)
				}
				for _, e := range logs.All() {
					if _, ok := e.ContextMap()["traceID"]; ok {
						t.Errorf("log %q carries a trace id", e.Message)
					}
				}
				if len(stepSpans) != 1 {
					t.Fatalf("create_namespace ran %d times, want once", len(stepSpans))
				}
				runSpan := rec.named("run")[0]
				if !driverTraced {
					if all := rec.all(); len(all) != 1 {
						t.Errorf("%d spans recorded, want only the test's own: %+v", len(all), all)
					}
					if !stepSpans[0].Equal(runSpan.SpanContext) {
						t.Errorf("the step's context carries span %v, want the span of Run's context %v", stepSpans[0], runSpan.SpanContext)
					}
					return
				}
				steps := rec.named(driver.SpanStep)
				if len(steps) != len(creatingSteps)+len(startingSteps) {
					t.Fatalf("%d step spans, want %d", len(steps), len(creatingSteps)+len(startingSteps))
				}
				for _, s := range steps {
					if !s.childOf(runSpan) {
						t.Errorf("step span %s is not a child of the span of Run's context", s.attr("tend.step.name"))
					}
				}
				if !stepSpans[0].Equal(steps[0].SpanContext) {
					t.Errorf("the step's context carries span %v, want its step span %v", stepSpans[0], steps[0].SpanContext)
				}
			})
		})
	}
}

func hasEvent(s recorded, name string) bool {
	return slices.ContainsFunc(s.Events, func(e recEvent) bool { return e.Name == name })
}

// TestTracingReconcileResults checks the result and status of the span of
// each kind of reconcile a controller sees, a reconciler's panic included,
// whose span holds the panic's value but not its stack.
func TestTracingReconcileResults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &spanRecorder{}
		keys := make(chan string, 5)
		for _, k := range []string{"success", "requeue_after", "error", "terminal", "panic"} {
			keys <- k
		}
		c, err := controller.New(controller.Config{Name: "results", Sources: []controller.Source{controller.Channel(keys)},
			TracerProvider: rec,
			Reconciler: controller.ReconcilerFunc(func(ctx context.Context, key string) (controller.Result, error) {
				if !trace.SpanFromContext(ctx).IsRecording() {
					t.Errorf("%s: the reconcile's context carries no recording span", key)
				}
				switch key {
				case "requeue_after":
					return controller.Result{RequeueAfter: time.Hour}, nil
				case "error":
					return controller.Result{}, errInjected
				case "terminal":
					return controller.Result{}, controller.Terminal(errInjected)
				case "panic":
					panic("boom")
				}
				return controller.Result{}, nil
			})})
		if err != nil {
			t.Fatal(err)
		}
		runControllerIn(t, context.Background(), c)
		synctest.Wait()

		first := map[string]recorded{}
		for _, s := range rec.named(controller.SpanReconcile) {
			if _, ok := first[s.attr("tend.key")]; !ok {
				first[s.attr("tend.key")] = s
			}
		}
		for key, want := range map[string]struct {
			status codes.Code
			desc   string
		}{
			"success":       {codes.Unset, ""},
			"requeue_after": {codes.Unset, ""},
			"error":         {codes.Error, errInjected.Error()},
			"terminal":      {codes.Error, errInjected.Error()},
			"panic":         {codes.Error, "reconciler panicked: boom"},
		} {
			s, ok := first[key]
			switch {
			case !ok:
				t.Errorf("%s: no reconcile span", key)
			case s.attr("tend.reconcile.result") != key || s.attr("tend.controller") != "results" || s.Parent.IsValid():
				t.Errorf("%s: span %+v, want result %s, controller results, no parent", key, s, key)
			case s.Status != want.status || !strings.Contains(s.Description, want.desc) || strings.Contains(s.Description, "goroutine"):
				t.Errorf("%s: status %v %q, want %v with %q", key, s.Status, s.Description, want.status, want.desc)
			}
		}
	})
}
