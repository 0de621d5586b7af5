package driver_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/driver"
	"github.com/tendhq/tend/history"
	"github.com/tendhq/tend/internal/evolvetest"
	sm "github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// oldServices stores Service documents as version 1 of the machine left
// them: one in the middle of provisioning (reserve and configure done),
// one serving the retired intent Legacy, one ready, one idle after a
// failure.
func oldServices(t *testing.T, b store.Backend) *store.Collection[evolvetest.Spec, evolvetest.Status] {
	t.Helper()
	coll, err := store.NewCollection[evolvetest.Spec, evolvetest.Status](b, evolvetest.Kind, store.CollectionConfig{})
	if err != nil {
		t.Fatal(err)
	}
	put := func(key, intent string, st sm.Status[string, string]) {
		obj, err := coll.Create(t.Context(), &evolvetest.Object{Meta: store.Meta{Key: key}, Spec: evolvetest.Spec{State: intent}})
		if err != nil {
			t.Fatal(err)
		}
		st.ObservedGeneration = obj.Generation
		obj.Status.Status = st
		if _, err := coll.UpdateStatus(t.Context(), obj); err != nil {
			t.Fatal(err)
		}
	}
	put("mid", "Up", sm.Status[string, string]{Phase: "Provisioning", Target: "Up",
		Operation: &sm.Operation[string]{ID: "op1", Phase: "Provisioning", From: "New", Done: []string{"reserve", "configure"}}})
	put("legacy", "Legacy", sm.Status[string, string]{Phase: "Ready", Target: "Legacy"})
	put("ready", "Up", sm.Status[string, string]{Phase: "Ready", Target: "Up"})
	put("idle", "Down", sm.Status[string, string]{Phase: "Idle", Target: "Down",
		Failure: &sm.Failure[string]{Operation: sm.Operation[string]{ID: "op0", Phase: "Provisioning", Done: []string{"reserve"}},
			Cause: sm.CauseDeadline, Reason: "late"}})
	return coll
}

func serviceMachine(t *testing.T, d sm.Definition[string, string]) *sm.Machine[string, string] {
	t.Helper()
	m, err := sm.New(d)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// stepLog records the steps called.
type stepLog struct {
	mu    sync.Mutex
	steps []string
}

func (l *stepLog) record(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.steps = append(l.steps, s)
}

func (l *stepLog) called() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.steps)
}

// A driver of version 2 carries each document version 1 left at its
// reconcile, in one write recorded in history, and goes on from there:
// the operation stopped half-way runs only the step it had not done.
func TestMigrateAtReconcile(t *testing.T) {
	mem, err := memory.New(memory.Config{Kinds: []string{evolvetest.Kind, history.KindFor(evolvetest.Kind)}})
	if err != nil {
		t.Fatal(err)
	}
	coll := oldServices(t, mem)
	rec, stopRec := recording(t, mem, history.RecorderConfig{})
	defer stopRec()
	v2 := serviceMachine(t, evolvetest.V2(true))
	if err := driverOf(t, coll, v2, nil, nil).CheckCarried(t.Context()); err != nil {
		t.Fatalf("CheckCarried: %v", err)
	}
	var calls stepLog
	d := driverOf(t, coll, v2, calls.record, rec)
	for _, key := range []string{"mid", "legacy", "ready", "idle"} {
		if _, err := d.Reconcile(t.Context(), key); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
	}
	if got := calls.called(); !slices.Equal(got, []string{"start"}) {
		t.Errorf("steps called %v, want start alone", got)
	}
	want := map[string][2]string{"mid": {"Serving", "Up"}, "legacy": {"Serving", "Up"}, "ready": {"Serving", "Up"}, "idle": {"Idle", "Down"}}
	for key, w := range want {
		obj, err := coll.Get(t.Context(), key)
		if err != nil {
			t.Fatal(err)
		}
		if st := obj.Status.Status; st.Phase != w[0] || st.Target != w[1] {
			t.Errorf("%s: (%s, %s), want (%s, %s)", key, st.Target, st.Phase, w[1], w[0])
		}
	}
	rec.Flush(t.Context())
	entries, err := history.NewReader(mem).History(t.Context(), evolvetest.Kind, "mid")
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) == 0 || entries[0].Type != history.Migrated || entries[0].Phase != "Provisioning" || entries[0].To != "Deploying" ||
		entries[0].Name != "v2" || !strings.Contains(entries[0].Reason, "checkpoint of op1 [reserve configure] → [reserve]") {
		t.Fatalf("history of mid begins %+v, want the migration", entries)
	}
	// Carried once: a second reconcile writes nothing.
	before, _ := coll.Get(t.Context(), "legacy")
	if _, err := d.Reconcile(t.Context(), "legacy"); err != nil {
		t.Fatal(err)
	}
	if after, _ := coll.Get(t.Context(), "legacy"); after.Revision != before.Revision {
		t.Errorf("a carried document was written again")
	}
}

