package history_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/history"
	"github.com/tendhq/tend/internal/wait"
	"github.com/tendhq/tend/store"
)

const kind = "Gateway"

// tb is what the helpers need of a *testing.T or a *rapid.T.
type tb interface {
	Helper()
	Fatal(args ...any)
}

func newStore(t tb) *memory.Store {
	t.Helper()
	b, err := memory.New(memory.Config{Kinds: append([]string{kind}, history.Kinds(kind)...)})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func create(t tb, b store.Backend, key string) store.Document {
	t.Helper()
	doc, err := b.Create(context.Background(), store.Document{Meta: store.Meta{Kind: kind, Key: key}, Spec: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func read(t tb, b store.Backend, key string) []history.Entry {
	t.Helper()
	entries, err := history.NewReader(b).History(context.Background(), kind, key)
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

func steps(entries []history.Entry) string {
	var out []string
	for _, e := range entries {
		out = append(out, e.Step)
	}
	return strings.Join(out, ",")
}

// TestRetention checks the documented rule: at most MaxEntries, the newest,
// and none older than MaxAge, applied on each write.
func TestRetention(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newStore(t)
		doc := create(t, b, "gw")
		rec, err := history.NewRecorder(b, history.RecorderConfig{MaxEntries: 3, MaxAge: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 5 {
			rec.Record(kind, "gw", doc.Meta.UID, history.Entry{Type: history.StepStarted, Step: fmt.Sprint(i)})
		}
		rec.Flush(t.Context())
		if got := steps(read(t, b, "gw")); got != "2,3,4" {
			t.Fatalf("after 5 entries with MaxEntries 3: %s, want 2,3,4", got)
		}

		time.Sleep(50 * time.Minute)
		rec.Record(kind, "gw", doc.Meta.UID, history.Entry{Type: history.StepStarted, Step: "5"})
		rec.Flush(t.Context())
		if got := steps(read(t, b, "gw")); got != "3,4,5" {
			t.Fatalf("got %s, want 3,4,5", got)
		}
		time.Sleep(20 * time.Minute) // 2, 3 and 4 are 70 minutes old
		rec.Record(kind, "gw", doc.Meta.UID, history.Entry{Type: history.StepStarted, Step: "6"})
		rec.Flush(t.Context())
		if got := steps(read(t, b, "gw")); got != "5,6" {
			t.Fatalf("after an hour: %s, want 5,6", got)
		}
	})
}

func TestOwnerAndNewLife(t *testing.T) {
	ctx := t.Context()
	b := newStore(t)
	doc := create(t, b, "gw")
	rec, _ := history.NewRecorder(b, history.RecorderConfig{})
	rec.Record(kind, "gw", doc.Meta.UID, history.Entry{Type: history.Transition, Phase: "A", To: "B"})
	rec.Flush(ctx)
	h, err := b.Get(ctx, history.KindFor(kind), "gw")
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Meta.Owners) != 1 || h.Meta.Owners[0] != (store.OwnerRef{Kind: kind, Key: "gw", UID: doc.Meta.UID}) {
		t.Fatalf("owners %+v, want the document", h.Meta.Owners)
	}

	// Created again under the same key: a new history.
	if err := b.Delete(ctx, kind, "gw", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	again := create(t, b, "gw")
	rec.Record(kind, "gw", again.Meta.UID, history.Entry{Type: history.Transition, Phase: "X", To: "Y"})
	rec.Flush(ctx)
	entries := read(t, b, "gw")
	if len(entries) != 1 || entries[0].Phase != "X" {
		t.Fatalf("history of the new document: %v", entries)
	}
	if got, _ := history.NewReader(b).History(ctx, kind, "never"); got != nil {
		t.Fatalf("history of a document never recorded: %v", got)
	}
}

// start runs rec until the returned stop is called. stop returns once Run
// has, and fails the test if Run returned an error.
func start(t *testing.T, rec *history.Recorder) (stop func()) {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- rec.Run(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run: %v", err)
		}
	}
}

// failing fails every write of a history.
type failing struct {
	store.Backend
	fail bool
}

var errDown = errors.New("store down")

func (f *failing) Create(ctx context.Context, doc store.Document) (store.Document, error) {
	if f.fail {
		return store.Document{}, errDown
	}
	return f.Backend.Create(ctx, doc)
}

func (f *failing) UpdateSpec(ctx context.Context, doc store.Document) (store.Document, error) {
	if f.fail {
		return store.Document{}, errDown
	}
	return f.Backend.UpdateSpec(ctx, doc)
}

func TestDropsCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newStore(t)
		doc := create(t, mem, "gw")
		b := &failing{Backend: mem, fail: true}
		var stats func() history.RecorderStats
		rec, err := history.NewRecorder(b, history.RecorderConfig{BufferSize: 4, Metrics: trackFunc(func(s func() history.RecorderStats) error {
			stats = s
			return nil
		})})
		if err != nil {
			t.Fatal(err)
		}
		rec.Record(kind, "gw", doc.Meta.UID, history.Entry{Type: history.Transition, To: "A"})
		for i := range 4 { // two routine entries are pushed out of the buffer
			rec.Record(kind, "gw", doc.Meta.UID, history.Entry{Type: history.StepStarted, Step: fmt.Sprint(i)})
		}
		rec.Record(kind, "gw", doc.Meta.UID, history.Entry{Type: history.Transition, To: "B"})
		stop := start(t, rec)
		synctest.Wait()
		if got, want := stats(), (history.RecorderStats{DroppedBufferFull: 2}); got != want {
			t.Errorf("while the store is down: stats %+v, want %+v (the failed write waits)", got, want)
		}

		// The store is back: the waiting entries are written after the pause;
		// a routine one makes room for the next.
		b.fail = false
		rec.Record(kind, "gw", doc.Meta.UID, history.Entry{Type: history.StepEnded, Step: "3"})
		time.Sleep(history.DefaultFlushInterval)
		synctest.Wait()
		got := read(t, mem, "gw")
		if len(got) != 4 || got[0].To != "A" || steps(got) != ",3,,3" {
			t.Fatalf("after the store came back: %v", got)
		}

		// Entries left when Run stops are written on the way out; those the
		// store refuses are dropped.
		rec.Record(kind, "gw", doc.Meta.UID, history.Entry{Type: history.Transition})
		rec.Record("Unknown", "gw", doc.Meta.UID, history.Entry{Type: history.Transition})
		stop()
		if got := read(t, mem, "gw"); len(got) != 5 {
			t.Fatalf("after Run stopped: %v, want 5 entries", got)
		}
		if got, want := stats(), (history.RecorderStats{Written: 5, DroppedBufferFull: 3, DroppedWriteFailed: 1}); got != want {
			t.Errorf("stats %+v, want %+v", got, want)
		}
	})
}

// TestUnwrittenAtStopDropped stops a recorder while the store is down: the
// entries it could not write are dropped and counted.
func TestUnwrittenAtStopDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newStore(t)
		doc := create(t, mem, "gw")
		rec, err := history.NewRecorder(&failing{Backend: mem, fail: true}, history.RecorderConfig{})
		if err != nil {
			t.Fatal(err)
		}
		rec.Record(kind, "gw", doc.Meta.UID, history.Entry{Type: history.Transition})
		stop := start(t, rec)
		time.Sleep(10 * time.Second)
		stop()
		if got := rec.Dropped(history.DropWriteFailed); got != 1 {
			t.Fatalf("%d dropped for a failed write, want 1", got)
		}
	})
}

