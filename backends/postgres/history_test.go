package postgres_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/tendhq/tend/manager"

	"github.com/tendhq/tend/backends/postgres"
	"github.com/tendhq/tend/cascade"
	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/history"
	"github.com/tendhq/tend/internal/contention"
	"github.com/tendhq/tend/store"
)

// TestDocumentHistory keeps a document's history on PostgreSQL: two recorders on
// two stores over one schema (two replicas) append to it, each store reads
// what both wrote, the retention rule holds, and the cascade collector
// removes the history with its document.
func TestDocumentHistory(t *testing.T) {
	ctx := t.Context()
	pool := newPool(t)
	schema := newSchema(t, pool)
	kinds := append([]string{"Widget"}, history.Kinds("Widget")...)
	a := newStore(t, postgres.Config{Pool: pool, Schema: schema, Kinds: kinds, Logger: nopLogger})
	b := newStore(t, postgres.Config{Pool: newPool(t), Schema: schema, Kinds: kinds, Logger: nopLogger})

	doc, err := a.Create(ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: "team/w-1"}, Spec: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	recA, err := history.NewRecorder(a, history.RecorderConfig{Replica: "a", MaxEntries: 4})
	if err != nil {
		t.Fatal(err)
	}
	recB, err := history.NewRecorder(b, history.RecorderConfig{Replica: "b", MaxEntries: 4})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 2)
	go func() { done <- recA.Run(runCtx) }()
	go func() { done <- recB.Run(runCtx) }()
	defer func() {
		stop()
		for range 2 {
			if err := <-done; err != nil {
				t.Error(err)
			}
		}
	}()

	start := time.Now()
	recA.Record("Widget", "team/w-1", doc.Meta.UID, history.Entry{Time: start, Type: history.Transition, Phase: "Creating", To: "Created"})
	recA.Record("Widget", "team/w-1", doc.Meta.UID, history.Entry{Time: start.Add(time.Millisecond), Type: history.StepStarted, Step: "one"})
	recA.Record("Widget", "team/w-1", doc.Meta.UID, history.Entry{Time: start.Add(2 * time.Millisecond), Type: history.StepEnded, Step: "one", Outcome: "done"})
	waitHistory(t, b, func(es []history.Entry) bool { return len(es) == 3 })

	// The other replica appends; the oldest routine entry goes (MaxEntries
	// 4), the first transition stays.
	recB.Record("Widget", "team/w-1", doc.Meta.UID, history.Entry{Time: start.Add(3 * time.Millisecond), Type: history.Transition, Phase: "Created", To: "Starting"})
	recB.Record("Widget", "team/w-1", doc.Meta.UID, history.Entry{Time: start.Add(4 * time.Millisecond), Type: history.StepStarted, Step: "two"})
	es := waitHistory(t, a, func(es []history.Entry) bool { return len(es) == 4 && es[3].Step == "two" })
	var replicas []string
	for _, e := range es {
		replicas = append(replicas, e.Replica)
	}
	if !slices.Equal(replicas, []string{"a", "a", "b", "b"}) || es[0].Type != history.Transition || es[1].Type != history.StepEnded {
		t.Fatalf("history %v, want all but the oldest step start, two by each replica", es)
	}

	// The document goes; the collector takes its history with it.
	gc, err := cascade.NewController(cascade.Config{Backend: a, Kinds: kinds})
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := manager.New(manager.Config{Controllers: []*controller.Controller{gc}})
	if err != nil {
		t.Fatal(err)
	}
	go func() { done <- mgr.Run(runCtx) }()
	defer func() { stop(); <-done }()
	if err := a.Delete(ctx, "Widget", "team/w-1", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitHistory(t, b, func(es []history.Entry) bool { return len(es) == 0 })
}

// waitHistory reads the history of team/w-1 from s until ok holds, and returns it.
func waitHistory(t *testing.T, s store.Reader, ok func([]history.Entry) bool) []history.Entry {
	t.Helper()
	r := history.NewReader(s)
	deadline := time.Now().Add(20 * time.Second)
	for {
		es, err := r.History(t.Context(), "Widget", "team/w-1")
		if err != nil {
			t.Fatal(err)
		}
		if ok(es) {
			return es
		}
		if time.Now().After(deadline) {
			t.Fatalf("history %v never came", es)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestHistoryContention: 6 operators × 8 commands × 2 replicas on one
// document on PostgreSQL, every command's issued and outcome entries in its
// history exactly once; then again with every third history write stored
// but reported failed.
func TestHistoryContention(t *testing.T) {
	sized := contention.Config{Operators: 6, Commands: 8, Replicas: 2, Timeout: 2 * time.Minute}
	start := time.Now()
	if err := contention.Check(t.Context(), newStore(t, postgres.Config{Kinds: contention.Kinds(), Logger: nopLogger}), sized); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d operators × %d commands × %d replicas: %v", sized.Operators, sized.Commands, sized.Replicas, time.Since(start))
	lying := &contention.Lying{Backend: newStore(t, postgres.Config{Kinds: contention.Kinds(), Logger: nopLogger}), Every: 3}
	if err := contention.Check(t.Context(), lying, sized); err != nil {
		t.Fatalf("with history writes stored but reported failed: %v", err)
	}
}
