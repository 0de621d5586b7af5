package history_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/tendhq/tend/history"
	"github.com/tendhq/tend/store"
)

// poll records one poll of step: its start and its end with outcome.
func poll(rec *history.Recorder, uid string, at time.Time, step, outcome, err string) {
	rec.Record(kind, "gw", uid, history.Entry{Time: at, Type: history.StepStarted, Phase: "Starting", Step: step})
	rec.Record(kind, "gw", uid, history.Entry{Time: at.Add(time.Millisecond), Type: history.StepEnded, Phase: "Starting",
		Step: step, Outcome: outcome, Error: err})
}

// TestPollsCollapse polls a step 40 times, then once with another outcome:
// the 40 polls are one start and one end counted 40 times, from the first
// end to the last.
func TestPollsCollapse(t *testing.T) {
	b := newStore(t)
	doc := create(t, b, "gw")
	rec, _ := history.NewRecorder(b, history.RecorderConfig{})
	at := time.Now().Add(-time.Hour)
	for i := range 40 {
		poll(rec, doc.Meta.UID, at.Add(time.Duration(i)*time.Second), "activate", "progressed", "")
		if i%7 == 0 {
			rec.Flush(t.Context()) // polls collapse across writes too
		}
	}
	poll(rec, doc.Meta.UID, at.Add(time.Minute), "activate", "done", "")
	rec.Flush(t.Context())
	got := read(t, b, "gw")
	if len(got) != 4 {
		t.Fatalf("%d entries, want 4: %v", len(got), got)
	}
	polls := got[1]
	if got[0].Type != history.StepStarted || !got[0].Time.Equal(at) || polls.Outcome != "progressed" || polls.Count != 40 ||
		!polls.First.Equal(at.Add(time.Millisecond)) || !polls.Time.Equal(at.Add(39*time.Second+time.Millisecond)) {
		t.Fatalf("collapsed polls: %v", got[:2])
	}
	if s := polls.String(); !strings.Contains(s, "outcome=progressed ×40 first=") {
		t.Errorf("collapsed polls read %q", s)
	}
	if got[3].Outcome != "done" || got[3].Times() != 1 {
		t.Fatalf("the poll that ended otherwise: %v", got[3])
	}
}

// storyEntries are what a document's story is made of: nothing routine.
var storyEntries = []history.Entry{
	{Type: history.Transition, Phase: "Stopped", To: "Starting"},
	{Type: history.StepEnded, Phase: "Starting", Step: "deploy", Outcome: "failed", Error: "quota"},
	{Type: history.Refused, Phase: "Starting", Intent: "Deleted", Reason: "starting"},
	{Type: history.Operator, Name: "pause", Actor: "ann"},
	{Type: history.Request, Name: "rotate", Outcome: "served"},
	{Type: history.Timer, Name: "renew"},
}

// checkStory records the story, then 300 polls of two steps that alternate
// so that none collapse, with MaxEntries 20, and returns an error unless
// the story is kept whole.
func checkStory(ctx context.Context, b store.Backend, uid string) error {
	rec, _ := history.NewRecorder(b, history.RecorderConfig{MaxEntries: 20})
	at := time.Now().Add(-time.Hour)
	for i, e := range storyEntries {
		e.Time = at.Add(time.Duration(i) * time.Second)
		rec.Record(kind, "gw", uid, e)
	}
	rec.Flush(ctx)
	for i := range 300 {
		poll(rec, uid, at.Add(time.Minute+time.Duration(i)*time.Second), fmt.Sprint("step-", i%2), "progressed", "")
		if i%10 == 0 {
			rec.Flush(ctx)
		}
	}
	rec.Flush(ctx)
	got, err := history.NewReader(b).History(ctx, kind, "gw")
	if err != nil {
		return err
	}
	if len(got) != 20 {
		return fmt.Errorf("%d entries kept, want 20", len(got))
	}
	for i, want := range storyEntries {
		if got[i].Type != want.Type || got[i].Name != want.Name || got[i].Error != want.Error {
			return fmt.Errorf("entry %d is %v, want the story's %v", i, got[i], want)
		}
	}
	if last := got[19]; last.Type != history.StepEnded || last.Step != "step-1" {
		return fmt.Errorf("the newest entry is %v, want the last poll's end", last)
	}
	return nil
}

// TestPollsDoNotPushOutTheStory checks that a full history gives up its
// polls before its story.
func TestPollsDoNotPushOutTheStory(t *testing.T) {
	b := newStore(t)
	doc := create(t, b, "gw")
	if err := checkStory(t.Context(), b, doc.Meta.UID); err != nil {
		t.Fatal(err)
	}
}

// newestOnly is a store that keeps only the newest entries of a history,
// as a retention rule that ignores the story would.
type newestOnly struct{ store.Backend }

func (s newestOnly) UpdateSpec(ctx context.Context, doc store.Document) (store.Document, error) {
	var l struct {
		Entries []json.RawMessage `json:"entries"`
	}
	if json.Unmarshal(doc.Spec, &l) == nil && len(l.Entries) > 10 {
		doc.Spec, _ = json.Marshal(map[string]any{"entries": l.Entries[len(l.Entries)-10:]})
	}
	return s.Backend.UpdateSpec(ctx, doc)
}

