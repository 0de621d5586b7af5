package oncall_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tendhq/tend/registry"

	"pgregory.net/rapid"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/history"
	"github.com/tendhq/tend/oncall"
	sm "github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

const kind = "Bucket"

// bucketMachine is a machine the package was not written for, with states
// and phases as plain strings.
func bucketMachine() sm.Definition[string, string] {
	return sm.Definition[string, string]{
		Name:    kind,
		States:  []string{"Present", "Absent"},
		Initial: "Creating",
		Phases: []sm.PhaseSpec[string]{
			{Phase: "Creating", Type: sm.Transitional, Steps: []string{"allocate", "tag"}, Then: "Ready", Completion: []sm.Require{sm.Is("bucket_present")}},
			{Phase: "Ready"},
			{Phase: "Resizing", Type: sm.Transitional, Steps: []string{"grow"}, Then: "Ready", Completion: []sm.Require{sm.Is("bucket_present")}},
			{Phase: "Deleting", Type: sm.Transitional, NoReturn: true, Steps: []string{"drain"}, Then: "Gone", Completion: []sm.Require{sm.Not("bucket_present")}},
			{Phase: "Gone", Type: sm.Terminal},
			{Phase: "Failed", Type: sm.Fault},
		},
		Settled: []sm.Settle[string, string]{{State: "Present", Phase: "Ready"}, {State: "Absent", Phase: "Gone", Final: true}},
		Rules: []sm.Rule[string, string]{
			{State: "Absent", Phase: "Ready", Begin: "Deleting"},
			{State: "Absent", Phase: "Failed", Begin: "Deleting"},
		},
		Refusals: []sm.RefusalRule[string, string]{{States: []string{"Present"}, Phases: []string{"Deleting", "Gone"}, Reason: "a bucket being deleted stays deleted"}},
		Requests: []sm.RequestRule[string]{{Name: "resize", Serve: []sm.Edge[string]{{From: "Ready", To: "Resizing"}}}},
	}
}

type fixture struct {
	b      *memory.Store
	client *oncall.Client
}