// trackFunc is a history.MetricsProvider.
type trackFunc func(stats func() history.RecorderStats) error

func (f trackFunc) Track(stats func() history.RecorderStats) error { return f(stats) }

func TestMetricsRefused(t *testing.T) {
	refused := errors.New("taken")
	_, err := history.NewRecorder(newStore(t), history.RecorderConfig{Metrics: trackFunc(func(func() history.RecorderStats) error { return refused })})
	if !errors.Is(err, refused) {
		t.Fatalf("NewRecorder: %v, want the provider's error", err)
	}
}

func TestFieldsBounded(t *testing.T) {
	b := newStore(t)
	doc := create(t, b, "gw")
	rec, _ := history.NewRecorder(b, history.RecorderConfig{})
	rec.Record(kind, "gw", doc.Meta.UID, history.Entry{Type: history.StepEnded, Error: strings.Repeat("é", history.MaxFieldLen)})
	rec.Flush(t.Context())
	e := read(t, b, "gw")[0]
	if len(e.Error) > history.MaxFieldLen || !strings.HasSuffix(e.Error, "…") {
		t.Fatalf("error of %d bytes kept, want at most %d ending with …", len(e.Error), history.MaxFieldLen)
	}
}

func TestUnknownKind(t *testing.T) {
	b, _ := memory.New(memory.Config{Kinds: []string{kind}})
	if _, err := history.NewReader(b).History(t.Context(), kind, "gw"); !errors.Is(err, store.ErrUnknownKind) {
		t.Fatalf("got %v, want ErrUnknownKind", err)
	}
	if _, err := history.NewRecorder(nil, history.RecorderConfig{}); !errors.Is(err, history.ErrInvalidConfig) {
		t.Fatalf("got %v, want ErrInvalidConfig", err)
	}
}