// TestPollsDoNotPushOutTheStoryCatches plants a store that keeps the newest
// entries only: checkStory finds the story lost.
func TestPollsDoNotPushOutTheStoryCatches(t *testing.T) {
	b := newStore(t)
	doc := create(t, b, "gw")
	if err := checkStory(t.Context(), newestOnly{b}, doc.Meta.UID); err == nil {
		t.Fatal("a store keeping only the newest entries passes the story check")
	}
}

// lying is a store whose history writes are stored but, when lie says so,
// reported failed, as when a connection drops after the commit.
type lying struct {
	store.Backend
	lie bool
}

var errLost = errors.New("connection lost after commit")

func (s *lying) Create(ctx context.Context, doc store.Document) (store.Document, error) {
	out, err := s.Backend.Create(ctx, doc)
	if err == nil && s.lie {
		return store.Document{}, errLost
	}
	return out, err
}

func (s *lying) UpdateSpec(ctx context.Context, doc store.Document) (store.Document, error) {
	out, err := s.Backend.UpdateSpec(ctx, doc)
	if err == nil && s.lie {
		return store.Document{}, errLost
	}
	return out, err
}

// idless is a store that loses the ids of history entries.
type idless struct{ store.Backend }

func strip(doc store.Document) store.Document {
	var l struct {
		Entries []map[string]any `json:"entries"`
	}
	if json.Unmarshal(doc.Spec, &l) == nil {
		for _, e := range l.Entries {
			delete(e, "id")
		}
		doc.Spec, _ = json.Marshal(l)
	}
	return doc
}

func (s idless) Create(ctx context.Context, doc store.Document) (store.Document, error) {
	return s.Backend.Create(ctx, strip(doc))
}

func (s idless) UpdateSpec(ctx context.Context, doc store.Document) (store.Document, error) {
	return s.Backend.UpdateSpec(ctx, strip(doc))
}

// write records batches of entries through a recorder on wrap(store) and
// flushes after each batch, the store reporting the flushes lies marks as
// failed although it stored them; it flushes until nothing waits, and
// returns the history, without ids.
func write(t tb, wrap func(store.Backend) store.Backend, batches [][]history.Entry, lies []bool) []history.Entry {
	mem := newStore(t)
	doc := create(t, mem, "gw")
	l := &lying{Backend: wrap(mem)}
	rec, err := history.NewRecorder(l, history.RecorderConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for i, batch := range batches {
		for _, e := range batch {
			rec.Record(kind, "gw", doc.Meta.UID, e)
		}
		l.lie = lies[i]
		rec.Flush(context.Background())
	}
	l.lie = false
	if n := rec.Flush(context.Background()); n != 0 {
		t.Fatal(n, "entries unwritten")
	}
	got := read(t, mem, "gw")
	for i := range got {
		got[i].ID = ""
	}
	return got
}

// entries draws batches of entries, in time order, among them polls that
// collapse.
func entries(t *rapid.T) [][]history.Entry {
	at := time.Now().Add(-time.Hour)
	types := []history.Type{history.StepStarted, history.StepEnded, history.Transition, history.Operator}
	return rapid.SliceOfN(rapid.Custom(func(t *rapid.T) []history.Entry {
		return rapid.SliceOfN(rapid.Custom(func(t *rapid.T) history.Entry {
			at = at.Add(time.Second)
			return history.Entry{Time: at, Type: rapid.SampledFrom(types).Draw(t, "type"),
				Step: rapid.SampledFrom([]string{"a", "b"}).Draw(t, "step"), Outcome: "progressed"}
		}), 0, 8).Draw(t, "batch")
	}), 1, 8).Draw(t, "batches")
}

// TestWritesIdempotent writes random entries through a store that reports
// some of the writes it stored as failed: the history is the one written
// without failures, each entry once.
func TestWritesIdempotent(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		batches := entries(rt)
		lies := rapid.SliceOfN(rapid.Bool(), len(batches), len(batches)).Draw(rt, "lies")
		same := func(b store.Backend) store.Backend { return b }
		want := write(rt, same, batches, make([]bool, len(batches)))
		if got := write(rt, same, batches, lies); !cmp.Equal(got, want) {
			rt.Fatalf("with writes reported failed (-want +got):\n%s", cmp.Diff(want, got))
		}
	})
}

// TestWritesIdempotentCatches plants a store that loses entry ids: a write
// stored but reported failed doubles its entries.
func TestWritesIdempotentCatches(t *testing.T) {
	at := time.Now().Add(-time.Hour)
	batches := [][]history.Entry{{{Time: at, Type: history.Transition, To: "A"}}, {{Time: at.Add(time.Second), Type: history.Transition, To: "B"}}}
	wrap := func(b store.Backend) store.Backend { return idless{b} }
	want := write(t, wrap, batches, []bool{false, false})
	if got := write(t, wrap, batches, []bool{true, false}); cmp.Equal(got, want) {
		t.Fatalf("a store losing entry ids keeps one of each entry: %v", got)
	}
}
