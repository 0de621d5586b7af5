package operator_test

import (
	"context"
	"errors"
	"maps"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/examples/raftcluster/etcdproc"
	"github.com/tendhq/tend/examples/raftcluster/operator"
	"github.com/tendhq/tend/examples/raftcluster/probe"
	"github.com/tendhq/tend/store"
)

const clusterKey = "demo"

// settleTimeout bounds each wait for the cluster to reach an intent. Steps
// take about a second each, and etcd refuses a reconfiguration for up to
// five seconds after the last; the bound is generous for a loaded machine.
const settleTimeout = 90 * time.Second

// env is an operator managing real etcd members, children of the test
// binary, with the documents in a memory store that outlives operator runs
// (a crash loses the operator's memory, not its store).
type env struct {
	t       *testing.T
	dir     string
	backend *memory.Store
	rt      *etcdproc.Runtime
	etcd    *operator.Etcd
	ms      *recordingMembership
	op      *operator.Operator

	cancel context.CancelFunc
	done   chan error
}

func newEnv(t *testing.T) *env {
	t.Helper()
	dir := t.TempDir()
	b, err := memory.New(memory.Config{Kinds: []string{operator.KindCluster, operator.KindMember}})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := etcdproc.New(etcdproc.Config{LogDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, dir: dir, backend: b, rt: rt, etcd: &operator.Etcd{}}
	e.ms = &recordingMembership{inner: e.etcd, adds: map[string]int{}}
	e.op, err = operator.New(operator.Config{Backend: b, Membership: e.ms, Runtime: rt, DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.stop()
		rt.Close()
		e.etcd.Close()
	})
	return e
}

// start runs the operator until stop, or until it stops on its own.
func (e *env) start() {
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel, e.done = cancel, make(chan error, 1)
	e.ms.crash.Store(&cancel)
	go func() { e.done <- e.op.Run(ctx) }()
}

// stop stops the operator and waits for it.
func (e *env) stop() {
	if e.cancel == nil {
		return
	}
	e.cancel()
	if err := <-e.done; err != nil {
		e.t.Errorf("operator: %v", err)
	}
	e.cancel = nil
}

// create creates the cluster with replicas members.
func (e *env) create(replicas int) {
	e.t.Helper()
	_, err := e.op.Clusters().Create(context.Background(), &store.Object[operator.ClusterSpec, operator.ClusterStatus]{
		Meta: store.Meta{Key: clusterKey},
		Spec: operator.ClusterSpec{Replicas: replicas},
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

// scale sets the cluster's replicas.
func (e *env) scale(replicas int) {
	e.t.Helper()
	for {
		c := e.cluster()
		c.Spec.Replicas = replicas
		_, err := e.op.Clusters().UpdateSpec(context.Background(), c)
		if errors.Is(err, store.ErrConflict) {
			continue
		}
		if err != nil {
			e.t.Fatal(err)
		}
		return
	}
}

func (e *env) cluster() *store.Object[operator.ClusterSpec, operator.ClusterStatus] {
	e.t.Helper()
	c, err := e.op.Clusters().Get(context.Background(), clusterKey)
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// waitSettled waits until the cluster has settled at replicas members,
// its record matching etcd's own member list and the Member documents, and
// returns the member ids.
func (e *env) waitSettled(replicas int) []int {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	ids, err := e.op.WaitSettled(ctx, clusterKey, replicas)
	if err != nil {
		e.t.Fatalf("cluster did not settle at %d members: %v", replicas, err)
	}
	return ids
}

// recordingMembership counts MemberAdd calls per peer URL and, when armed,
// crashes the operator right after a MemberAdd: it cancels the operator's
// context and fails, so the member is in the Raft membership but neither
// its document nor its process exists.
type recordingMembership struct {
	inner operator.Membership
	crash atomic.Pointer[context.CancelFunc]
	armed atomic.Bool

	mu   sync.Mutex // guards adds
	adds map[string]int
}

var errCrash = errors.New("operator crashed after MemberAdd")

func (r *recordingMembership) View(ctx context.Context, eps []string) (operator.View, error) {
	return r.inner.View(ctx, eps)
}

func (r *recordingMembership) Add(ctx context.Context, eps []string, peerURL string) error {
	if err := r.inner.Add(ctx, eps, peerURL); err != nil {
		return err
	}
	r.mu.Lock()
	r.adds[peerURL]++
	r.mu.Unlock()
	if r.armed.CompareAndSwap(true, false) {
		(*r.crash.Load())()
		return errCrash
	}
	return nil
}

func (r *recordingMembership) Remove(ctx context.Context, eps []string, id uint64) error {
	return r.inner.Remove(ctx, eps, id)
}

// addCalls returns how many MemberAdd calls each peer URL received.
func (r *recordingMembership) addCalls() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.adds)
}

// writer runs a probe.Writer on the cluster of e.
type writer struct {
	w    *probe.Writer
	stop context.CancelFunc
	done chan struct{}
}

func (e *env) startWriter() *writer {
	e.t.Helper()
	pw, err := probe.New(probe.Config{Endpoints: func(ctx context.Context) []string {
		c, err := e.op.Clusters().Get(ctx, clusterKey)
		if err != nil {
			return nil
		}
		return c.Status.Endpoints()
	}})
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &writer{w: pw, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		if err := pw.Run(ctx); err != nil {
			e.t.Errorf("writer: %v", err)
		}
	}()
	return w
}

// finish stops the writer and fails the test if a write failed after its
// retries, or none succeeded.
func (w *writer) finish(t *testing.T) {
	t.Helper()
	w.stop()
	<-w.done
	ok, failed := w.w.Counts()
	t.Logf("writes: %d succeeded, %d failed", ok, failed)
	if failed > 0 {
		t.Errorf("%d writes failed after retries; last: %v", failed, w.w.LastErr())
	}
	if ok == 0 {
		t.Error("no write succeeded")
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
