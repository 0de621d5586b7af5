package etcd

import (
	"fmt"
	"testing"
)

// TestRecent: a remembered document is returned only at its revision, an
// older revision never replaces a newer one, forget drops it, and the
// memory stays within recentSize documents.
func TestRecent(t *testing.T) {
	var r recent
	if _, ok := r.get("a", 1); ok {
		t.Fatal("an empty memory returned a document")
	}
	r.put("a", 5, "five")
	r.put("a", 3, "three")
	if v, ok := r.get("a", 5); !ok || v != "five" {
		t.Fatalf("get at 5: %q, %v; want five", v, ok)
	}
	if _, ok := r.get("a", 3); ok {
		t.Fatal("an older revision replaced a newer one")
	}
	r.put("a", 7, "seven")
	if _, ok := r.get("a", 5); ok {
		t.Fatal("a replaced revision is still returned")
	}
	r.forget("a")
	if _, ok := r.get("a", 7); ok {
		t.Fatal("a forgotten document is still returned")
	}
	for i := range 2 * recentSize {
		r.put(fmt.Sprint(i), int64(i+1), "v")
	}
	if n := len(r.docs); n > recentSize {
		t.Fatalf("%d documents remembered, want at most %d", n, recentSize)
	}
	last := fmt.Sprint(2*recentSize - 1)
	if _, ok := r.get(last, 2*recentSize); !ok {
		t.Fatal("the document remembered last was forgotten")
	}
}