// newFixture returns a store holding the bucket machine's registration
// and a client acting as alice.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	b, err := memory.New(memory.Config{Kinds: slices.Concat([]string{kind}, history.Kinds(kind), registry.Kinds())})
	if err != nil {
		t.Fatal(err)
	}
	m, err := sm.New(bucketMachine())
	if err != nil {
		t.Fatal(err)
	}
	reg, _ := json.Marshal(registry.Entry{Kind: kind, Machine: m.Descriptor(), Finalizers: []string{"tend.dev/bucket"}, Presence: "presence/" + kind + "/"})
	if _, err := b.Create(t.Context(), store.Document{Meta: store.Meta{Kind: registry.Kind, Key: kind}, Spec: reg}); err != nil {
		t.Fatal(err)
	}
	c, err := oncall.New(b, oncall.Config{Actor: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{b: b, client: c}
}

// create stores a bucket with the given status, plus a field of the
// user's own that operators must leave alone.
func (f *fixture) create(t *testing.T, key string, st sm.Status[string, string], finalizers ...string) store.Document {
	t.Helper()
	status := map[string]any{"machine": st, "endpoint": "https://b.example"}
	raw, _ := json.Marshal(status["machine"])
	var merged map[string]json.RawMessage
	_ = json.Unmarshal(raw, &merged)
	merged["endpoint"], _ = json.Marshal(status["endpoint"])
	body, _ := json.Marshal(merged)
	doc, err := f.b.Create(t.Context(), store.Document{Meta: store.Meta{Kind: kind, Key: key, Finalizers: finalizers}, Spec: []byte(`{"state":"Present"}`)})
	if err != nil {
		t.Fatal(err)
	}
	doc.Status = body
	if doc, err = f.b.UpdateStatus(t.Context(), doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

func (f *fixture) status(t *testing.T, key string) (sm.Status[string, string], map[string]json.RawMessage) {
	t.Helper()
	doc, err := f.b.Get(t.Context(), kind, key)
	if err != nil {
		t.Fatal(err)
	}
	var st sm.Status[string, string]
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(doc.Status, &st); err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal(doc.Status, &raw)
	return st, raw
}

func (f *fixture) history(t *testing.T, key string) []history.Entry {
	t.Helper()
	h, err := f.client.History(t.Context(), kind, key)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// failing is a bucket whose step tag failed three times.
func failing() sm.Status[string, string] {
	return sm.Status[string, string]{Phase: "Creating", Target: "Present", Since: time.Now(),
		Operation: &sm.Operation[string]{ID: "op1", Phase: "Creating", From: "Creating", Done: []string{"allocate"},
			Attempts: 3, LastError: "quota exceeded", RetryAt: time.Now().Add(time.Hour)}}
}

// faulted is a bucket that failed terminally in step allocate.
func faulted() sm.Status[string, string] {
	op := sm.Operation[string]{ID: "op1", Phase: "Creating", From: "Creating", Attempts: 1}
	return sm.Status[string, string]{Phase: "Failed", Target: "Present", Since: time.Now(),
		Failure: &sm.Failure[string]{Operation: op, Step: "allocate", Cause: sm.CauseTerminal, Reason: "region closed"}}
}

func TestPauseResume(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t)
		f.create(t, "b1", failing())
		for range 2 { // the second pause changes nothing
			if err := f.client.Pause(t.Context(), kind, "b1", "investigating"); err != nil {
				t.Fatal(err)
			}
		}
		st, raw := f.status(t, "b1")
		if st.Paused == nil || st.Paused.By != "alice" || st.Paused.Reason != "investigating" || st.Paused.At.IsZero() {
			t.Fatalf("paused: %+v", st.Paused)
		}
		if string(raw["endpoint"]) != `"https://b.example"` || st.Operation == nil || st.Operation.Attempts != 3 {
			t.Fatalf("the pause changed other fields: %s", raw)
		}
		for range 2 {
			if err := f.client.Resume(t.Context(), kind, "b1"); err != nil {
				t.Fatal(err)
			}
		}
		if st, _ := f.status(t, "b1"); st.Paused != nil {
			t.Fatalf("still paused after resume: %+v", st.Paused)
		}
		var got []string
		for _, e := range f.history(t, "b1") {
			got = append(got, fmt.Sprintf("%s %s %s %s", e.Type, e.Name, e.Actor, e.Phase))
		}
		want := []string{"operator pause alice Creating", "operator resume alice Creating"}
		if !slices.Equal(got, want) {
			t.Fatalf("history %q, want %q", got, want)
		}
	})
}

func TestCommandsChecked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t)
		f.create(t, "failing", failing())
		f.create(t, "faulted", faulted())
		f.create(t, "ready", sm.Status[string, string]{Phase: "Ready", Target: "Present"})
		ctx := t.Context()
		c := f.client
		for _, tc := range []struct {
			name string
			do   func() (sm.Command, error)
			ok   bool
		}{
			{"retry a failing step", func() (sm.Command, error) { return c.Retry(ctx, kind, "failing") }, true},
			{"retry in Fault", func() (sm.Command, error) { return c.Retry(ctx, kind, "faulted") }, true},
			{"retry with nothing failing", func() (sm.Command, error) { return c.Retry(ctx, kind, "ready") }, false},
			{"skip the failing step", func() (sm.Command, error) { return c.Skip(ctx, kind, "failing", "tag") }, true},
			{"skip a step that did not fail", func() (sm.Command, error) { return c.Skip(ctx, kind, "failing", "allocate") }, false},
			{"skip an unknown step", func() (sm.Command, error) { return c.Skip(ctx, kind, "failing", "paint") }, false},
			{"skip the step that failed into Fault", func() (sm.Command, error) { return c.Skip(ctx, kind, "faulted", "allocate") }, true},
			{"move out of Fault", func() (sm.Command, error) { return c.Move(ctx, kind, "faulted", "Ready") }, true},
			{"move to a transitional phase", func() (sm.Command, error) { return c.Move(ctx, kind, "faulted", "Creating") }, false},
			{"move to an unknown phase", func() (sm.Command, error) { return c.Move(ctx, kind, "faulted", "Lost") }, false},
			{"move when not in Fault", func() (sm.Command, error) { return c.Move(ctx, kind, "ready", "Gone") }, false},
			{"a declared request", func() (sm.Command, error) { return c.Request(ctx, kind, "ready", "resize") }, true},
			{"an unknown request", func() (sm.Command, error) { return c.Request(ctx, kind, "ready", "rename") }, false},
		} {
			cmd, err := tc.do()
			if tc.ok != (err == nil) || (!tc.ok && !errors.Is(err, oncall.ErrInvalidAction)) {
				t.Errorf("%s: %v", tc.name, err)
			}
			if tc.ok && (cmd.ID == "" || cmd.By != "alice") {
				t.Errorf("%s: command %+v", tc.name, cmd)
			}
		}
		st, _ := f.status(t, "faulted")
		var verbs []sm.Verb
		for _, cmd := range st.Commands {
			verbs = append(verbs, cmd.Verb)
		}
		if !slices.Equal(verbs, []sm.Verb{sm.VerbRetry, sm.VerbSkip, sm.VerbMove}) {
			t.Fatalf("commands of faulted: %v", verbs)
		}
		if ids := []string{st.Commands[0].ID, st.Commands[1].ID, st.Commands[2].ID}; ids[0] == ids[1] || ids[1] == ids[2] {
			t.Fatalf("command ids not unique: %v", ids)
		}
		var issued int
		for _, e := range f.history(t, "faulted") {
			if e.Outcome == oncall.OutcomeIssued && e.Command != "" {
				issued++
			}
		}
		if issued != 3 {
			t.Fatalf("%d issued commands in history, want 3", issued)
		}
	})
}

