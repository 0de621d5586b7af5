package operator_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/tendhq/tend/examples/raftcluster/operator"
	"github.com/tendhq/tend/store"
)

// planRecorder records every status a cluster goes through.
type planRecorder struct {
	mu       sync.Mutex // guards statuses
	statuses []operator.ClusterStatus
	stop     context.CancelFunc
	done     chan struct{}
}

func (e *env) recordPlans() *planRecorder {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := e.op.Clusters().Watch(ctx, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	r := &planRecorder{stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		defer w.Close()
		for {
			ev, err := w.Next(ctx)
			if err != nil {
				return
			}
			r.mu.Lock()
			r.statuses = append(r.statuses, ev.Object.Status)
			r.mu.Unlock()
		}
	}()
	return r
}

// check stops the recorder and checks the scaling rules on the history: one
// bootstrap, then plans of exactly one member, and a membership record that
// changes by at most one member from one status to the next.
func (r *planRecorder) check(t *testing.T) {
	t.Helper()
	r.stop()
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	bootstraps, steps := 0, 0
	var prev []int
	for _, st := range r.statuses {
		if p := st.Plan; p != nil {
			if p.Op == operator.Bootstrap {
				bootstraps++
			} else if len(p.Members) != 1 {
				t.Errorf("plan %+v changes more than one member", p)
			}
		}
		ids := st.IDs()
		if len(prev) > 0 {
			if d := diff(prev, ids) + diff(ids, prev); d > 1 {
				t.Errorf("membership record went from %v to %v at once", prev, ids)
			}
			if d := diff(prev, ids) + diff(ids, prev); d == 1 {
				steps++
			}
		}
		prev = ids
	}
	if bootstraps == 0 {
		t.Error("no bootstrap recorded")
	}
	t.Logf("%d statuses, %d membership changes", len(r.statuses), steps)
}

// diff counts the ids of a missing from b.
func diff(a, b []int) int {
	n := 0
	for _, id := range a {
		if !slices.Contains(b, id) {
			n++
		}
	}
	return n
}

// TestScaling scales a real etcd cluster 3 → 5 → 2 → 4 while a writer keeps
// writing and reading a key, and checks the membership against etcd's own
// member list after every step.
func TestScaling(t *testing.T) {
	e := newEnv(t)
	rec := e.recordPlans()
	e.create(3)
	e.start()
	if ids := e.waitSettled(3); !slices.Equal(ids, []int{1, 2, 3}) {
		t.Fatalf("bootstrap gave members %v", ids)
	}
	w := e.startWriter()

	e.scale(5)
	if ids := e.waitSettled(5); !slices.Equal(ids, []int{1, 2, 3, 4, 5}) {
		t.Fatalf("3 → 5 gave members %v", ids)
	}
	e.scale(2)
	kept := e.waitSettled(2)
	for _, id := range kept {
		if id < 1 || id > 5 {
			t.Fatalf("5 → 2 gave members %v", kept)
		}
	}
	e.scale(4)
	ids := e.waitSettled(4)
	// Ids 1…5 were handed out; the two new members get 6 and 7, never a
	// removed member's id.
	if want := slices.Sorted(slices.Values(append(slices.Clone(kept), 6, 7))); !slices.Equal(ids, want) {
		t.Fatalf("2 → 4 gave members %v, want %v", ids, want)
	}
	if n := e.cluster().Status.NextID; n != 8 {
		t.Errorf("next id %d, want 8", n)
	}
	w.finish(t)
	rec.check(t)
}

// TestCrashBetweenMemberAddAndStart stops the operator right after a
// MemberAdd, before the member's document or process exists, and checks
// that a new operator, knowing only the recorded plan, finishes the same
// step: no second MemberAdd, no new id, the same member started.
func TestCrashBetweenMemberAddAndStart(t *testing.T) {
	e := newEnv(t)
	e.create(3)
	e.start()
	e.waitSettled(3)
	w := e.startWriter()

	e.ms.armed.Store(true)
	e.scale(4)
	if err := <-e.done; err != nil {
		t.Fatalf("operator: %v", err)
	}
	e.cancel = nil

	c := e.cluster()
	p := c.Status.Plan
	if p == nil || p.Op != operator.Add || len(p.Members) != 1 || p.Members[0].ID != 4 {
		t.Fatalf("after the crash the status records plan %+v, want add of member 4", p)
	}
	added := p.Members[0]
	v, err := e.etcd.View(context.Background(), c.Status.Endpoints())
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := v.ByPeerURL(added.PeerURL); !ok || m.Name != "" {
		t.Fatalf("after the crash etcd lists %+v for the new member; want it added, not started", m)
	}
	if _, err := e.op.Members().Get(context.Background(), operator.MemberKey(clusterKey, 4)); err == nil {
		t.Fatal("the member's document exists after a crash that came before it")
	}

	e.start() // a new run: no expectations, no cache, only the store
	if ids := e.waitSettled(4); !slices.Equal(ids, []int{1, 2, 3, 4}) {
		t.Fatalf("resumed plan gave members %v", ids)
	}
	if n := e.ms.addCalls()[added.PeerURL]; n != 1 {
		t.Errorf("MemberAdd of the crashed step ran %d times, want 1", n)
	}
	if st := e.cluster().Status; st.NextID != 5 || st.Members[3] != added {
		t.Errorf("status after resuming: next id %d, member %+v; want 5 and %+v", st.NextID, st.Members[3], added)
	}
	w.finish(t)
}

// TestSelfHealing kills a member's process, which comes back on its data
// directory as the same etcd member, and deletes a Member document by hand,
// which is replaced by a member with a new id while the old one leaves the
// Raft membership.
func TestSelfHealing(t *testing.T) {
	e := newEnv(t)
	e.create(3)
	e.start()
	e.waitSettled(3)
	w := e.startWriter()
	ctx := context.Background()
	eps := e.cluster().Status.Endpoints()

	before, err := e.etcd.View(ctx, eps)
	if err != nil {
		t.Fatal(err)
	}
	m2 := operator.MemberKey(clusterKey, 2)
	if !e.rt.Kill(m2) {
		t.Fatal("member 2 was not running")
	}
	for !e.rt.Running(m2) || e.rt.Starts(m2) < 2 {
		sleepCtx(ctx, 50_000_000)
	}
	after := e.waitSettled(3)
	if !slices.Equal(after, []int{1, 2, 3}) {
		t.Fatalf("after the kill the members are %v", after)
	}
	v, err := e.etcd.View(ctx, eps)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids(before), ids(v)) {
		t.Fatalf("etcd member ids went from %v to %v: the member did not come back on its data directory", ids(before), ids(v))
	}

	if err := e.op.Members().Delete(ctx, operator.MemberKey(clusterKey, 1), store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := e.waitSettled(3); !slices.Equal(got, []int{2, 3, 4}) {
		t.Fatalf("after deleting member 1 the members are %v, want [2 3 4]", got)
	}
	w.finish(t)
}

func ids(v operator.View) []uint64 {
	var out []uint64
	for _, m := range v.Members {
		out = append(out, m.ID)
	}
	slices.Sort(out)
	return out
}
