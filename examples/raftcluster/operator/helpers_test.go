package operator_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
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
// binary, with the documents in a store that outlives operator runs (a
// crash loses the operator's memory, not its store).
type env struct {
	t      *testing.T
	dir    string
	rt     *etcdproc.Runtime
	etcd   *operator.Etcd
	ms     *recordingMembership
	starts *recordingRuntime
	config operator.MemberConfig
	op     *operator.Operator

	cancel context.CancelFunc
	done   chan error
}

// openStore returns a store holding the operator's kinds, of the test's
// own, and the member configuration that goes with it.
type openStore func(t *testing.T) (store.Backend, operator.MemberConfig)

// onEveryStore runs test on each store the operator supports: the memory
// store and PostgreSQL, with the member configuration in a document, and
// the Kubernetes API, with the documents as custom resources and the member
// configuration in a ConfigMap.
func onEveryStore(t *testing.T, test func(t *testing.T, e *env)) {
	for _, s := range []struct {
		name string
		open openStore
	}{
		{"memory", memoryStore},
		{"postgres", postgresStore},
		{"kube", kubeStore},
	} {
		t.Run(s.name, func(t *testing.T) { test(t, newEnv(t, s.open)) })
	}
}

func newEnv(t *testing.T, open openStore) *env {
	t.Helper()
	dir := t.TempDir()
	b, config := open(t)
	rt, err := etcdproc.New(etcdproc.Config{LogDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, dir: dir, rt: rt, etcd: &operator.Etcd{}, config: config}
	e.ms = &recordingMembership{inner: e.etcd, adds: map[string]int{}, configured: e.initialCluster}
	e.starts = &recordingRuntime{Runtime: rt}
	e.op, err = operator.New(operator.Config{Backend: b, Membership: e.ms, Runtime: e.starts, MemberConfig: config, DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.stop()
		rt.Close()
		e.etcd.Close()
		for _, v := range e.ms.violations() {
			t.Errorf("member configuration: %s", v)
		}
		for _, v := range e.starts.violations() {
			t.Errorf("member started: %s", v)
		}
	})
	return e
}

// memoryStore is a memory store, with the member configuration in a
// document of the same store.
func memoryStore(t *testing.T) (store.Backend, operator.MemberConfig) {
	t.Helper()
	b, err := memory.New(memory.Config{Kinds: []string{operator.KindCluster, operator.KindMember, operator.KindMemberConfig}})
	if err != nil {
		t.Fatal(err)
	}
	mc, err := operator.NewDocumentMemberConfig(b)
	if err != nil {
		t.Fatal(err)
	}
	return b, mc
}

// initialCluster returns what the member configuration of the test's
// cluster holds.
func (e *env) initialCluster(ctx context.Context) (string, error) {
	c, err := e.op.Clusters().Get(ctx, clusterKey)
	if err != nil {
		return "", err
	}
	return e.config.InitialCluster(ctx, operator.ClusterRef{Key: c.Key, UID: c.UID})
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
// its document nor its process exists. It also checks that the member
// configuration was written before each change: it names a member before
// MemberAdd adds it, and no longer names a member MemberRemove removes.
type recordingMembership struct {
	inner      operator.Membership
	configured func(context.Context) (string, error)
	crash      atomic.Pointer[context.CancelFunc]
	armed      atomic.Bool

	mu     sync.Mutex // guards adds and broken
	adds   map[string]int
	broken []string
}

var errCrash = errors.New("operator crashed after MemberAdd")

func (r *recordingMembership) View(ctx context.Context, eps []string) (operator.View, error) {
	return r.inner.View(ctx, eps)
}

func (r *recordingMembership) Add(ctx context.Context, eps []string, peerURL string) error {
	initial, err := r.configured(ctx)
	if err != nil {
		return err
	}
	if !names(initial, peerURL) {
		r.violation("MemberAdd of %s while the member configuration is %q", peerURL, initial)
	}
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
	initial, err := r.configured(ctx)
	if err != nil {
		return err
	}
	v, err := r.inner.View(ctx, eps)
	if err != nil {
		return err
	}
	for _, m := range v.Members {
		if m.ID == id && names(initial, m.PeerURL) {
			r.violation("MemberRemove of %s while the member configuration is %q", m.PeerURL, initial)
		}
	}
	return r.inner.Remove(ctx, eps, id)
}

func (r *recordingMembership) violation(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.broken = append(r.broken, fmt.Sprintf(format, args...))
}

// violations returns the changes made before the member configuration
// was written.
func (r *recordingMembership) violations() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.broken)
}

// names reports whether the initial cluster initial names a member on
// peerURL.
func names(initial, peerURL string) bool {
	for part := range strings.SplitSeq(initial, ",") {
		if _, u, _ := strings.Cut(part, "="); u == peerURL {
			return true
		}
	}
	return false
}

// recordingRuntime records the configuration each member is started with,
// and checks that its initial cluster names the member itself.
type recordingRuntime struct {
	operator.Runtime

	mu      sync.Mutex // guards started and broken
	started map[string][]etcdproc.Member
	broken  []string
}

func (r *recordingRuntime) Start(key string, m etcdproc.Member) error {
	r.mu.Lock()
	if r.started == nil {
		r.started = map[string][]etcdproc.Member{}
	}
	r.started[key] = append(r.started[key], m)
	if !names(m.InitialCluster, m.PeerURL) {
		r.broken = append(r.broken, fmt.Sprintf("%s with initial cluster %q, which does not name it", key, m.InitialCluster))
	}
	r.mu.Unlock()
	return r.Runtime.Start(key, m)
}

// starts returns the configurations the member under key was started
// with, in order.
func (r *recordingRuntime) starts(key string) []etcdproc.Member {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.started[key])
}

// firstStart returns the configuration the member under key was first
// started with.
func (r *recordingRuntime) firstStart(key string) (etcdproc.Member, bool) {
	starts := r.starts(key)
	if len(starts) == 0 {
		return etcdproc.Member{}, false
	}
	return starts[0], true
}

func (r *recordingRuntime) violations() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.broken)
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
