package driver_test

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/tendhq/tend/driver"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

type BulbSpec struct {
	State string `json:"state"`
}

func (s BulbSpec) Intent() string { return s.State }

type BulbStatus struct {
	statemachine.Status[string, string]
}

// Tracing a controller and its driver: the same TracerProvider goes into
// both configs. Each reconcile is a span, each step call and observer call a
// child span, and a step's context carries its span, so whatever the step
// traces nests under it. A program passes the OpenTelemetry SDK's
// TracerProvider (go.opentelemetry.io/otel/sdk/trace) with an exporter;
// this one prints the spans as a tree.
func Example_tracing() {
	machine, err := statemachine.New(statemachine.Definition[string, string]{
		Name:    "Bulb",
		States:  []string{"On"},
		Initial: "Dark",
		Phases: []statemachine.PhaseSpec[string]{
			{Phase: "Dark"},
			{Phase: "Brightening", Type: statemachine.Transitional, Unbounded: true, Steps: []string{"switch_on"},
				Completion: []statemachine.Require{statemachine.Is("lit")}, Then: "Lit"},
			{Phase: "Lit"},
		},
		Settled: []statemachine.Settle[string, string]{{State: "On", Phase: "Lit"}},
		Rules:   []statemachine.Rule[string, string]{{State: "On", Phase: "Dark", Begin: "Brightening"}},
	})
	if err != nil {
		panic(err)
	}
	mem, err := memory.New(memory.Config{Kinds: []string{"Bulb"}})
	if err != nil {
		panic(err)
	}
	bulbs, err := store.NewCollection[BulbSpec, BulbStatus](mem, "Bulb", store.CollectionConfig{})
	if err != nil {
		panic(err)
	}

	tp := &treeProvider{}
	var lit sync.Map
	driver, err := driver.New(bulbs, machine, driver.Config[BulbSpec, BulbStatus]{
		Steps: map[string]driver.StepFunc[BulbSpec, BulbStatus]{
			"switch_on": func(ctx context.Context, bulb *store.Object[BulbSpec, BulbStatus], opID string) (statemachine.Outcome, error) {
				_, span := tp.Tracer("bulbs").Start(ctx, "power.on") // a child of the step's span
				defer span.End()
				lit.Store(bulb.Key, true)
				return statemachine.Done, nil
			},
		},
		Observers: map[string]driver.ObserverFunc[BulbSpec, BulbStatus]{
			"lit": func(ctx context.Context, bulb *store.Object[BulbSpec, BulbStatus]) (bool, string, error) {
				_, ok := lit.Load(bulb.Key)
				return ok, "", nil
			},
		},
		NewOperationID: func() string { return "op-1" },
		TracerProvider: tp,
	})
	if err != nil {
		panic(err)
	}
	c, err := controller.New(controller.Config{Name: "bulbs", Reconciler: driver, Sources: []controller.Source{driver.Source()},
		TracerProvider: tp})
	if err != nil {
		panic(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	w, err := bulbs.Watch(ctx, 0)
	if err != nil {
		panic(err)
	}
	done := make(chan error)
	go func() { done <- c.Run(ctx) }()
	if _, err := bulbs.Create(ctx, &store.Object[BulbSpec, BulbStatus]{Meta: store.Meta{Key: "hall"}, Spec: BulbSpec{State: "On"}}); err != nil {
		panic(err)
	}
	for {
		ev, err := w.Next(ctx)
		if err != nil {
			panic(err)
		}
		if ev.Object.Status.Phase == "Lit" {
			break
		}
	}
	_ = w.Close()
	cancel()
	if err := <-done; err != nil {
		panic(err)
	}
	tp.print(nil, "")
	// Output:
	// tend.reconcile tend.controller=bulbs tend.key=hall tend.reconcile.triggers=["listed"] tend.reconcile.result=success
	//   event tend.phase_changed tend.transition.from=Dark tend.transition.to=Brightening
	//   event tend.phase_changed tend.transition.from=Brightening tend.transition.to=Lit
	//   tend.step tend.kind=Bulb tend.key=hall tend.state=On tend.phase=Brightening tend.step.name=switch_on tend.operation.id=op-1 tend.step.attempt=1 tend.step.outcome=done
	//     power.on
	//   tend.observe tend.kind=Bulb tend.key=hall tend.phase=Brightening tend.condition.name=lit tend.condition.status=true
}

// treeProvider is a trace.TracerProvider that keeps the spans its tracers
// start, to print them as a tree. It embeds the API's no-op implementation,
// as the API asks of implementations, for what it leaves out.
type treeProvider struct {
	noop.TracerProvider
	mu    sync.Mutex // guards spans and every span's lines
	spans []*treeSpan
}

func (p *treeProvider) Tracer(string, ...trace.TracerOption) trace.Tracer { return treeTracer{p: p} }

type treeTracer struct {
	noop.Tracer
	p *treeProvider
}

func (t treeTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	parent, _ := trace.SpanFromContext(ctx).(*treeSpan)
	cfg := trace.NewSpanStartConfig(opts...)
	s := &treeSpan{p: t.p, parent: parent, line: name + format(cfg.Attributes())}
	t.p.mu.Lock()
	t.p.spans = append(t.p.spans, s)
	t.p.mu.Unlock()
	return trace.ContextWithSpan(ctx, s), s
}

type treeSpan struct {
	noop.Span
	p      *treeProvider
	parent *treeSpan
	line   string   // name and attributes
	events []string // name and attributes of each event
}

func (s *treeSpan) IsRecording() bool { return true }

func (s *treeSpan) SetAttributes(kvs ...attribute.KeyValue) {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	s.line += format(kvs)
}

func (s *treeSpan) AddEvent(name string, opts ...trace.EventOption) {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	cfg := trace.NewEventConfig(opts...)
	s.events = append(s.events, "event "+name+format(cfg.Attributes()))
}

// format returns " key=value" for each attribute but the reconcile id,
// which differs from run to run.
func format(kvs []attribute.KeyValue) string {
	var b strings.Builder
	for _, kv := range kvs {
		if kv.Key != "tend.reconcile.id" {
			fmt.Fprintf(&b, " %s=%s", kv.Key, kv.Value.Emit())
		}
	}
	return b.String()
}

// print prints the spans whose parent is parent, each followed by its
// events and its children, indented.
func (p *treeProvider) print(parent *treeSpan, indent string) {
	p.mu.Lock()
	spans := p.spans
	p.mu.Unlock()
	for _, s := range spans {
		if s.parent != parent {
			continue
		}
		fmt.Println(indent + s.line)
		for _, e := range s.events {
			fmt.Println(indent + "  " + e)
		}
		p.print(s, indent+"  ")
	}
}
