package controller_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/internal/doctest"
	"github.com/tendhq/tend/store"
)

// reconciles records, per reconcile, the key and its triggers as
// "key: t1,t2".
type reconciles struct {
	mu  sync.Mutex // guards got
	got []string
}

func (r *reconciles) record(ctx context.Context, key string) {
	ts, dropped := controller.TriggersFrom(ctx)
	r.mu.Lock()
	r.got = append(r.got, key+": "+strings.Join(controller.TriggerStrings(ts, dropped), ","))
	r.mu.Unlock()
}

func (r *reconciles) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	got := r.got
	r.got = nil
	return got
}

// untriggered wraps a source so that it drops the triggers of the keys it
// queues: a planted defect.
type untriggered struct{ controller.Source }

func (u untriggered) Start(ctx context.Context, e controller.Enqueuer) error {
	return u.Source.Start(ctx, dropTriggers{e})
}

type dropTriggers struct{ controller.Enqueuer }

func (d dropTriggers) EnqueueTrigger(key string, _ controller.Trigger, priority int) {
	d.Enqueuer.EnqueueTrigger(key, controller.Trigger{}, priority)
}

// triggerKinds runs a controller through a change of every kind and
// returns, per step, the reconciles it made; wrap wraps each source.
func triggerKinds(t *testing.T, wrap func(controller.Source) controller.Source) [][]string {
	var steps [][]string
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		s := doctest.NewStore(t, memory.Config{})
		doctest.Create(t, s, "Widget", "a")
		rec := &reconciles{}
		calls := map[string]int{}
		ch := make(chan string)
		c, err := controller.New(controller.Config{
			Name:        "triggers",
			RateLimiter: backoff1s(t),
			Reconciler: controller.ReconcilerFunc(func(ctx context.Context, key string) (controller.Result, error) {
				rec.record(ctx, key)
				calls[key]++
				if calls[key] > 1 {
					return controller.Result{}, nil
				}
				switch key {
				case "timer":
					return controller.Result{RequeueAfter: time.Second, Trigger: controller.Trigger{Kind: controller.TriggerTimer}}, nil
				case "poll":
					return controller.Result{RequeueAfter: time.Second}, nil
				case "fail":
					return controller.Result{}, errBoom
				case "later":
					return controller.Result{}, controller.RetryAfter(errBoom, time.Second)
				}
				return controller.Result{}, nil
			}),
			Sources: []controller.Source{
				wrap(controller.For(s, "Widget")),
				wrap(controller.Owns(s, "Gadget", "Widget")),
				wrap(controller.Watches(s, "Gadget", func(d store.Document) []string { return []string{"watcher"} })),
				wrap(controller.Resync(s, "Widget", time.Hour)),
				wrap(controller.Channel(ch)),
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		runCtx, stop := context.WithCancel(ctx)
		done := run(c, runCtx)
		step := func(do func()) {
			do()
			synctest.Wait()
			got := rec.take()
			slices.Sort(got)
			steps = append(steps, got)
		}
		step(func() {}) // the first list
		step(func() {
			d, _ := s.Get(ctx, "Widget", "a")
			d.Spec = []byte(`{"x":1}`)
			if _, err := s.UpdateSpec(ctx, d); err != nil {
				t.Fatal(err)
			}
		})
		step(func() {
			d, _ := s.Get(ctx, "Widget", "a")
			d.Status = []byte(`{"paused":true}`)
			if _, err := s.UpdateStatus(ctx, d); err != nil {
				t.Fatal(err)
			}
		})
		step(func() {
			if err := s.Delete(ctx, "Widget", "a", store.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		})
		step(func() { doctest.Create(t, s, "Widget", "b") })
		step(func() {
			doctest.Create(t, s, "Gadget", "g", store.OwnerRef{Kind: "Widget", Key: "b", UID: "uid-b", Controller: true})
		})
		step(func() {
			for _, k := range []string{"c", "timer", "poll", "fail", "later"} {
				ch <- k
			}
		})
		step(func() { time.Sleep(time.Second) })
		step(func() { time.Sleep(time.Hour) })
		stop()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
	return steps
}

var wantTriggerKinds = [][]string{
	{"a: listed"},
	{"a: spec 2"},
	{"a: change"},
	{"a: delete"},
	{"b: spec 1"},
	{"b: owned Gadget g", "watcher: watched Gadget g"},
	{"c: channel", "fail: channel", "later: channel", "poll: channel", "timer: channel"},
	{"fail: retry", "later: retry", "poll: requeue", "timer: timer"},
	{"b: resync"},
}

// TestTriggerKinds checks that each reconcile is handed the triggers of
// what queued it: a list, a spec change with its generation, another
// change, a deletion, an owned and a watched document's event, a key from
// a channel, a timer and a plain requeue, a retry after backoff and after
// RetryAfter, and a resync.
func TestTriggerKinds(t *testing.T) {
	got := triggerKinds(t, func(s controller.Source) controller.Source { return s })
	if !slices.EqualFunc(got, wantTriggerKinds, slices.Equal) {
		t.Errorf("reconciles per step:\n got %q\nwant %q", got, wantTriggerKinds)
	}
}

// TestTriggerKindsCatchesDroppedTriggers plants a defect, sources whose
// triggers are lost on the way to the queue, and checks that the test of
// the trigger kinds sees it.
func TestTriggerKindsCatchesDroppedTriggers(t *testing.T) {
	got := triggerKinds(t, func(s controller.Source) controller.Source { return untriggered{s} })
	if slices.EqualFunc(got, wantTriggerKinds, slices.Equal) {
		t.Fatal("sources that drop their triggers passed the test of the trigger kinds")
	}
	// What the runner adds itself survives.
	if want := []string{"fail: retry", "later: retry", "poll: requeue", "timer: timer"}; !slices.Equal(got[7], want) {
		t.Errorf("the runner's own triggers: %q, want %q", got[7], want)
	}
}

// TestTriggersCoalesce checks that the triggers of many adds of a key
// while it waits reach its one reconcile, each distinct one once, in the
// order they first came, and that beyond the bound the rest are counted.
func TestTriggersCoalesce(t *testing.T) {
	for _, tt := range coalesceCases {
		t.Run(tt.name, func(t *testing.T) {
			if got := coalesce(t, tt.adds, tt.distinct, nil); !slices.Equal(got, []string{tt.want}) {
				t.Errorf("reconciles %q, want [%q]", got, tt.want)
			}
		})
	}
}

// TestTriggersCoalesceCatchesFirstOnly plants a defect, an enqueuer that
// keeps only the first trigger of a key, and checks that the coalescing
// test sees it.
func TestTriggersCoalesceCatchesFirstOnly(t *testing.T) {
	for _, tt := range coalesceCases {
		t.Run(tt.name, func(t *testing.T) {
			wrap := func(e controller.Enqueuer) controller.Enqueuer {
				return &firstOnly{Enqueuer: e, seen: map[string]bool{}}
			}
			if got := coalesce(t, tt.adds, tt.distinct, wrap); slices.Equal(got, []string{tt.want}) {
				t.Errorf("an enqueuer keeping only the first trigger passed: %q", got)
			}
		})
	}
}

// firstOnly passes on only the first trigger of each key.
type firstOnly struct {
	controller.Enqueuer
	seen map[string]bool
}

func (f *firstOnly) EnqueueTrigger(key string, t controller.Trigger, priority int) {
	if f.seen[key] {
		t = controller.Trigger{}
	}
	f.seen[key] = true
	f.Enqueuer.EnqueueTrigger(key, t, priority)
}

var coalesceCases = []struct {
	name     string
	adds     int
	distinct int
	want     string
}{
	{"3000 adds of 5 triggers", 3000, 5, "k: owned Gadget g0,owned Gadget g1,owned Gadget g2,owned Gadget g3,owned Gadget g4"},
	{"20 distinct triggers", 20, 20, "k: owned Gadget g0,owned Gadget g1,owned Gadget g2,owned Gadget g3,owned Gadget g4,owned Gadget g5,owned Gadget g6,owned Gadget g7,+12 more"},
}

// coalesce queues k adds times with distinct triggers in turn while the
// only worker is busy, through wrap(the enqueuer) when wrap is set, and
// returns the reconciles that follow.
func coalesce(t *testing.T, adds, distinct int, wrap func(controller.Enqueuer) controller.Enqueuer) []string {
	var got []string
	synctest.Test(t, func(t *testing.T) {
		rec := &reconciles{}
		release := make(chan struct{})
		var e controller.Enqueuer
		ready := make(chan struct{})
		c, err := controller.New(controller.Config{
			Name: "coalesce",
			Reconciler: controller.ReconcilerFunc(func(ctx context.Context, key string) (controller.Result, error) {
				if key == "hold" {
					<-release // the only worker is busy while k is queued
					return controller.Result{}, nil
				}
				rec.record(ctx, key)
				return controller.Result{}, nil
			}),
			Sources: []controller.Source{controller.SourceFunc(func(ctx context.Context, en controller.Enqueuer) error {
				e = en
				close(ready)
				<-ctx.Done()
				return nil
			})},
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, stop := context.WithCancel(t.Context())
		done := run(c, ctx)
		<-ready
		if wrap != nil {
			e = wrap(e)
		}
		e.Enqueue("hold", "test")
		synctest.Wait()
		for i := range adds {
			g := fmt.Sprint("g", i%distinct)
			e.EnqueueTrigger("k", controller.Trigger{Kind: controller.TriggerOwned, ObjectKind: "Gadget", ObjectKey: g}, 0)
		}
		close(release)
		synctest.Wait()
		got = rec.take()
		stop()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
	return got
}

// TestTriggersRecorded checks that a reconcile's triggers are on its span
// and on its debug line.
func TestTriggersRecorded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		spans := &startRecorder{}
		core, logs := observer.New(zapcore.DebugLevel)
		c, err := controller.New(controller.Config{
			Name:           "recorded",
			Reconciler:     controller.ReconcilerFunc(func(context.Context, string) (controller.Result, error) { return controller.Result{}, nil }),
			Sources:        []controller.Source{controller.Channel(keys("a"))},
			Logger:         zap.New(core),
			TracerProvider: spans,
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, stop := context.WithCancel(t.Context())
		done := run(c, ctx)
		synctest.Wait()
		stop()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if len(spans.attrs) != 1 {
			t.Fatalf("%d spans, want 1", len(spans.attrs))
		}
		var attr []string
		for _, kv := range spans.attrs[0] {
			if kv.Key == "tend.reconcile.triggers" {
				attr = kv.Value.AsStringSlice()
			}
		}
		if !slices.Equal(attr, []string{"channel"}) {
			t.Errorf("tend.reconcile.triggers = %q, want [channel]", attr)
		}
		lines := logs.FilterMessage("reconciling").All()
		if len(lines) != 1 {
			t.Fatalf("%d reconciling lines, want 1", len(lines))
		}
		if got := fmt.Sprint(lines[0].ContextMap()["triggers"]); got != "[channel]" {
			t.Errorf("triggers field %s, want [channel]", got)
		}
	})
}

// TestTriggersCostNothing checks that with tracing and debug logs off, a
// reconcile costs as many allocations with triggers as without.
func TestTriggersCostNothing(t *testing.T) {
	measure := func(trigger controller.Trigger) float64 {
		var e controller.Enqueuer
		ready := make(chan struct{})
		reconciled := make(chan struct{})
		c, err := controller.New(controller.Config{
			Name: "cost",
			Reconciler: controller.ReconcilerFunc(func(context.Context, string) (controller.Result, error) {
				reconciled <- struct{}{}
				return controller.Result{}, nil
			}),
			Sources: []controller.Source{controller.SourceFunc(func(ctx context.Context, en controller.Enqueuer) error {
				e = en
				close(ready)
				<-ctx.Done()
				return nil
			})},
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, stop := context.WithCancel(t.Context())
		done := run(c, ctx)
		<-ready
		allocs := testing.AllocsPerRun(200, func() {
			e.EnqueueTrigger("k", trigger, 0)
			<-reconciled
		})
		stop()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		return allocs
	}
	without := measure(controller.Trigger{})
	with := measure(controller.Trigger{Kind: controller.TriggerOwned, ObjectKind: "Gadget", ObjectKey: "g"})
	t.Logf("allocations per reconcile: %.1f without triggers, %.1f with", without, with)
	if with > without {
		t.Errorf("a reconcile with a trigger costs %.1f allocations, %.1f without", with, without)
	}
}

// startRecorder is a trace.TracerProvider that records the attributes of
// each span.
type startRecorder struct {
	noop.TracerProvider
	mu    sync.Mutex // guards attrs
	attrs [][]attribute.KeyValue
}

func (r *startRecorder) Tracer(string, ...trace.TracerOption) trace.Tracer {
	return startTracer{r: r}
}

type startTracer struct {
	noop.Tracer
	r *startRecorder
}

func (t startTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	cfg := trace.NewSpanStartConfig(opts...)
	t.r.mu.Lock()
	t.r.attrs = append(t.r.attrs, cfg.Attributes())
	i := len(t.r.attrs) - 1
	t.r.mu.Unlock()
	ctx, span := t.Tracer.Start(ctx, name, opts...)
	return ctx, attrSpan{Span: span, r: t.r, i: i}
}

// attrSpan records the attributes set on it in its recorder.
type attrSpan struct {
	trace.Span
	r *startRecorder
	i int
}

func (s attrSpan) SetAttributes(kv ...attribute.KeyValue) {
	s.r.mu.Lock()
	s.r.attrs[s.i] = append(s.r.attrs[s.i], kv...)
	s.r.mu.Unlock()
}
