package workqueue

import "slices"

// delayed is a key waiting for its deadline, in the queue's clock.
type delayed struct {
	at  int64
	idx int32
}

// delayHeap is a min-heap of deadlines. Every entry in it records its heap
// index in entry.pos, so a deadline can be moved earlier or removed in
// O(log n).
type delayHeap[K comparable] []delayed

func (h *delayHeap[K]) push(entries *slab[entry[K]], d delayed) {
	if len(*h) == cap(*h) {
		// Double the capacity: append grows a large slice by a quarter at a
		// time, which would copy a growing heap several times over.
		*h = slices.Grow(*h, max(len(*h), 16))
	}
	*h = append(*h, d)
	h.up(entries, len(*h)-1)
}

// pop removes the earliest deadline and returns its entry.
func (h *delayHeap[K]) pop(entries *slab[entry[K]]) int32 {
	idx := (*h)[0].idx
	h.remove(entries, 0)
	return idx
}

func (h *delayHeap[K]) remove(entries *slab[entry[K]], i int) {
	s := *h
	last := len(s) - 1
	if i != last {
		s[i] = s[last]
		entries.at(s[i].idx).pos = uint32(i)
	}
	*h = s[:last]
	if i != last {
		h.fix(entries, i)
	}
}

// fix restores the heap after the deadline at i changed.
func (h delayHeap[K]) fix(entries *slab[entry[K]], i int) {
	if !h.down(entries, i) {
		h.up(entries, i)
	}
}

func (h delayHeap[K]) up(entries *slab[entry[K]], i int) {
	d := h[i]
	for i > 0 {
		p := (i - 1) / 2
		if h[p].at <= d.at {
			break
		}
		h[i] = h[p]
		entries.at(h[i].idx).pos = uint32(i)
		i = p
	}
	h[i] = d
	entries.at(d.idx).pos = uint32(i)
}

// down sifts the element at i down and reports whether it moved.
func (h delayHeap[K]) down(entries *slab[entry[K]], i int) bool {
	d := h[i]
	start := i
	for {
		c := 2*i + 1
		if c >= len(h) {
			break
		}
		if r := c + 1; r < len(h) && h[r].at < h[c].at {
			c = r
		}
		if h[c].at >= d.at {
			break
		}
		h[i] = h[c]
		entries.at(h[i].idx).pos = uint32(i)
		i = c
	}
	h[i] = d
	entries.at(d.idx).pos = uint32(i)
	return i != start
}
