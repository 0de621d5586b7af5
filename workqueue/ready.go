package workqueue

// Ready keys are served in order of their place: arrival − priority × aging,
// where arrival counts the keys that became ready. Within one priority level
// places grow with arrival, so each level is a plain FIFO ring and serving is
// a merge of the levels' heads. Keys of priority zero, the common case, never
// leave the fast path of a single ring.
//
// Arrivals are numbered by a wrapping uint32; places are compared through the
// signed difference of arrivals, which is exact while the keys compared
// arrived fewer than 2³¹ arrivals apart. Priorities span 2¹⁶ and aging at most
// 2¹⁴, so aging never needs more than 2³⁰ of that range.

// slot is one position in a level: the entry and the arrival number it had
// when it was queued. A slot is stale, and skipped, when its entry is no
// longer ready under that arrival number (the key was raised to another level).
type slot struct {
	idx int32
	seq uint32
}

// before reports whether a key of arrival a and priority pa is served before
// one of arrival b and priority pb. Equal places go to the higher priority.
func before(a uint32, pa int16, b uint32, pb int16, aging int64) bool {
	d := int64(int32(a-b)) - (int64(pa)-int64(pb))*aging
	if d != 0 {
		return d < 0
	}
	return pa > pb
}

// ring is a FIFO of slots with a power-of-two capacity.
type ring struct {
	buf  []slot
	head int
	n    int // slots held, stale ones included
}

func (r *ring) push(s slot) {
	if r.n == len(r.buf) {
		r.grow()
	}
	r.buf[(r.head+r.n)&(len(r.buf)-1)] = s
	r.n++
}

func (r *ring) grow() {
	buf := make([]slot, max(16, 2*len(r.buf)))
	for i := range r.n {
		buf[i] = r.buf[(r.head+i)&(len(r.buf)-1)]
	}
	r.buf, r.head = buf, 0
}

func (r *ring) front() slot { return r.buf[r.head] }

func (r *ring) drop() {
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.n--
}

// level holds the ready keys of one priority.
type level struct {
	prio  int16
	stale int // stale slots held; while zero every slot is live
	ring
}

// ready holds every ready key. Level zero is kept inline; other levels exist
// only while they hold keys, sorted by descending priority.
type ready[K comparable] struct {
	zero   level
	others []*level
	spare  *level // one emptied level kept to avoid reallocating its ring
	live   int    // ready keys, stale slots excluded
}

func (r *ready[K]) push(prio int16, s slot) {
	r.live++
	if prio == 0 {
		r.zero.push(s)
		return
	}
	r.levelOf(prio).push(s)
}

// levelOf returns the level of a non-zero priority, creating it if needed.
func (r *ready[K]) levelOf(prio int16) *level {
	i := 0
	for ; i < len(r.others); i++ {
		if l := r.others[i]; l.prio == prio {
			return l
		} else if l.prio < prio {
			break
		}
	}
	l := r.spare
	if l == nil {
		l = &level{}
	}
	r.spare = nil
	l.prio = prio
	r.others = append(r.others, nil)
	copy(r.others[i+1:], r.others[i:])
	r.others[i] = l
	return l
}

// pop removes and returns the first ready key. It must not be called when
// live is zero.
func (r *ready[K]) pop(entries *slab[entry[K]], aging int64) int32 {
	if len(r.others) == 0 {
		s := trim(&r.zero, entries)
		r.zero.drop()
		r.live--
		return s.idx
	}
	var best *level
	var bestSlot slot
	if r.zero.n > 0 {
		if s := trim(&r.zero, entries); r.zero.n > 0 {
			best, bestSlot = &r.zero, s
		}
	}
	for i := 0; i < len(r.others); {
		l := r.others[i]
		s := trim(l, entries)
		if l.n == 0 {
			r.remove(i)
			continue
		}
		if best == nil || before(s.seq, l.prio, bestSlot.seq, best.prio, aging) {
			best, bestSlot = l, s
		}
		i++
	}
	best.drop()
	r.live--
	if best != &r.zero && best.n == 0 {
		for i, l := range r.others {
			if l == best {
				r.remove(i)
				break
			}
		}
	}
	return bestSlot.idx
}

func (r *ready[K]) remove(i int) {
	l := r.others[i]
	copy(r.others[i:], r.others[i+1:])
	r.others[len(r.others)-1] = nil
	r.others = r.others[:len(r.others)-1]
	l.head, l.n, l.stale = 0, 0, 0
	r.spare = l
}

// markStale records that a slot of the level of prio went stale.
func (r *ready[K]) markStale(prio int16) {
	if prio == 0 {
		r.zero.stale++
		return
	}
	r.levelOf(prio).stale++
}

// trim drops stale slots at the head of the level and returns the head, which
// is valid only if the level is not empty afterwards.
func trim[K comparable](l *level, entries *slab[entry[K]]) slot {
	for l.stale > 0 && l.n > 0 {
		s := l.front()
		if e := entries.at(s.idx); e.state&stReady != 0 && e.pos == s.seq {
			return s
		}
		l.drop()
		l.stale--
	}
	if l.n == 0 {
		return slot{}
	}
	return l.front()
}
