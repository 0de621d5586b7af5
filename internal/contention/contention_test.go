package contention_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/history"
	"github.com/tendhq/tend/internal/contention"
	"github.com/tendhq/tend/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var sized = contention.Config{Operators: 6, Commands: 8, Replicas: 2, Timeout: time.Minute}

func newStore(t *testing.T) *memory.Store {
	t.Helper()
	b, err := memory.New(memory.Config{Kinds: contention.Kinds()})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestContention: 6 operators × 8 commands × 2 replicas on one document,
// every command's issued and outcome entries in its history exactly once.
func TestContention(t *testing.T) {
	if err := contention.Check(t.Context(), newStore(t), sized); err != nil {
		t.Fatal(err)
	}
}

// slow is a store whose writes take a millisecond, as a store across a
// network does, so that writers overlap and conflict.
type slow struct{ store.Backend }

func (s slow) Create(ctx context.Context, doc store.Document) (store.Document, error) {
	time.Sleep(time.Millisecond)
	return s.Backend.Create(ctx, doc)
}

func (s slow) UpdateSpec(ctx context.Context, doc store.Document) (store.Document, error) {
	time.Sleep(time.Millisecond)
	return s.Backend.UpdateSpec(ctx, doc)
}

func (s slow) UpdateStatus(ctx context.Context, doc store.Document) (store.Document, error) {
	time.Sleep(time.Millisecond)
	return s.Backend.UpdateStatus(ctx, doc)
}

// TestContentionSlowStore runs the check on a store whose writes take a
// millisecond: many more of them conflict.
func TestContentionSlowStore(t *testing.T) {
	if err := contention.Check(t.Context(), slow{newStore(t)}, sized); err != nil {
		t.Fatal(err)
	}
}

// TestContentionLyingStore runs the check on a store that reports every
// third history write failed although it stored it.
func TestContentionLyingStore(t *testing.T) {
	if err := contention.Check(t.Context(), &contention.Lying{Backend: newStore(t), Every: 3}, sized); err != nil {
		t.Fatal(err)
	}
}

// TestContentionCatchesLostWrite plants a store that loses the history
// write carrying the first outcome: the check finds it missing.
func TestContentionCatchesLostWrite(t *testing.T) {
	err := contention.Check(t.Context(), &losing{Backend: newStore(t)}, sized)
	if err == nil || !strings.Contains(err.Error(), "0 outcome entries") {
		t.Fatalf("a store losing a history write: %v, want an outcome missing", err)
	}
}

// TestContentionCatchesIdless plants a store that drops entry ids, under
// history writes stored but reported failed: the check finds entries
// doubled.
func TestContentionCatchesIdless(t *testing.T) {
	err := contention.Check(t.Context(), &contention.Lying{Backend: idless{newStore(t)}, Every: 3}, sized)
	if err == nil || !strings.Contains(err.Error(), "not recorded exactly once") {
		t.Fatalf("a store dropping entry ids: %v, want entries doubled", err)
	}
}

// isHistory reports whether doc is a history document.
func isHistory(doc store.Document) bool { return strings.HasSuffix(doc.Meta.Kind, history.KindSuffix) }

// losing is a store that reports the first history write holding an
// applied outcome stored, and stores nothing.
type losing struct {
	store.Backend

	mu   sync.Mutex // guards lost
	lost bool
}

func (l *losing) UpdateSpec(ctx context.Context, doc store.Document) (store.Document, error) {
	if isHistory(doc) && strings.Contains(string(doc.Spec), `"outcome":"applied"`) {
		l.mu.Lock()
		lose := !l.lost
		l.lost = true
		l.mu.Unlock()
		if lose {
			doc.Meta.Revision++
			return doc, nil
		}
	}
	return l.Backend.UpdateSpec(ctx, doc)
}

// idless is a store that drops the ids of history entries.
type idless struct{ store.Backend }

func strip(doc store.Document) store.Document {
	if !isHistory(doc) {
		return doc
	}
	var l map[string]any
	if json.Unmarshal(doc.Spec, &l) == nil {
		if entries, ok := l["entries"].([]any); ok {
			for _, e := range entries {
				if e, ok := e.(map[string]any); ok {
					delete(e, "id")
				}
			}
		}
		delete(l, "gone")
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
