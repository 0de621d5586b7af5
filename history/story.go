package history

import (
	"crypto/rand"
	"encoding/hex"
	"slices"
	"time"
)

// OutcomeID returns the id of the entry recording what became of the
// operator command id (applied or refused): every replica that records it
// gives it this id, so the history keeps one.
func OutcomeID(command string) string { return "outcome-" + command }

// IssuedID returns the id of the entry recording that an operator issued
// the command id.
func IssuedID(command string) string { return "issued-" + command }

// newID returns a random entry id.
func newID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // never fails
	return hex.EncodeToString(b[:])
}

// Routine reports whether e is routine: the start of a step, or the end of
// a step that did not fail. When a history is full, its routine entries go
// first, so that transitions, failures, refusals, requests, timers and
// operator actions outlive polls.
func (e Entry) Routine() bool {
	switch e.Type {
	case StepStarted:
		return true
	case StepEnded:
		return e.Error == "" && e.Outcome != "failed" && e.Outcome != "failed-terminal"
	}
	return false
}

// Times returns how many events e stands for: Count, or 1 when Count is
// zero.
func (e Entry) Times() int { return max(e.Count, 1) }

// samePoll reports whether the end of a step, e, reports what the end of a
// step before it, prev, did: the same step of the same operation in the same
// phase, with the same outcome and error.
func samePoll(prev, e Entry) bool {
	return prev.Type == StepEnded && e.Type == StepEnded && prev.Step == e.Step && prev.Operation == e.Operation &&
		prev.Phase == e.Phase && prev.Intent == e.Intent && prev.Outcome == e.Outcome && prev.Error == e.Error
}

// maxGone is how many ids of entries no longer in a history (evicted, or
// folded into a collapsed poll) the history remembers, so that an entry
// written twice (a write that was stored but reported failed, retried) is
// kept once.
const maxGone = 256

// story is a history being written: its entries, oldest first, and the ids
// of entries it no longer holds.
type story struct {
	entries []Entry
	gone    []string
}

// has reports whether the story holds or held the entry of id.
func (s *story) has(id string) bool {
	if id == "" {
		return false
	}
	return slices.ContainsFunc(s.entries, func(e Entry) bool { return e.ID == id }) || slices.Contains(s.gone, id)
}

// forget remembers that the entry of id is no longer held.
func (s *story) forget(id string) {
	if id == "" {
		return
	}
	s.gone = append(s.gone, id)
	if len(s.gone) > maxGone {
		s.gone = slices.Delete(s.gone, 0, len(s.gone)-maxGone)
	}
}

// add adds e, unless the story holds or held an entry of its id. An end of
// a step that repeats the poll ending the story (its start, then its end
// alike) folds into that poll's end: one entry whose Count counts the
// polls, First is when the first ended, and Time when the last did; the
// first start is kept.
func (s *story) add(e Entry) {
	if s.has(e.ID) {
		return
	}
	n := len(s.entries)
	if n > 0 && e.Time.Before(s.entries[n-1].Time) { // late: into its place, as it is
		i, _ := slices.BinarySearchFunc(s.entries, e.Time, func(x Entry, t time.Time) int {
			if x.Time.After(t) {
				return 1
			}
			return -1
		})
		s.entries = slices.Insert(s.entries, i, e)
		return
	}
	if n >= 2 && s.entries[n-1].Type == StepStarted && s.entries[n-1].Step == e.Step && samePoll(s.entries[n-2], e) {
		prev := &s.entries[n-2]
		s.forget(s.entries[n-1].ID)
		s.forget(e.ID)
		if prev.First.IsZero() {
			prev.First = prev.Time
		}
		prev.Count = prev.Times() + e.Times()
		prev.Time, prev.Attempt, prev.Duration, prev.ReconcileID, prev.TraceID, prev.Replica =
			e.Time, e.Attempt, e.Duration, e.ReconcileID, e.TraceID, e.Replica
		s.entries = s.entries[:n-1]
		return
	}
	s.entries = append(s.entries, e)
}

// retain drops the entries older than cutoff, then, while more than max
// are left, the oldest routine entries, then the oldest.
func (s *story) retain(cutoff time.Time, max int) {
	keep := slices.IndexFunc(s.entries, func(e Entry) bool { return !e.Time.Before(cutoff) })
	if keep < 0 {
		keep = len(s.entries)
	}
	for _, e := range s.entries[:keep] {
		s.forget(e.ID)
	}
	s.entries = s.entries[keep:]
	over := len(s.entries) - max
	if over <= 0 {
		return
	}
	s.entries = slices.DeleteFunc(s.entries, func(e Entry) bool {
		if over > 0 && e.Routine() {
			over--
			s.forget(e.ID)
			return true
		}
		return false
	})
	if over > 0 {
		for _, e := range s.entries[:over] {
			s.forget(e.ID)
		}
		s.entries = slices.Delete(s.entries, 0, over)
	}
}