func TestRefusals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t)
		f.create(t, "b1", failing())
		ctx := t.Context()
		reader, _ := oncall.New(f.b, oncall.Config{})
		if err := reader.Pause(ctx, kind, "b1", ""); !errors.Is(err, oncall.ErrInvalidConfig) {
			t.Errorf("pause by a client with no actor: %v", err)
		}
		if _, err := f.client.Retry(ctx, kind, "missing"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("retry of a missing document: %v", err)
		}
		if _, err := f.client.Retry(ctx, "Volume", "v1"); !errors.Is(err, registry.ErrUnregistered) {
			t.Errorf("retry of an unregistered kind: %v", err)
		}
		if _, err := oncall.New(nil, oncall.Config{}); !errors.Is(err, oncall.ErrInvalidConfig) {
			t.Errorf("New without a store: %v", err)
		}
	})
}

// TestActionsRaceTheController runs operators' actions against a
// controller that keeps rewriting the whole status from what it read: no
// command is lost or doubled, whatever the interleaving.
func TestActionsRaceTheController(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		f := newFixture(t)
		f.create(t, "b1", failing())
		ctx := context.Background()
		n := rapid.IntRange(1, 6).Draw(rt, "commands")
		writes := rapid.IntRange(0, 30).Draw(rt, "controller writes")
		var wg sync.WaitGroup
		ids := make(chan string, n)
		for range n {
			wg.Go(func() {
				cmd, err := f.client.Retry(ctx, kind, "b1")
				if err != nil {
					rt.Errorf("retry: %v", err)
					return
				}
				ids <- cmd.ID
			})
		}
		wg.Go(func() { // the controller: read, change its own fields, write
			for i := 0; i < writes; {
				doc, err := f.b.Get(ctx, kind, "b1")
				if err != nil {
					rt.Errorf("get: %v", err)
					return
				}
				var st sm.Status[string, string]
				_ = json.Unmarshal(doc.Status, &st)
				st.Operation.LastError = fmt.Sprint("attempt ", i)
				doc.Status, _ = json.Marshal(st)
				if _, err := f.b.UpdateStatus(ctx, doc); err == nil {
					i++
				} else if !errors.Is(err, store.ErrConflict) {
					rt.Errorf("update: %v", err)
					return
				}
			}
		})
		wg.Wait()
		close(ids)
		var want []string
		for id := range ids {
			want = append(want, id)
		}
		st, _ := f.status(t, "b1")
		var got []string
		for _, c := range st.Commands {
			got = append(got, c.ID)
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			rt.Fatalf("commands in status %v, issued %v", got, want)
		}
	})
}

func TestRemoveFinalizer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t)
		ctx := t.Context()
		f.create(t, "b1", faulted(), "tend.dev/bucket", "tend.dev/backup")
		if err := f.b.Delete(ctx, kind, "b1", store.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		lease, err := f.b.AcquireLease(ctx, "presence/"+kind+"/replica-1", "replica-1", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if served, err := f.client.Served(ctx, kind); err != nil || !served {
			t.Fatalf("served with a live presence lease: %v %v", served, err)
		}
		if err := f.client.RemoveFinalizer(ctx, kind, "b1", "tend.dev/bucket", false); !errors.Is(err, oncall.ErrServed) {
			t.Fatalf("removal while served: %v, want ErrServed", err)
		}
		if err := f.client.RemoveFinalizer(ctx, kind, "b1", "tend.dev/backup", true); err != nil {
			t.Fatalf("forced removal: %v", err)
		}
		_ = lease
		time.Sleep(2 * time.Minute) // the replica died: its lease expired
		if served, _ := f.client.Served(ctx, kind); served {
			t.Fatal("served after the presence lease expired")
		}
		if err := f.client.RemoveFinalizer(ctx, kind, "b1", "tend.dev/missing", false); !errors.Is(err, oncall.ErrInvalidAction) {
			t.Fatalf("removal of a finalizer the document lacks: %v", err)
		}
		if err := f.client.RemoveFinalizer(ctx, kind, "b1", "tend.dev/bucket", false); err != nil {
			t.Fatalf("removal once no controller serves the kind: %v", err)
		}
		if _, err := f.b.Get(ctx, kind, "b1"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a deleted document without finalizers is still there: %v", err)
		}
	})
}

