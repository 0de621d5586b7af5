package dataplane_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/driver"
	"github.com/tendhq/tend/examples/workspace/dataplane"
	"github.com/tendhq/tend/history"
	"github.com/tendhq/tend/manager"
	"github.com/tendhq/tend/registry"
)

// TestManagerConfigReachesController runs the WorkspaceController with the
// logger, metrics registerer, tracer provider and history recorder of
// Config.Manager, drives a workspace to STANDBY, and observes that each of
// them reached the controller and its driver, and that the manager
// recorded the machine's registration.
func TestManagerConfigReachesController(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	core, logs := observer.New(zapcore.DebugLevel)
	reg := prometheus.NewRegistry()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer tp.Shutdown(context.Background())
	rec, err := history.NewRecorder(e.mem, history.RecorderConfig{FlushInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	c, err := dataplane.New(dataplane.Config{Store: e.mem, Instances: e.instances, Storage: e.storage, WaitInterval: 10 * time.Millisecond,
		Manager: manager.Config{Logger: zap.New(core), MetricsRegisterer: reg, TracerProvider: tp, History: rec}})
	if err != nil {
		t.Fatal(err)
	}
	if c.Manager().Controller(dataplane.ControllerName) == nil {
		t.Fatalf("the manager has no controller %q", dataplane.ControllerName)
	}
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	w, err := c.Collection().WatchNow(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := c.Create(ctx, "w1", dataplane.Spec{State: dataplane.StateStandby, Image: "workspace:1"}); err != nil {
		t.Fatal(err)
	}
	for {
		ev, err := w.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Object.Status.Phase == dataplane.Standby {
			break
		}
	}
	// The registration and the history are written beside the reconciles:
	// wait for them.
	var entries []history.Entry
	for {
		_, err := registry.Get(ctx, e.mem, dataplane.Kind)
		if entries, _ = history.NewReader(e.mem).History(ctx, dataplane.Kind, "w1"); err == nil && len(entries) > 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("registration: %v; history of w1: %d entries", err, len(entries))
		case <-time.After(10 * time.Millisecond):
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	if logs.FilterField(zap.String("controller", dataplane.ControllerName)).Len() == 0 {
		t.Error("the controller logged nothing through the manager's logger")
	}
	names := map[string]int{}
	for _, s := range spans.Ended() {
		names[s.Name()]++
	}
	for _, name := range []string{controller.SpanReconcile, driver.SpanStep, driver.SpanObserve} {
		if names[name] == 0 {
			t.Errorf("no %s span among %v", name, names)
		}
	}
	rr := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rr, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, series := range []string{
		`controller_runtime_reconcile_total\{controller="` + dataplane.ControllerName + `"`,
		`tend_phase_transitions_total\{[^}]*kind="` + dataplane.Kind + `"`,
	} {
		if !regexp.MustCompile(`(?m)^` + series).MatchString(rr.Body.String()) {
			t.Errorf("no series matching %s among the metrics:\n%s", series, rr.Body.String())
		}
	}
}
