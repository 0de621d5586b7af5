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
	r.live--
	best := &r.zero
	if len(r.others) > 0 {
		best = r.first(entries, aging)
	} else if best.stale > 0 {
		trim(best, entries)
	}
	s := best.front()
	best.drop()
	if best.n == 0 && best != &r.zero {
		for i, l := range r.others {
			if l == best {
				r.remove(i)
				break
			}
		}
	}
	return s.idx
}

// first returns the level whose head is served next, dropping stale slots
// and the levels they leave empty on the way. Some level must hold a live
// slot.
func (r *ready[K]) first(entries *slab[entry[K]], aging int64) *level {
	var best *level
	var bestSeq uint32
	if l := &r.zero; l.n > 0 {
		if l.stale > 0 {
			trim(l, entries)
		}
		if l.n > 0 {
			best, bestSeq = l, l.front().seq
		}
	}
	for i := 0; i < len(r.others); {
		l := r.others[i]
		if l.stale > 0 {
			trim(l, entries)
		}
		if l.n == 0 {
			r.remove(i)
			continue
		}
		if seq := l.front().seq; best == nil || before(seq, l.prio, bestSeq, best.prio, aging) {
			best, bestSeq = l, seq
		}
		i++
	}
	return best
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

// trim drops the stale slots at the head of the level.
func trim[K comparable](l *level, entries *slab[entry[K]]) {
	for l.stale > 0 && l.n > 0 {
		s := l.front()
		if e := entries.at(s.idx); e.state&stReady != 0 && e.pos == s.seq {
			return
		}
		l.drop()
		l.stale--
	}
}
