package workqueue

// With Config.Group set, every group of keys has its own ready line, with
// priority levels and aging as without groups, and a ring of the active
// groups (those with a ready key and under the in-flight cap) says whose turn
// it is. The group at the head of the ring is served up to its weight in a
// row, then goes to the tail; a group that runs out of ready keys or reaches
// its cap leaves the ring and rejoins it at the tail when it has a ready key
// under the cap again. So while a group stays active, the other groups are
// served at most the sum of their weights between two of its keys, whatever
// their backlog.

// maxGroupWeight bounds the weights Config.GroupWeight returns.
const maxGroupWeight = 1 << 16

// group is one group of keys.
type group[K comparable] struct {
	name     string
	ready    ready[K]
	weight   int  // keys served in a row when its turn comes
	credit   int  // keys it may still be served in its current turn
	inflight int  // keys handed out and not yet Done
	refs     int  // entries of the queue in the group; the group is freed at zero
	active   bool // in the ring
}

// groups is the state of a queue's groups.
type groups[K comparable] struct {
	of     func(K) string
	weigh  func(string) int // nil: every group weighs 1
	cap    int              // in-flight keys per group; zero is no cap
	byName map[string]int32
	list   []*group[K] // by group id
	free   []int32     // ids of freed groups, for reuse
	ids    slab[int32] // group id of every entry, parallel to Queue.entries
	ring   ring        // active groups in serving order; slot.idx is the id
}

func newGroups[K comparable](cfg *Config[K]) *groups[K] {
	return &groups[K]{of: cfg.Group, weigh: cfg.GroupWeight, cap: cfg.MaxInFlightPerGroup, byName: map[string]int32{}}
}

// join records that the entry idx, of key, entered the queue; grow says the
// entry is new to the slab.
func (gs *groups[K]) join(idx int32, key K, grow bool) {
	name := gs.of(key)
	id, ok := gs.byName[name]
	if !ok {
		id = gs.newGroup(name)
	}
	gs.list[id].refs++
	if grow {
		gs.ids.push(id)
	} else {
		*gs.ids.at(idx) = id
	}
}

func (gs *groups[K]) newGroup(name string) int32 {
	w := 1
	if gs.weigh != nil {
		w = min(max(gs.weigh(name), 1), maxGroupWeight)
	}
	var id int32
	if n := len(gs.free); n > 0 {
		id = gs.free[n-1]
		gs.free = gs.free[:n-1]
	} else {
		id = int32(len(gs.list))
		gs.list = append(gs.list, &group[K]{})
	}
	g := gs.list[id]
	g.name, g.weight = name, w
	gs.byName[name] = id
	return id
}

// leave records that the entry idx left the queue, freeing its group when it
// was the group's last entry. A freed group keeps its ring buffer for the
// next group to use it.
func (gs *groups[K]) leave(idx int32) {
	id := *gs.ids.at(idx)
	g := gs.list[id]
	if g.refs--; g.refs > 0 {
		return
	}
	delete(gs.byName, g.name)
	buf := g.ready.zero.buf
	*g = group[K]{}
	g.ready.zero.buf = buf
	gs.free = append(gs.free, id)
}

// at returns the group of the entry idx.
func (gs *groups[K]) at(idx int32) *group[K] { return gs.list[*gs.ids.at(idx)] }

func (gs *groups[K]) full(g *group[K]) bool { return gs.cap > 0 && g.inflight >= gs.cap }

// push queues the ready slot s of priority prio of the entry idx in its
// group, and reports whether the key can be served now: its group is under
// the cap.
func (gs *groups[K]) push(idx int32, prio int16, s slot) bool {
	id := *gs.ids.at(idx)
	g := gs.list[id]
	g.ready.push(prio, s)
	gs.activate(id, g)
	return g.active
}

// activate puts g at the tail of the ring if it has a ready key, is under
// the cap and is not there yet, and reports whether it did.
func (gs *groups[K]) activate(id int32, g *group[K]) bool {
	if g.active || g.ready.live == 0 || gs.full(g) {
		return false
	}
	g.active, g.credit = true, g.weight
	gs.ring.push(slot{idx: id})
	return true
}

// pop removes and returns the next key to serve, from the group at the head
// of the ring, which must not be empty.
func (gs *groups[K]) pop(entries *slab[entry[K]], aging int64) int32 {
	id := gs.ring.front().idx
	g := gs.list[id]
	idx := g.ready.pop(entries, aging)
	g.inflight++
	g.credit--
	switch {
	case g.ready.live == 0 || gs.full(g):
		gs.ring.drop()
		g.active = false
	case g.credit == 0:
		gs.ring.drop()
		gs.ring.push(slot{idx: id})
		g.credit = g.weight
	}
	return idx
}

// done records that a key of the entry idx's group is Done, and reports
// whether that made the group servable again.
func (gs *groups[K]) done(idx int32) bool {
	id := *gs.ids.at(idx)
	g := gs.list[id]
	g.inflight--
	return gs.activate(id, g)
}