// TestAppend checks that Append stores its entries before it returns, with
// the recorder's retention and replica, without Run.
func TestAppend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newStore(t)
		doc := create(t, b, "gw")
		rec, err := history.NewRecorder(b, history.RecorderConfig{MaxEntries: 2, Replica: "cli"})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if err := rec.Append(t.Context(), kind, "gw", doc.Meta.UID, history.Entry{Type: history.Operator, Name: "pause", Step: fmt.Sprint(i), Actor: "alice"}); err != nil {
				t.Fatal(err)
			}
		}
		got := read(t, b, "gw")
		if steps(got) != "1,2" || got[1].Replica != "cli" || got[1].Actor != "alice" || got[1].Time.IsZero() {
			t.Fatalf("after 3 appends with MaxEntries 2: %+v", got)
		}
		if err := rec.Append(t.Context(), "Unknown", "gw", "", history.Entry{Type: history.Operator}); !errors.Is(err, store.ErrUnknownKind) {
			t.Fatalf("append to an unconfigured kind: %v, want store.ErrUnknownKind", err)
		}
	})
}

// slow is a store whose history writes take a second, and honour their
// context like a real store's.
type slow struct{ store.Backend }

func (s slow) Create(ctx context.Context, doc store.Document) (store.Document, error) {
	if err := wait.Sleep(ctx, time.Second); err != nil {
		return store.Document{}, err
	}
	return s.Backend.Create(ctx, doc)
}

func (s slow) UpdateSpec(ctx context.Context, doc store.Document) (store.Document, error) {
	if err := wait.Sleep(ctx, time.Second); err != nil {
		return store.Document{}, err
	}
	return s.Backend.UpdateSpec(ctx, doc)
}

// TestStopDuringWrite stops the recorder while it writes: the write in
// flight completes, and no entry is dropped.
func TestStopDuringWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newStore(t)
		doc := create(t, mem, "gw")
		rec, err := history.NewRecorder(slow{mem}, history.RecorderConfig{})
		if err != nil {
			t.Fatal(err)
		}
		stop := start(t, rec)
		rec.Record(kind, "gw", doc.Meta.UID, history.Entry{Type: history.Transition, To: "Started"})
		time.Sleep(500 * time.Millisecond) // the write is half done
		stop()
		if got := read(t, mem, "gw"); len(got) != 1 || rec.Dropped(history.DropWriteFailed) != 0 {
			t.Fatalf("stopped during a write: history %v, %d dropped", got, rec.Dropped(history.DropWriteFailed))
		}
	})
}

// TestFlushWaitsForRunsFlush calls Flush while Run's flush is writing an
// entry: Flush returns once that entry is stored, not at once because no
// entry waits in the buffer.
func TestFlushWaitsForRunsFlush(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newStore(t)
		doc := create(t, mem, "gw")
		const interval = time.Second
		rec, err := history.NewRecorder(slow{mem}, history.RecorderConfig{FlushInterval: interval})
		if err != nil {
			t.Fatal(err)
		}
		stop := start(t, rec)
		rec.Record(kind, "gw", doc.Meta.UID, history.Entry{Type: history.Transition, To: "Started"})
		synctest.Wait() // Run's flush writes the entry
		if n := rec.Flush(t.Context()); n != 0 {
			t.Errorf("Flush: %d unwritten", n)
		}
		if got := read(t, mem, "gw"); len(got) != 1 {
			t.Errorf("after Flush, history %v, want the entry recorded before it", got)
		}
		// A flush that cannot wait for the one under way writes nothing
		// and says how many entries wait.
		rec.Record(kind, "gw", doc.Meta.UID, history.Entry{Type: history.Transition, To: "Stopped"})
		time.Sleep(interval) // Run's pause after a flush
		synctest.Wait()      // Run's flush writes the entry
		rec.Record(kind, "gw", doc.Meta.UID, history.Entry{Type: history.Transition, To: "Started"})
		impatient, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		if n := rec.Flush(impatient); n != 1 {
			t.Errorf("Flush given up while another writes: %d unwritten, want 1", n)
		}
		stop()
		if got := read(t, mem, "gw"); len(got) != 3 {
			t.Errorf("after Run stopped, history %v, want 3 entries", got)
		}
	})
}
