package operator_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/tendhq/tend/examples/raftcluster/operator"
)

func TestNext(t *testing.T) {
	tests := []struct {
		name string
		in   operator.Observed
		want operator.Decision
		ok   bool
	}{
		{"bootstrap three", operator.Observed{Replicas: 3}, operator.Decision{Op: operator.Bootstrap, IDs: []int{1, 2, 3}, NextID: 4}, true},
		{"nothing wanted", operator.Observed{}, operator.Decision{}, false},
		{"settled", operator.Observed{Replicas: 3, NextID: 4, Members: []int{1, 2, 3}, Documents: []int{1, 2, 3}}, operator.Decision{}, false},
		{"3 to 6 adds one", operator.Observed{Replicas: 6, NextID: 4, Members: []int{1, 2, 3}, Documents: []int{1, 2, 3}},
			operator.Decision{Op: operator.Add, IDs: []int{4}, NextID: 5}, true},
		{"scale in removes the newest", operator.Observed{Replicas: 2, NextID: 4, Members: []int{1, 2, 3}, Documents: []int{1, 2, 3}},
			operator.Decision{Op: operator.Remove, IDs: []int{3}, NextID: 4}, true},
		{"scale in spares the leader", operator.Observed{Replicas: 2, NextID: 4, Members: []int{1, 2, 3}, Documents: []int{1, 2, 3}, Leader: 3},
			operator.Decision{Op: operator.Remove, IDs: []int{2}, NextID: 4}, true},
		{"ids are not reused: 1,2 to 4 adds 4", operator.Observed{Replicas: 4, NextID: 4, Members: []int{1, 2}, Documents: []int{1, 2}},
			operator.Decision{Op: operator.Add, IDs: []int{4}, NextID: 5}, true},
		{"a deleted document leaves first", operator.Observed{Replicas: 3, NextID: 5, Members: []int{2, 3, 4}, Documents: []int{2, 4}},
			operator.Decision{Op: operator.Remove, IDs: []int{3}, NextID: 5}, true},
		{"a stray document is removed", operator.Observed{Replicas: 2, NextID: 5, Members: []int{2, 3}, Documents: []int{2, 3, 4}},
			operator.Decision{Op: operator.Remove, IDs: []int{4}, NextID: 5}, true},
		{"the last member is not removed", operator.Observed{Replicas: 1, NextID: 2, Members: []int{1}}, operator.Decision{}, false},
		{"zero replicas keeps one", operator.Observed{Replicas: 0, NextID: 3, Members: []int{1, 2}, Documents: []int{1, 2}},
			operator.Decision{Op: operator.Remove, IDs: []int{2}, NextID: 3}, true},
		{"no second bootstrap", operator.Observed{Replicas: 3, NextID: 4}, operator.Decision{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := operator.Next(tt.in)
			if ok != tt.ok || !cmp.Equal(got, tt.want) {
				t.Fatalf("Next(%+v) = %+v, %v; want %+v, %v", tt.in, got, ok, tt.want, tt.ok)
			}
		})
	}
}

// TestNextProperties drives the planner through random intents, hand
// deletions and leaders, applying each step as the controller would, and
// checks the scaling rules: after the bootstrap the membership changes by one
// member per step, an id is never handed out twice, and the cluster reaches
// the intent.
func TestNextProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		o := operator.Observed{Replicas: rapid.IntRange(1, 7).Draw(t, "initial")}
		used := map[int]bool{}
		apply := func() int {
			steps := 0
			for {
				if len(o.Members) > 0 {
					o.Leader = rapid.SampledFrom(append([]int{0}, o.Members...)).Draw(t, "leader")
				}
				d, ok := operator.Next(o)
				if !ok {
					return steps
				}
				steps++
				if steps > 100 {
					t.Fatalf("no convergence: %+v", o)
				}
				switch d.Op {
				case operator.Bootstrap:
					if len(o.Members) != 0 {
						t.Fatalf("bootstrap of a cluster with members %v", o.Members)
					}
					o.Members = slices.Clone(d.IDs)
					o.Documents = slices.Clone(d.IDs)
				case operator.Add:
					if len(d.IDs) != 1 {
						t.Fatalf("add of %v: more than one at a time", d.IDs)
					}
					o.Members = append(o.Members, d.IDs[0])
					o.Documents = append(o.Documents, d.IDs[0])
				case operator.Remove:
					if len(d.IDs) != 1 {
						t.Fatalf("remove of %v: more than one at a time", d.IDs)
					}
					id := d.IDs[0]
					if id == o.Leader && len(o.Members) > 1 && slices.Contains(o.Documents, id) &&
						slices.Contains(o.Members, id) && len(o.Members) == len(o.Documents) {
						t.Fatalf("scale-in chose the leader %d of %v", id, o.Members)
					}
					o.Members = slices.DeleteFunc(o.Members, func(m int) bool { return m == id })
					o.Documents = slices.DeleteFunc(o.Documents, func(m int) bool { return m == id })
				}
				if d.Op != operator.Remove {
					for _, id := range d.IDs {
						if used[id] {
							t.Fatalf("id %d handed out twice", id)
						}
						used[id] = true
					}
				}
				if d.NextID < o.NextID {
					t.Fatalf("next id went back from %d to %d", o.NextID, d.NextID)
				}
				o.NextID = d.NextID
			}
		}
		apply()
		for range rapid.IntRange(0, 8).Draw(t, "changes") {
			if rapid.Bool().Draw(t, "delete a document") && len(o.Documents) > 1 {
				id := rapid.SampledFrom(o.Documents).Draw(t, "deleted")
				o.Documents = slices.DeleteFunc(o.Documents, func(m int) bool { return m == id })
			} else {
				o.Replicas = rapid.IntRange(1, 7).Draw(t, "replicas")
			}
			apply()
			if len(o.Members) != o.Replicas || !slices.Equal(slices.Sorted(slices.Values(o.Members)), slices.Sorted(slices.Values(o.Documents))) {
				t.Fatalf("settled at members %v, documents %v; want %d replicas", o.Members, o.Documents, o.Replicas)
			}
		}
	})
}

// ExampleNext shows the id sequence: 1,2,3 scaled to 2 and then to 4
// gives 1,2,4,5 — the id 3 is never used again.
func ExampleNext() {
	o := operator.Observed{Replicas: 3}
	run := func() {
		for {
			d, ok := operator.Next(o)
			if !ok {
				break
			}
			fmt.Println(d.Op, d.IDs)
			switch d.Op {
			case operator.Remove:
				o.Members = slices.DeleteFunc(o.Members, func(m int) bool { return m == d.IDs[0] })
			default:
				o.Members = append(o.Members, d.IDs...)
			}
			o.Documents, o.NextID = slices.Clone(o.Members), d.NextID
		}
	}
	run()
	o.Replicas = 2
	run()
	o.Replicas = 4
	run()
	fmt.Println("members:", o.Members)
	// Output:
	// bootstrap [1 2 3]
	// remove [3]
	// add [4]
	// add [5]
	// members: [1 2 4 5]
}
