package manager_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/manager"
	"github.com/tendhq/tend/store"
)

// keyOrder is a trace.TracerProvider that records the key of each
// reconcile span, in start order. The first reconcile calls hold before it
// is recorded.
type keyOrder struct {
	embedded.TracerProvider
	hold  func()
	first sync.Once
	mu    sync.Mutex // guards keys
	keys  []string
}

func (p *keyOrder) Tracer(string, ...trace.TracerOption) trace.Tracer { return &keyTracer{p: p} }

type keyTracer struct {
	embedded.Tracer
	p *keyOrder
}

func (t *keyTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if name == controller.SpanReconcile {
		t.p.first.Do(t.p.hold)
		cfg := trace.NewSpanStartConfig(opts...)
		for _, a := range cfg.Attributes() {
			if a.Key == "tend.key" {
				t.p.mu.Lock()
				t.p.keys = append(t.p.keys, a.Value.AsString())
				t.p.mu.Unlock()
			}
		}
	}
	return noop.NewTracerProvider().Tracer("").Start(ctx, name)
}

// smallTenantsAfter drives 500 lamps of tenant "big" and ten of each of
// nine small tenants, one worker grouping keys by group, and returns after
// how many reconciles each small tenant had all its lamps reconciled once.
//
// The first reconcile waits until every lamp was queued: the worker starts
// while the first list is still being queued, in key order, and it could
// otherwise take big lamps before any small tenant's lamp reached the queue.
func smallTenantsAfter(t *testing.T, group func(string) string) map[string]int {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	backend, err := memory.New(memory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for i := range 500 {
		keys = append(keys, fmt.Sprintf("big/%03d", i))
	}
	for i := range 9 {
		for j := range 10 {
			keys = append(keys, fmt.Sprintf("t%d/%d", i, j))
		}
	}
	reg := prometheus.NewRegistry()
	var unqueued error // set by the hold, read after Run returns
	order := &keyOrder{hold: func() { unqueued = queuedAll(reg, len(keys)) }}
	mgr, err := manager.New(manager.Config{Store: backend, TracerProvider: order, MetricsRegisterer: reg})
	if err != nil {
		t.Fatal(err)
	}
	on, off, lit := (&lamps{lit: map[string]bool{}}).bind()
	d, err := manager.Drive[lampSpec, lampStatus](mgr, lampMachine(on, off, lit)).Steps(on, off).Conditions(lit).
		Group(group, 0).Complete()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if _, err := d.Create(ctx, &lamp{Meta: store.Meta{Key: k}, Spec: lampSpec{State: "Off"}}); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Run(ctx) }()
	after := map[string]int{}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		order.mu.Lock()
		seen := map[string]bool{}
		left := map[string]int{}
		for i := range 9 {
			left[fmt.Sprint("t", i)] = 10
		}
		for n, k := range order.keys {
			if seen[k] {
				continue
			}
			seen[k] = true
			tn, _, _ := strings.Cut(k, "/")
			if left[tn]--; left[tn] == 0 {
				after[tn] = n + 1
			}
		}
		all := len(seen) == len(keys)
		order.mu.Unlock()
		if all {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d lamps reconciled", len(seen), len(keys))
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if unqueued != nil {
		t.Fatal(unqueued)
	}
	return after
}

// queuedAll waits until the Lamp queue has had n keys added, for up to ten
// seconds.
func queuedAll(reg *prometheus.Registry, n int) error {
	var adds float64
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		m, err := series(reg, "workqueue_adds_total", "name", "Lamp")
		if err != nil {
			return err
		}
		if adds = m.GetCounter().GetValue(); adds >= float64(n) {
			return nil
		}
	}
	return fmt.Errorf("the first reconcile waited for %d lamps to be queued; %v were", n, adds)
}

// TestBuilderGroups checks that the builder's Group reaches the queue:
// nine small tenants behind a 500-lamp backlog of another have all their
// lamps reconciled within twice their fair share, ten rounds of the ten
// tenants. A group function whose answer is lost (every key in one group),
// a planted defect, must fail the same check.
func TestBuilderGroups(t *testing.T) {
	const fair = 100
	check := func(after map[string]int) (late []string) {
		for tn, n := range after {
			if n > 2*fair {
				late = append(late, fmt.Sprintf("%s after %d", tn, n))
			}
		}
		return late
	}
	grouped := smallTenantsAfter(t, func(k string) string { t, _, _ := strings.Cut(k, "/"); return t })
	t.Logf("grouped by tenant: small tenants done after %v reconciles (fair share %d)", grouped, fair)
	if late := check(grouped); len(late) > 0 || len(grouped) != 9 {
		t.Errorf("small tenants beyond twice their fair share: %v (of %v)", late, grouped)
	}
	ignored := smallTenantsAfter(t, func(string) string { return "" })
	t.Logf("groups ignored: small tenants done after %v reconciles", ignored)
	if late := check(ignored); len(late) == 0 {
		t.Error("with groups ignored, no small tenant was late: the check cannot tell")
	}
}
