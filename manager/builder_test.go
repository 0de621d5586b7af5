package manager_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
	"go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/driver"
	"github.com/tendhq/tend/history"
	"github.com/tendhq/tend/manager"
	"github.com/tendhq/tend/registry"
	"github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// A lamp is switched On or Off; Lighting turns it on, Dimming off.
type (
	lampSpec   struct{ State string }
	lampStatus struct {
		statemachine.Status[string, string]
	}
	lamp = store.Object[lampSpec, lampStatus]
)

func (s lampSpec) Intent() string { return s.State }

// lampMachine declares a lamp with the step and condition given.
func lampMachine(on, off driver.Step[lampSpec, lampStatus], lit driver.Condition[lampSpec, lampStatus]) statemachine.Definition[string, string] {
	return statemachine.Definition[string, string]{
		Name:    "Lamp",
		States:  []string{"On", "Off"},
		Initial: "Dark",
		Phases: []statemachine.PhaseSpec[string]{
			{Phase: "Dark"},
			driver.Operation("Lighting", on).Until(lit.Is()).Then("Lit"),
			{Phase: "Lit"},
			driver.Operation("Dimming", off).Until(lit.Not()).Then("Dark"),
			{Phase: "Broken", Type: statemachine.Fault},
		},
		Settled: []statemachine.Settle[string, string]{{State: "Off", Phase: "Dark"}, {State: "On", Phase: "Lit"}},
		Rules:   []statemachine.Rule[string, string]{{State: "On", Phase: "Dark", Begin: "Lighting"}, {State: "Off", Phase: "Lit", Begin: "Dimming"}},
	}
}

// lamps is the world the lamps' steps act on.
type lamps struct {
	mu  sync.Mutex // guards lit
	lit map[string]bool
}

func (l *lamps) set(key string, lit bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lit[key] = lit
}

// bind returns the lamps' steps and condition.
func (l *lamps) bind() (on, off driver.Step[lampSpec, lampStatus], lit driver.Condition[lampSpec, lampStatus]) {
	on = driver.Do("switch-on", func(_ context.Context, obj *lamp, _ string) error { l.set(obj.Key, true); return nil })
	off = driver.Do("switch-off", func(_ context.Context, obj *lamp, _ string) error { l.set(obj.Key, false); return nil })
	lit = driver.Observe("lit", func(_ context.Context, obj *lamp) (bool, string, error) {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.lit[obj.Key], "", nil
	})
	return on, off, lit
}

// spanNames is a trace.TracerProvider that counts the spans started, by
// the tend.controller attribute of reconcile spans and by name otherwise.
type spanNames struct {
	embedded.TracerProvider
	mu    sync.Mutex // guards count
	count map[string]int
}

func (p *spanNames) Tracer(string, ...trace.TracerOption) trace.Tracer { return &spanTracer{p: p} }

func (p *spanNames) counted(name string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.count[name]
}

type spanTracer struct {
	embedded.Tracer
	p *spanNames
}

func (t *spanTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	cfg := trace.NewSpanStartConfig(opts...)
	for _, a := range cfg.Attributes() {
		if a.Key == "tend.controller" {
			name += "/" + a.Value.AsString()
		}
	}
	t.p.mu.Lock()
	t.p.count[name]++
	t.p.mu.Unlock()
	return noop.NewTracerProvider().Tracer("").Start(ctx, name)
}