// The planted defect: a version 2 that forgets its migrations. Its driver
// writes nothing over the documents it cannot carry, its reconcile fails
// terminally with ErrStranded, and CheckCarried lists them.
func TestMigrateStranded(t *testing.T) {
	mem, err := memory.New(memory.Config{Kinds: []string{evolvetest.Kind}})
	if err != nil {
		t.Fatal(err)
	}
	coll := oldServices(t, mem)
	var calls stepLog
	d := driverOf(t, coll, serviceMachine(t, evolvetest.V2(false)), calls.record, nil)
	err = d.CheckCarried(t.Context())
	var se *sm.StrandedError
	if !errors.As(err, &se) || !errors.Is(err, sm.ErrStranded) || se.Total != 3 {
		t.Fatalf("CheckCarried: %v, want mid, legacy and ready", err)
	}
	var keys []string
	for _, doc := range se.Documents {
		keys = append(keys, doc.Key)
	}
	slices.Sort(keys)
	if !slices.Equal(keys, []string{"legacy", "mid", "ready"}) {
		t.Errorf("stranded %v", keys)
	}
	before, _ := mem.Get(t.Context(), evolvetest.Kind, "mid")
	_, err = d.Reconcile(t.Context(), "mid")
	if !errors.Is(err, sm.ErrStranded) || !errors.Is(err, controller.ErrTerminal) {
		t.Fatalf("reconcile of a stranded document: %v", err)
	}
	if after, _ := mem.Get(t.Context(), evolvetest.Kind, "mid"); after.Meta.Revision != before.Meta.Revision || len(calls.called()) > 0 {
		t.Fatal("a stranded document was acted on")
	}
}

// racingStore makes a user's label write land between the driver's read
// of each document and its first status write: the migration's write is
// conditional, so it conflicts, and the driver carries the document again
// as it now is.
type racingStore struct {
	store.Backend
	mu    sync.Mutex
	raced map[string]bool
}

func (s *racingStore) UpdateStatus(ctx context.Context, d store.Document) (store.Document, error) {
	s.mu.Lock()
	first := !s.raced[d.Meta.Key]
	s.raced[d.Meta.Key] = true
	s.mu.Unlock()
	if first {
		cur, err := s.Backend.Get(ctx, d.Meta.Kind, d.Meta.Key)
		if err != nil {
			return store.Document{}, err
		}
		cur.Meta.Labels = map[string]string{"team": "b"}
		if _, err := s.Backend.UpdateSpec(ctx, cur); err != nil {
			return store.Document{}, err
		}
	}
	return s.Backend.UpdateStatus(ctx, d)
}

func TestMigrateConditional(t *testing.T) {
	mem, err := memory.New(memory.Config{Kinds: []string{evolvetest.Kind}})
	if err != nil {
		t.Fatal(err)
	}
	oldServices(t, mem)
	racing := &racingStore{Backend: mem, raced: map[string]bool{}}
	coll, err := store.NewCollection[evolvetest.Spec, evolvetest.Status](racing, evolvetest.Kind, store.CollectionConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var calls stepLog
	d := driverOf(t, coll, serviceMachine(t, evolvetest.V2(true)), calls.record, nil)
	if _, err := d.Reconcile(t.Context(), "mid"); err != nil {
		t.Fatal(err)
	}
	obj, err := coll.Get(t.Context(), "mid")
	if err != nil {
		t.Fatal(err)
	}
	if obj.Labels["team"] != "b" || obj.Status.Phase != "Serving" || !slices.Equal(calls.called(), []string{"start"}) {
		t.Fatalf("after a racing write: labels %v, phase %s, steps %v", obj.Labels, obj.Status.Phase, calls.called())
	}
}

func driverOf(t *testing.T, coll *store.Collection[evolvetest.Spec, evolvetest.Status], m *sm.Machine[string, string], record func(string), rec *history.Recorder) *driver.Driver[evolvetest.Spec, evolvetest.Status] {
	t.Helper()
	if record == nil {
		record = func(string) {}
	}
	cfg := evolvetest.Config(m, record)
	cfg.History = rec
	d, err := driver.New(coll, m, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
