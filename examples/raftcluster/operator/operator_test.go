package operator_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tendhq/tend/examples/raftcluster/operator"
	"github.com/tendhq/tend/store"
)

// planRecorder records every status a cluster goes through.
type planRecorder struct {
	mu       sync.Mutex // guards statuses and err
	statuses []operator.ClusterStatus
	err      error // why the watch ended before stop
	stop     context.CancelFunc
	done     chan struct{}
}

// recordPlans watches the clusters from the revision of a list, before the
// cluster exists: every store keeps the history after a revision that
// recent, where the history from revision 0 may be gone.
func (e *env) recordPlans() *planRecorder {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	objs, rev, err := e.op.Clusters().List(ctx, store.ListOptions{})
	if err != nil || len(objs) > 0 {
		e.t.Fatalf("list clusters before the test: %d, %v", len(objs), err)
	}
	w, err := e.op.Clusters().Watch(ctx, rev)
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
				if ctx.Err() == nil {
					r.mu.Lock()
					r.err = err
					r.mu.Unlock()
				}
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
	if r.err != nil {
		t.Errorf("the watch of the cluster's statuses ended: %v", r.err)
	}
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
// member list, the Member documents and the member configuration after every
// step, on every store.
func TestScaling(t *testing.T) { onEveryStore(t, testScaling) }

func testScaling(t *testing.T, e *env) {
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
// step: no second MemberAdd, no new id, the same member started, with the
// initial cluster the member configuration recorded before the MemberAdd.
func TestCrashBetweenMemberAddAndStart(t *testing.T) {
	onEveryStore(t, testCrashBetweenMemberAddAndStart)
}

func testCrashBetweenMemberAddAndStart(t *testing.T, e *env) {
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
	initial, err := e.initialCluster(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := operator.InitialCluster(c.Status.Members); initial != want {
		t.Fatalf("after the crash the member configuration is %q, want the new membership %q", initial, want)
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
	if m, ok := e.starts.firstStart(operator.MemberKey(clusterKey, 4)); !ok || m.InitialCluster != initial || m.ClusterState != "existing" {
		t.Errorf("member 4 first started with %+v, want initial cluster %q and state existing", m, initial)
	}
	w.finish(t)
}

// TestSelfHealing kills a member's process, which comes back on its data
// directory as the same etcd member, with the initial cluster the member
// configuration holds; edits the member configuration by hand, which the
// operator writes again; and deletes a Member document by hand, which is
// replaced by a member with a new id while the old one leaves the Raft
// membership.
func TestSelfHealing(t *testing.T) { onEveryStore(t, testSelfHealing) }

func testSelfHealing(t *testing.T, e *env) {
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
	wctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	for !e.rt.Running(m2) || e.rt.Starts(m2) < 2 {
		if wctx.Err() != nil {
			t.Fatal("member 2 was not started again")
		}
		sleepCtx(wctx, 50*time.Millisecond)
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
	initial, err := e.initialCluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if starts := e.starts.starts(m2); len(starts) < 2 || starts[len(starts)-1].InitialCluster != initial {
		t.Fatalf("member 2 was restarted with %+v, want the member configuration %q", starts, initial)
	}

	// A member configuration edited by hand is written again when the
	// cluster is next reconciled: here, when its labels change.
	c := e.cluster()
	if err := e.config.Update(ctx, operator.ClusterRef{Key: c.Key, UID: c.UID}, "m1=http://127.0.0.1:1"); err != nil {
		t.Fatal(err)
	}
	c.Labels = map[string]string{"touched": "yes"}
	if _, err := e.op.Clusters().UpdateSpec(ctx, c); err != nil {
		t.Fatal(err)
	}
	e.waitSettled(3) // checks the member configuration against the record

	if err := e.op.Members().Delete(ctx, operator.MemberKey(clusterKey, 1), store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := e.waitSettled(3); !slices.Equal(got, []int{2, 3, 4}) {
		t.Fatalf("after deleting member 1 the members are %v, want [2 3 4]", got)
	}
	if initial, err = e.initialCluster(ctx); err != nil {
		t.Fatal(err)
	}
	if m, ok := e.starts.firstStart(operator.MemberKey(clusterKey, 4)); !ok || m.InitialCluster != initial {
		t.Errorf("member 4 first started with %+v, want the member configuration %q", m, initial)
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
