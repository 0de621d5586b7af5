package operator

import "slices"

// Observed is what the planner decides from: the intent, the status's record
// and what the world shows.
type Observed struct {
	// Replicas is the wanted number of members (the spec).
	Replicas int
	// NextID is the status's next id; zero means 1.
	NextID int
	// Members are the ids of the membership record.
	Members []int
	// Documents are the ids that have a Member document not being deleted.
	Documents []int
	// Leader is the id of the Raft leader, 0 when unknown. Scaling in
	// removes the newest member that is not the leader, so it rarely forces
	// an election.
	Leader int
}

// Decision is the planner's next step.
type Decision struct {
	Op Op
	// IDs are the members the step adds or removes.
	IDs []int
	// NextID is the status's next id once the step is recorded.
	NextID int
}

// Next decides the one step that brings the cluster closer to o.Replicas,
// and reports false when there is nothing to do. Its rules:
//
//   - A cluster never bootstrapped gets all its first members at once.
//   - Afterwards members come and go one at a time, so the quorum of every
//     membership is reachable from the previous one.
//   - A member whose document is gone (deleted by hand) leaves first; its
//     replacement joins in a later step with a new id.
//   - A document with no place in the membership is removed.
//   - Scaling in removes the newest member that is not the leader.
//   - Ids come from NextID and only grow: a removed member's id is never
//     handed out again.
//
// A one-member cluster whose member is gone is not emptied: with no member
// left there is nobody to ask for a membership change.
func Next(o Observed) (Decision, bool) {
	next := max(o.NextID, 1)
	if len(o.Members) == 0 {
		if next > 1 || o.Replicas < 1 {
			return Decision{}, false
		}
		ids := make([]int, o.Replicas)
		for i := range ids {
			ids[i] = next + i
		}
		return Decision{Op: Bootstrap, IDs: ids, NextID: next + o.Replicas}, true
	}
	members := slices.Sorted(slices.Values(o.Members))
	docs := slices.Sorted(slices.Values(o.Documents))
	remove := func(id int) (Decision, bool) { return Decision{Op: Remove, IDs: []int{id}, NextID: next}, true }
	if len(members) > 1 {
		for _, id := range members {
			if !slices.Contains(docs, id) {
				return remove(id)
			}
		}
	}
	for _, id := range docs {
		if !slices.Contains(members, id) {
			return remove(id)
		}
	}
	switch {
	case len(members) < o.Replicas:
		return Decision{Op: Add, IDs: []int{next}, NextID: next + 1}, true
	case len(members) > max(o.Replicas, 1):
		for _, id := range slices.Backward(members) {
			if id != o.Leader {
				return remove(id)
			}
		}
	}
	return Decision{}, false
}
