package echoes

import (
	"errors"
	"fmt"
	"testing"
)

// TestEchoes: events of the driver's own writes are known, including one
// that arrives while the write is still in flight; a newer one that arrived
// meanwhile is queued once the write returns, and a later one passes.
func TestEchoes(t *testing.T) {
	var e Tracker
	queued := 0
	requeue := func() { queued++ }
	if e.Known("k", 5, requeue) {
		t.Fatal("an event of a key never written is known")
	}
	_ = e.Write("k", func() (int64, error) {
		if !e.Known("k", 7, requeue) { // the write's own event, before it returns
			t.Error("an event during a write is not held")
		}
		return 7, nil
	})
	if queued != 0 || !e.Known("k", 7, requeue) || !e.Known("k", 6, requeue) {
		t.Fatalf("own write: queued %d, known 7 %v", queued, e.Known("k", 7, requeue))
	}
	_ = e.Write("k", func() (int64, error) {
		e.Known("k", 9, requeue) // another writer's, right after ours
		return 8, nil
	})
	if queued != 1 {
		t.Fatalf("a newer event held during the write was queued %d times, want once", queued)
	}
	if e.Known("k", 10, requeue) {
		t.Fatal("a later event is taken for the driver's own")
	}
	_ = e.Write("k", func() (int64, error) {
		e.Known("k", 11, requeue)
		return 0, errors.New("conflict")
	})
	if queued != 2 {
		t.Fatalf("an event held during a failed write was not queued (%d)", queued)
	}
	e.Forget("k")
	if e.Known("k", 1, requeue) {
		t.Fatal("a forgotten key is known")
	}
}

// TestEchoesOfARemoval checks that the events of a document the driver
// removed, arriving after it forgot the key, are known as its own, that a
// new document under the key is not, and that the last 1,024 removals are
// remembered.
func TestEchoesOfARemoval(t *testing.T) {
	var e Tracker
	if err := e.Write("k", func() (int64, error) { return 5, nil }); err != nil {
		t.Fatal(err)
	}
	e.Removal("uid-1")
	e.Forget("k")
	if e.Known("k", 6, func() {}) || !e.WasRemoved("uid-1") {
		t.Error("the removal's own event (revision 6, uid-1) is not recognised")
	}
	if e.WasRemoved("uid-2") {
		t.Error("a new document under the key is taken for the removed one")
	}
	for i := range RemovedUIDs {
		e.Removal(fmt.Sprint("other-", i))
	}
	if e.WasRemoved("uid-1") || !e.WasRemoved("other-0") || !e.WasRemoved(fmt.Sprint("other-", RemovedUIDs-1)) {
		t.Errorf("after %d more removals: uid-1 %v, other-0 %v", RemovedUIDs, e.WasRemoved("uid-1"), e.WasRemoved("other-0"))
	}
}
