package workqueue

import "testing"

// TestSlabKeepsElementsInPlace pushes past several chunks and checks that
// every element keeps its value, and that elements past the first chunk keep
// their address.
func TestSlabKeepsElementsInPlace(t *testing.T) {
	var s slab[int]
	n := int32(3*chunkLen + 5)
	var second *int // the first element of the second chunk
	for i := range n {
		if got := s.push(int(i)); got != i {
			t.Fatalf("push returned %d, want %d", got, i)
		}
		if i == chunkLen {
			second = s.at(i)
		}
	}
	if s.n != n {
		t.Fatalf("n = %d, want %d", s.n, n)
	}
	if s.at(chunkLen) != second {
		t.Fatalf("element %d moved while the slab grew", chunkLen)
	}
	for i := range n {
		if got := *s.at(i); got != int(i) {
			t.Fatalf("at(%d) = %d", i, got)
		}
	}
	if len(s.chunks) != 4 {
		t.Fatalf("%d chunks for %d elements, want 4", len(s.chunks), n)
	}
}
