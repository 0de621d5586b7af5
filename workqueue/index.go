package workqueue

import "hash/maphash"

// index maps every key the queue holds to its entry's slab index. It is an
// open-addressing hash table with linear probing whose slots hold the low 32
// bits of the key's hash and the slab index: 8 bytes a slot, where a
// map[string]int32 spends 25 on a slot that copies the key. Keys are
// compared in the slab, and only when the stored hash bits match. Deletion
// shifts the following slots back, so the table holds no tombstones and a
// lookup stops at the first empty slot.
type index[K comparable] struct {
	seed  maphash.Seed
	slots []islot // length a power of two, or zero
	n     int     // slots in use
}

// islot is one slot of an index.
type islot struct {
	hash uint32 // low bits of the key's hash; its bits under the mask are the home slot
	ref  int32  // slab index + 1; zero marks an empty slot
}

func newIndex[K comparable]() index[K] { return index[K]{seed: maphash.MakeSeed()} }

func (x *index[K]) hash(key K) uint32 { return uint32(maphash.Comparable(x.seed, key)) }

// find returns the slab index of key and the slot that holds it, or noEntry
// and the slot where insert can place key; h is key's hash.
func (x *index[K]) find(entries *slab[entry[K]], key K) (idx int32, h, at uint32) {
	h = x.hash(key)
	if len(x.slots) == 0 {
		return noEntry, h, 0
	}
	mask := uint32(len(x.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := x.slots[i]
		if s.ref == 0 {
			return noEntry, h, i
		}
		if s.hash == h && entries.at(s.ref-1).key == key {
			return s.ref - 1, h, i
		}
	}
}

// insert records idx for a key that find did not find, at the slot find
// returned; it grows the table first when it would become more than three
// quarters full.
func (x *index[K]) insert(idx int32, h, at uint32) {
	if 4*(x.n+1) > 3*len(x.slots) {
		x.grow()
		at = x.free(h)
	}
	x.slots[at] = islot{hash: h, ref: idx + 1}
	x.n++
}

// free returns the first empty slot of h's probe sequence.
func (x *index[K]) free(h uint32) uint32 {
	mask := uint32(len(x.slots) - 1)
	i := h & mask
	for x.slots[i].ref != 0 {
		i = (i + 1) & mask
	}
	return i
}

func (x *index[K]) grow() {
	old := x.slots
	x.slots = make([]islot, max(16, 2*len(old)))
	for _, s := range old {
		if s.ref != 0 {
			x.slots[x.free(s.hash)] = s
		}
	}
}

// remove deletes the slot of the entry idx, whose key is key.
func (x *index[K]) remove(key K, idx int32) {
	mask := uint32(len(x.slots) - 1)
	i := x.hash(key) & mask
	for x.slots[i].ref != idx+1 {
		i = (i + 1) & mask
	}
	x.delete(i)
}

// delete empties the slot at i and moves back the slots after it that could
// no longer be reached past the hole.
func (x *index[K]) delete(i uint32) {
	mask := uint32(len(x.slots) - 1)
	for j := (i + 1) & mask; x.slots[j].ref != 0; j = (j + 1) & mask {
		// The slot at j may fill the hole at i if its home is not in (i, j].
		if home := x.slots[j].hash & mask; (j-home)&mask >= (j-i)&mask {
			x.slots[i] = x.slots[j]
			i = j
		}
	}
	x.slots[i] = islot{}
	x.n--
}