// TestWait checks that Wait returns the controller's outcome once the
// command left the status, and no sooner.
func TestWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t)
		ctx := t.Context()
		f.create(t, "b1", failing())
		cmd, err := f.client.Retry(ctx, kind, "b1")
		if err != nil {
			t.Fatal(err)
		}
		var (
			got     history.Entry
			waitErr error
			done    = make(chan struct{})
		)
		go func() {
			defer close(done)
			got, waitErr = f.client.Wait(ctx, kind, "b1", cmd.ID)
		}()
		synctest.Wait()
		select {
		case <-done:
			t.Fatalf("Wait returned before the controller acted: %+v %v", got, waitErr)
		default:
		}
		// The controller carries the command out, then records it.
		doc, _ := f.b.Get(ctx, kind, "b1")
		var st sm.Status[string, string]
		_ = json.Unmarshal(doc.Status, &st)
		st.Commands, st.Operation.Attempts, st.Operation.RetryAt = nil, 0, time.Time{}
		doc.Status, _ = json.Marshal(st)
		if _, err := f.b.UpdateStatus(ctx, doc); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		rec, _ := history.NewRecorder(f.b, history.RecorderConfig{})
		if err := rec.Append(ctx, kind, "b1", doc.Meta.UID, history.Entry{Type: history.Operator, Name: "retry", Command: cmd.ID, Outcome: oncall.OutcomeApplied}); err != nil {
			t.Fatal(err)
		}
		<-done
		if waitErr != nil || got.Outcome != oncall.OutcomeApplied || got.Command != cmd.ID {
			t.Fatalf("Wait: %+v %v", got, waitErr)
		}
	})
}

func TestDecodeNumbers(t *testing.T) {
	doc := store.Document{Meta: store.Meta{Kind: kind, Key: "b1"},
		Status: []byte(`{"phase":3,"target":1,"operation":{"id":"x","phase":3,"from":2},"refused":{"intent":2,"reason":"no"},"extra":true}`)}
	o, err := oncall.Decode(doc)
	if err != nil {
		t.Fatal(err)
	}
	if o.Phase != "3" || o.State != "1" || o.Operation.From != "2" || o.Refused.Intent != "2" {
		t.Fatalf("decoded %+v", o)
	}
	if _, err := oncall.Decode(store.Document{Status: []byte(`[1]`)}); err == nil {
		t.Fatal("a status that is not an object decoded")
	}
	if o, err := oncall.Decode(store.Document{}); err != nil || o.Phase != "" {
		t.Fatalf("empty status: %+v %v", o, err)
	}
}

func TestStuck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, err := sm.New(bucketMachine())
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		for _, tc := range []struct {
			st   sm.Status[string, string]
			want string
		}{
			{sm.Status[string, string]{Phase: "Ready", Target: "Present"}, ""},
			{failing(), "failing: step tag, attempt 3: quota exceeded"},
			{faulted(), "fault: terminal: region closed"},
			{sm.Status[string, string]{Phase: "Ready", Target: "Present", Paused: &sm.Pause{By: "bob", Reason: "disk"}}, "paused by bob: disk"},
			{sm.Status[string, string]{Phase: "Gone", Target: "Absent", Refused: &sm.Refusal[string]{Intent: "Present", Reason: "stays deleted"}}, "refused: intent Present: stays deleted"},
			{sm.Status[string, string]{Phase: "Resizing", Target: "Present", Since: now.Add(-2 * sm.DefaultDeadline),
				Operation: &sm.Operation[string]{ID: "o", Phase: "Resizing", From: "Ready"}}, "past deadline"},
		} {
			raw, _ := json.Marshal(tc.st)
			o, err := oncall.Decode(store.Document{Status: raw})
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Join(o.Stuck(m, now), "; ")
			if (tc.want == "") != (got == "") || !strings.HasPrefix(got, tc.want) {
				t.Errorf("%s: stuck %q, want %q", tc.st.Phase, got, tc.want)
			}
		}
	})
}

func TestRegistrations(t *testing.T) {
	f := newFixture(t)
	regs, err := f.client.Registrations(t.Context())
	if err != nil || len(regs) != 1 || regs[0].Kind != kind {
		t.Fatalf("registrations: %+v %v", regs, err)
	}
	m, err := f.client.Machine(t.Context(), kind)
	if err != nil || m.Name() != kind {
		t.Fatalf("machine: %v", err)
	}
	bare, _ := memory.New(memory.Config{Kinds: []string{kind}})
	c, _ := oncall.New(bare, oncall.Config{})
	if regs, err := c.Registrations(t.Context()); err != nil || len(regs) != 0 {
		t.Fatalf("a store without registrations: %+v %v", regs, err)
	}
	if _, err := c.Registration(t.Context(), kind); !errors.Is(err, registry.ErrUnregistered) {
		t.Fatalf("registration from a store without them: %v", err)
	}
}