// TestBuilderWiresSharedSettings builds a manager's controllers with one
// builder statement each and observes that the manager's logger, metrics
// registerer, tracer provider, history recorder and machine registration
// reach each of them, the garbage collector included.
func TestBuilderWiresSharedSettings(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	core, logs := observer.New(zapcore.DebugLevel)
	reg := prometheus.NewRegistry()
	spans := &spanNames{count: map[string]int{}}
	backend, err := memory.New(memory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := history.NewRecorder(backend, history.RecorderConfig{FlushInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := manager.New(manager.Config{Store: backend, Logger: zap.New(core), MetricsRegisterer: reg,
		TracerProvider: spans, History: rec})
	if err != nil {
		t.Fatal(err)
	}
	on, off, lit := (&lamps{lit: map[string]bool{}}).bind()

	d, err := manager.Drive[lampSpec, lampStatus](mgr, lampMachine(on, off, lit)).Steps(on, off).Conditions(lit).Workers(2).Complete()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mgr.Cascade().Complete(); err != nil {
		t.Fatal(err)
	}

	done := make(chan error, 1)
	go func() { done <- mgr.Run(ctx) }()
	w, err := d.Collection().WatchNow(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := d.Create(ctx, &lamp{Meta: store.Meta{Key: "desk"}, Spec: lampSpec{State: "On"}}); err != nil {
		t.Fatal(err)
	}
	for {
		ev, err := w.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Object.Status.Phase == "Lit" {
			break
		}
	}
	// The registration is recorded beside the controllers as Run starts,
	// not before them, and the garbage collector reconciles the lamp in its
	// own time, perhaps after the lamp is lit: wait for both.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		_, err := registry.Get(ctx, backend, "Lamp")
		collected := spans.counted(controller.SpanReconcile+"/cascade") > 0
		if err == nil && collected {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("registration: %v; garbage collector reconciled: %v", err, collected)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	for _, name := range []string{"Lamp", "cascade"} {
		if n := logs.FilterField(zap.String("controller", name)).Len(); n == 0 {
			t.Errorf("controller %s logged nothing through the manager's logger", name)
		}
		if spans.counted(controller.SpanReconcile+"/"+name) == 0 {
			t.Errorf("controller %s started no reconcile span", name)
		}
		if !hasSeries(t, reg, "controller_runtime_reconcile_total", "controller", name) {
			t.Errorf("controller %s has no controller_runtime_reconcile_total series", name)
		}
	}
	if spans.counted(driver.SpanStep) == 0 {
		t.Error("the driver started no step span")
	}
	if !hasSeries(t, reg, "tend_phase_transitions_total", "kind", "Lamp") {
		t.Error("the driver has no tend_phase_transitions_total series")
	}
	entries, err := history.NewReader(backend).History(context.Background(), "Lamp", "desk")
	if err != nil || len(entries) == 0 {
		t.Errorf("history of desk: %v, %v", entries, err)
	}
}

// hasSeries reports whether reg has a series of metric with label = value.
func hasSeries(t *testing.T, reg *prometheus.Registry, metric, label, value string) bool {
	t.Helper()
	m, err := series(reg, metric, label, value)
	if err != nil {
		t.Fatal(err)
	}
	return m != nil
}

// series returns reg's series of metric with label = value, or nil.
func series(reg *prometheus.Registry, metric, label, value string) (*dto.Metric, error) {
	families, err := reg.Gather()
	if err != nil {
		return nil, err
	}
	for _, f := range families {
		if f.GetName() != metric {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m, nil
				}
			}
		}
	}
	return nil, nil
}

// kindsOnly is a store that cannot be given kinds.
type kindsOnly struct{ store.Backend }

// TestBuilderConfigErrors checks that each configuration error comes from
// the builder's final call, matching manager.ErrInvalidConfig, and that
// nothing is added to the manager then.
func TestBuilderConfigErrors(t *testing.T) {
	on, off, lit := (&lamps{lit: map[string]bool{}}).bind()
	def := lampMachine(on, off, lit)
	fixed, err := memory.New(memory.Config{Kinds: []string{"Lamp"}})
	if err != nil {
		t.Fatal(err)
	}
	type builder = manager.DriveBuilder[lampSpec, lampStatus]
	drive := func(mgr *manager.Manager) *builder { return manager.Drive[lampSpec, lampStatus](mgr, def) }
	stray := driver.Do("stray", func(context.Context, *lamp, string) error { return nil })
	dark := driver.Observe("dark", func(context.Context, *lamp) (bool, string, error) { return false, "", nil })
	tests := []struct {
		name  string
		store store.Backend // nil: a memory store that adds kinds
		build func(mgr *manager.Manager) error
		want  []string // in the error
	}{
		{"unbound step", nil, func(mgr *manager.Manager) error {
			_, err := drive(mgr).Steps(on).Conditions(lit).Complete()
			return err
		}, []string{`step "switch-off" of the machine is not bound`}},
		{"unbound condition", nil, func(mgr *manager.Manager) error {
			_, err := drive(mgr).Steps(on, off).Complete()
			return err
		}, []string{`condition "lit" of the machine is not bound`}},
		{"unknown step and condition", nil, func(mgr *manager.Manager) error {
			_, err := drive(mgr).Steps(on, off, stray).Conditions(lit, dark).Complete()
			return err
		}, []string{`step "stray" is bound`, `condition "dark" is bound`}},
		{"machine with a hole", nil, func(mgr *manager.Manager) error {
			bad := def
			bad.Rules = bad.Rules[:1]
			_, err := manager.Drive[lampSpec, lampStatus](mgr, bad).Steps(on, off).Conditions(lit).Complete()
			return err
		}, []string{"Off"}},
		{"unknown kinds", kindsOnly{fixed}, func(mgr *manager.Manager) error {
			_, err := drive(mgr).Owns("Bulb").Steps(on, off).Conditions(lit).Complete()
			return err
		}, []string{`kind "TendMachine"`, `kind "Bulb"`, store.ErrUnknownKind.Error()}},
		{"malformed kind, negative workers and unbound step at once", nil, func(mgr *manager.Manager) error {
			_, err := drive(mgr).Owns("bulb").Workers(-1).Steps(on).Conditions(lit).Complete()
			return err
		}, []string{`kind "bulb"`, "Workers -1", `"switch-off"`}},
		{"duplicate name", nil, func(mgr *manager.Manager) error {
			if _, err := drive(mgr).Steps(on, off).Conditions(lit).Complete(); err != nil {
				return errors.New("the first controller failed: " + err.Error())
			}
			_, err := mgr.Cascade().Named("Lamp").Complete()
			return err
		}, []string{`two controllers are named "Lamp"`}},
		{"watch without keys", nil, func(mgr *manager.Manager) error {
			_, err := drive(mgr).Watches("Bulb", nil).Steps(on, off).Conditions(lit).Complete()
			return err
		}, []string{`Watches("Bulb") has no keys function`}},
		{"cascade of an unknown kind", kindsOnly{fixed}, func(mgr *manager.Manager) error {
			_, err := mgr.Cascade().Kinds("Lamp", "Bulb").Complete()
			return err
		}, []string{`kind "Bulb"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.store
			if b == nil {
				var err error
				if b, err = memory.New(memory.Config{}); err != nil {
					t.Fatal(err)
				}
			}
			mgr, err := manager.New(manager.Config{Store: b, MetricsRegisterer: prometheus.NewRegistry()})
			if err != nil {
				t.Fatal(err)
			}
			err = tt.build(mgr)
			if !errors.Is(err, manager.ErrInvalidConfig) {
				t.Fatalf("the builder returned %v, want an error matching ErrInvalidConfig", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the error %q does not say %q", err, w)
				}
			}
		})
	}

	// A manager given no controllers says so from Run, not later.
	mgr, err := manager.New(manager.Config{Store: fixed})
	if err != nil {
		t.Fatal(err)
	}
	if err := mgr.Run(context.Background()); !errors.Is(err, manager.ErrInvalidConfig) {
		t.Errorf("Run of a manager without controllers: %v", err)
	}
}
