package workqueue

import "strconv"

// Trigger says why a key was added: what happened, to which object, at which
// generation. The queue gives it no meaning: the caller chooses the kinds and
// what the other fields hold, and the queue only compares triggers, to keep
// each distinct one once per turn. The zero Trigger is no trigger.
//
// A Trigger built from constant strings and strings the caller already holds
// (an event's object kind and key) costs no allocation to add.
type Trigger struct {
	// Kind is what happened, in the caller's words: a spec change, a
	// deletion, an owned object's event, a timer, a retry, a resync ...
	Kind string
	// ObjectKind and ObjectKey name the object whose event added the key,
	// when that is another object (an owned or watched one).
	ObjectKind, ObjectKey string
	// Generation is a number that goes with Kind: the generation of a spec
	// change, say, or the revision of an event.
	Generation int64
}

// String returns the trigger as its kind, then its object's kind and key and
// its generation when set: "spec 7", "owned Certificate ns/cert".
func (t Trigger) String() string {
	s := t.Kind
	if t.ObjectKind != "" || t.ObjectKey != "" {
		s += " " + t.ObjectKind + " " + t.ObjectKey
	}
	if t.Generation != 0 {
		s += " " + strconv.FormatInt(t.Generation, 10)
	}
	return s
}

// DefaultMaxTriggers is the bound used when [Config.MaxTriggers] is zero.
const DefaultMaxTriggers = 8

// Turn is one handing out of a key by [Queue.GetTurn]: the key, and why it
// was queued.
type Turn[K comparable] struct {
	// Key is the key handed out; the caller must call [Queue.Done] with it.
	Key K
	// Triggers are the distinct triggers of the adds that this turn
	// coalesces, in the order they first came: every add with a trigger
	// since the key was last handed out, including adds while it was being
	// processed and delayed adds that have come due. It is the buffer given
	// to GetTurn with the triggers appended.
	Triggers []Trigger
	// Dropped counts the adds whose trigger was not kept because Triggers
	// already held [Config.MaxTriggers] distinct ones.
	Dropped int
}

// triggerSet holds the triggers of one key's next turn.
type triggerSet struct {
	list    []Trigger
	dropped int
}

// add records t unless an equal trigger is already held; past limit
// distinct triggers it only counts t.
func (s *triggerSet) add(t *Trigger, limit int) {
	for i := range s.list {
		if s.list[i] == *t {
			return
		}
	}
	if len(s.list) >= limit {
		s.dropped++
		return
	}
	s.list = append(s.list, *t)
}

// reset empties the set, keeping its capacity for the next key of the entry
// and dropping the strings it referred to.
func (s *triggerSet) reset() {
	clear(s.list)
	s.list, s.dropped = s.list[:0], 0
}
