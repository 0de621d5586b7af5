package manager_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/pprof"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tendhq/tend/informer"
	"github.com/tendhq/tend/internal/doctest"
	"github.com/tendhq/tend/internal/metrictest"
	"github.com/tendhq/tend/manager"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/store"
)

// leadershipLog records the calls of a manager's OnLeadershipChange.
type leadershipLog struct {
	mu    sync.Mutex // guards calls
	calls []manager.Leadership
}

func (l *leadershipLog) record(x manager.Leadership) {
	l.mu.Lock()
	l.calls = append(l.calls, x)
	l.mu.Unlock()
}

func (l *leadershipLog) get() []manager.Leadership {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.calls)
}

// heldList is a ListWatcher whose List waits until release is closed, as a
// slow or unreachable store would.
type heldList struct {
	informer.ListWatcher
	release chan struct{}
}

func (h heldList) List(ctx context.Context, kind string, opts store.ListOptions) (store.ListResult, error) {
	select {
	case <-ctx.Done():
		return store.ListResult{}, ctx.Err()
	case <-h.release:
	}
	return h.ListWatcher.List(ctx, kind, opts)
}

// wantCheck fails t unless err matches sentinel and says check failed for a
// reason containing want, or unless err is nil when sentinel is.
func wantCheck(t *testing.T, what string, err, sentinel error, check, want string) {
	t.Helper()
	switch {
	case sentinel == nil && err != nil:
		t.Errorf("%s: %v, want nil", what, err)
	case sentinel == nil:
	case !errors.Is(err, sentinel):
		t.Errorf("%s: %v, want %v", what, err, sentinel)
	case !strings.Contains(err.Error(), check+": ") || !strings.Contains(err.Error(), want):
		t.Errorf("%s: %v, want the check %s failing with %q", what, err, check, want)
	}
}

// A manager is ready once it runs and every controller's listing sources
// have queued their first list; a source that does not list counts as synced
// at once. In Single mode it leads while it runs.
func TestReadinessWaitsForSources(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := doctest.NewStore(t, memory.Config{})
		doctest.Create(t, s, "Widget", "a")
		lister := heldList{ListWatcher: s, release: make(chan struct{})}
		var mu sync.Mutex // guards reconciled
		var reconciled []string
		c, err := controller.New(controller.Config{
			Name: "widgets",
			Reconciler: controller.ReconcilerFunc(func(_ context.Context, key string) (controller.Result, error) {
				mu.Lock()
				reconciled = append(reconciled, key)
				mu.Unlock()
				return controller.Result{}, nil
			}),
			Sources: []controller.Source{controller.Channel(make(chan string)), controller.For(lister, "Widget")},
		})
		if err != nil {
			t.Fatal(err)
		}
		var log leadershipLog
		m, err := manager.New(manager.Config{
			Controllers:        []*controller.Controller{c},
			OnLeadershipChange: log.record,
		})
		if err != nil {
			t.Fatal(err)
		}
		wantCheck(t, "before Run", m.CheckReadiness(), manager.ErrNotReady, "running", "not running")
		if m.IsLeader() {
			t.Error("leads before Run")
		}

		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- m.Run(ctx) }()
		synctest.Wait()
		err = m.CheckReadiness()
		wantCheck(t, "before the list", err, manager.ErrNotReady, "sources", `"widgets"`)
		if err != nil && strings.Contains(err.Error(), "running:") {
			t.Errorf("before the list: %v, want the running check to pass", err)
		}
		if c.HasSynced() {
			t.Error("HasSynced before the list")
		}
		if !m.IsLeader() {
			t.Error("a running manager in Single mode does not lead")
		}

		close(lister.release)
		synctest.Wait()
		wantCheck(t, "after the list", m.CheckReadiness(), nil, "", "")
		if !c.HasSynced() {
			t.Error("not HasSynced after the list")
		}
		mu.Lock()
		if !slices.Equal(reconciled, []string{"a"}) {
			t.Errorf("reconciled %v, want a", reconciled)
		}
		mu.Unlock()

		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		wantCheck(t, "after Run", m.CheckReadiness(), manager.ErrNotReady, "running", "not running")
		if c.HasSynced() || m.IsLeader() {
			t.Errorf("after Run: HasSynced %v, IsLeader %v, want both false", c.HasSynced(), m.IsLeader())
		}
		if diff := cmp.Diff([]manager.Leadership{{Leader: true}, {}}, log.get()); diff != "" {
			t.Errorf("OnLeadershipChange calls (-want +got):\n%s", diff)
		}
	})
}

// In Sharded mode a replica is ready while it holds its share of the shards:
// not before it took it, not while a shard it held is held by another
// holder, not while its renewals fail, and ready again once it took its share
// back. OwnedShards, the owned-shards gauge and OnLeadershipChange follow the
// shards; liveness fails while the lease calls fail for longer than the lease
// duration.
func TestReadinessFollowsShards(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const shards = 12
		f := newFleet(t, 20, shards, false)
		regs := map[string]*prometheus.Registry{}
		logs := map[string]*leadershipLog{}
		f.configure = func(id string, cfg *manager.Config) {
			regs[id], logs[id] = prometheus.NewRegistry(), &leadershipLog{}
			cfg.MetricsRegisterer, cfg.OnLeadershipChange = regs[id], logs[id].record
			if id == "a" {
				cfg.Leaser.(*crashable).cut.Store(true) // a starts cut off from the leases
			}
		}
		shardLease := func(key string) string { return "shard/" + strconv.Itoa(manager.ShardOf(key, shards)) }
		owned := func(id string) float64 { return metrictest.Value(t, regs[id], "tend_manager_owned_shards", nil) }

		a := f.start("a", manager.Sharded, shardLease)
		time.Sleep(time.Second)
		wantCheck(t, "a cut off from the start", a.m.CheckReadiness(), manager.ErrNotReady, "shards", "not been balanced")
		a.leaser.cut.Store(false)
		time.Sleep(2 * time.Second)
		wantCheck(t, "a alone", a.m.CheckReadiness(), nil, "", "")
		if got := a.m.OwnedShards(); len(got) != shards || !slices.IsSorted(got) {
			t.Errorf("a alone owns %v, want all %d shards, sorted", got, shards)
		}
		if a.m.IsLeader() {
			t.Error("a replica leads in Sharded mode")
		}

		b := f.start("b", manager.Sharded, shardLease)
		time.Sleep(10 * time.Millisecond)
		wantCheck(t, "b as it joins", b.m.CheckReadiness(), manager.ErrNotReady, "shards", "holds 0 of its share of 6")
		time.Sleep(6 * time.Second)
		for _, r := range []*replica{a, b} {
			wantCheck(t, r.m.Identity()+" balanced", r.m.CheckReadiness(), nil, "", "")
			if n := len(r.m.OwnedShards()); n != 6 || owned(r.m.Identity()) != 6 {
				t.Errorf("%s owns %d shards, gauge %v, want 6", r.m.Identity(), n, owned(r.m.Identity()))
			}
		}

		// Another holder takes one of b's shards.
		mine := b.m.OwnedShards()
		stolen := "shard/" + strconv.Itoa(mine[0])
		leases, err := f.s.ListLeases(t.Context(), stolen)
		if err != nil || len(leases) != 1 || leases[0].Holder != "b" {
			t.Fatalf("lease %s: %v, %v", stolen, leases, err)
		}
		if err := f.s.ReleaseLease(t.Context(), leases[0]); err != nil {
			t.Fatal(err)
		}
		intruder, err := f.s.AcquireLease(t.Context(), stolen, "intruder", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(1500 * time.Millisecond)
		wantCheck(t, "b robbed of a shard", b.m.CheckReadiness(), manager.ErrNotReady, "shards", "holds 5 of its share of 6")
		if got := b.m.OwnedShards(); !slices.Equal(got, mine[1:]) || owned("b") != 5 {
			t.Errorf("b robbed of %s owns %v, gauge %v, want %v", stolen, got, owned("b"), mine[1:])
		}
		wantCheck(t, "a while b is robbed", a.m.CheckReadiness(), nil, "", "")
		if err := f.s.ReleaseLease(t.Context(), intruder); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1500 * time.Millisecond)
		wantCheck(t, "b after the intruder left", b.m.CheckReadiness(), nil, "", "")
		if got := b.m.OwnedShards(); !slices.Equal(got, mine) {
			t.Errorf("b owns %v after the intruder left, want %v", got, mine)
		}

		// b is cut off from the store: its shards lapse and move to a.
		b.leaser.cut.Store(true)
		time.Sleep(2500 * time.Millisecond)
		wantCheck(t, "b cut off", b.m.CheckReadiness(), manager.ErrNotReady, "shards", "holds 0 of its share of 6")
		if got := b.m.OwnedShards(); got != nil {
			t.Errorf("b cut off owns %v, want none", got)
		}
		wantCheck(t, "b cut off for 2.5s", b.m.CheckLiveness(), nil, "", "")
		time.Sleep(2 * time.Second)
		wantCheck(t, "b cut off for 4.5s", b.m.CheckLiveness(), manager.ErrNotLive, "leases", errUnreachable.Error())
		if n := metrictest.Value(t, regs["b"], "tend_manager_lease_renew_failures_total", nil); n < 6 {
			t.Errorf("b counted %v failed renewals, want at least one per shard", n)
		}
		time.Sleep(3 * time.Second)
		if n := len(a.m.OwnedShards()); n != shards {
			t.Errorf("a owns %d shards while b is cut off, want all %d", n, shards)
		}
		wantCheck(t, "a while b is cut off", a.m.CheckReadiness(), nil, "", "")

		b.leaser.cut.Store(false)
		time.Sleep(1500 * time.Millisecond)
		wantCheck(t, "b reconnected", b.m.CheckLiveness(), nil, "", "")
		time.Sleep(6 * time.Second)
		for _, r := range []*replica{a, b} {
			wantCheck(t, r.m.Identity()+" rebalanced", r.m.CheckReadiness(), nil, "", "")
			if n := len(r.m.OwnedShards()); n != 6 {
				t.Errorf("%s owns %d shards after b came back, want 6", r.m.Identity(), n)
			}
		}

		if err := a.stop(); err != nil {
			t.Error(err)
		}
		if err := b.stop(); err != nil {
			t.Error(err)
		}
		// b reported, in turn and among the steps between: its share, one
		// shard lost, its share again, none, its share, none as it stopped.
		var counts []int
		for _, l := range logs["b"].get() {
			if l.Leader {
				t.Errorf("b reported leading: %v", l)
			}
			counts = append(counts, len(l.Shards))
		}
		if want := []int{6, 5, 6, 0, 6, 0}; !subsequence(counts, want) || counts[len(counts)-1] != 0 {
			t.Errorf("b reported holding %v shards in turn, want %v among them, and none last", counts, want)
		}
		if a.m.OwnedShards() != nil || owned("a") != 0 {
			t.Errorf("a owns %v after Run returned", a.m.OwnedShards())
		}
	})
}

// subsequence reports whether want appears in s in order, not necessarily
// next to each other.
func subsequence(s, want []int) bool {
	for _, v := range s {
		if len(want) > 0 && v == want[0] {
			want = want[1:]
		}
	}
	return len(want) == 0
}

// Liveness fails while a reconcile has run past the bound, which is
// StuckReconcileAfter or the controller's longer Timeout, and recovers once
// it returns; a negative bound turns the check off.
func TestLivenessStuckReconcile(t *testing.T) {
	tests := []struct {
		name           string
		stuck, timeout time.Duration
		liveAt, deadAt time.Duration // 0: never dead
	}{
		{"default", 0, 0, 10 * time.Minute, 10*time.Minute + time.Second},
		{"bound", time.Minute, 0, time.Minute, time.Minute + time.Second},
		{"longer timeout", time.Minute, 5 * time.Minute, 5 * time.Minute, 5*time.Minute + time.Second},
		{"off", -1, 0, time.Hour, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				release := make(chan struct{})
				keys := make(chan string, 1)
				c, err := controller.New(controller.Config{
					Name:    "stuck",
					Timeout: tt.timeout,
					Reconciler: controller.ReconcilerFunc(func(context.Context, string) (controller.Result, error) {
						<-release // ignores its context, as a wedged call would
						return controller.Result{}, nil
					}),
					Sources: []controller.Source{controller.Channel(keys)},
				})
				if err != nil {
					t.Fatal(err)
				}
				m, err := manager.New(manager.Config{
					Controllers:         []*controller.Controller{c},
					StuckReconcileAfter: tt.stuck,
				})
				if err != nil {
					t.Fatal(err)
				}
				healthz := m.Handler(manager.HandlerConfig{})
				ctx, cancel := context.WithCancel(t.Context())
				done := make(chan error, 1)
				go func() { done <- m.Run(ctx) }()
				keys <- "gw-1"
				synctest.Wait()
				start := time.Now()

				time.Sleep(tt.liveAt)
				wantCheck(t, fmt.Sprintf("after %v", tt.liveAt), m.CheckLiveness(), nil, "", "")
				if code, body := get(healthz, "/healthz"); code != http.StatusOK || body != "ok" {
					t.Errorf("/healthz: %d %q, want 200 ok", code, body)
				}
				if tt.deadAt > 0 {
					time.Sleep(tt.deadAt - time.Since(start))
					wantCheck(t, fmt.Sprintf("after %v", tt.deadAt), m.CheckLiveness(), manager.ErrNotLive,
						"reconciles", `controller "stuck" has been reconciling "gw-1" for `+tt.deadAt.String())
					code, body := get(healthz, "/healthz")
					if code != http.StatusServiceUnavailable || !strings.Contains(body, "[-]reconciles failed: ") {
						t.Errorf("/healthz: %d %q, want 503 with the reconciles check failing", code, body)
					}
					if err := m.CheckReadiness(); err != nil {
						t.Errorf("a stuck reconcile made the manager not ready: %v", err)
					}
				}
				close(release)
				synctest.Wait()
				wantCheck(t, "once the reconcile returned", m.CheckLiveness(), nil, "", "")
				cancel()
				if err := <-done; err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

// Three replicas elect a leader: exactly one leads at any time; when it
// stops another takes over, and when that one is cut off from the store a
// third does. IsLeader, the leader gauge, OnLeadershipChange and the renewal
// failures follow; standbys are ready, and the cut-off replica is not live
// until it reaches the store again.
func TestLeadershipThreeReplicas(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 10, 0, false)
		regs := map[string]*prometheus.Registry{}
		logs := map[string]*leadershipLog{}
		f.configure = func(id string, cfg *manager.Config) {
			regs[id], logs[id] = prometheus.NewRegistry(), &leadershipLog{}
			cfg.MetricsRegisterer, cfg.OnLeadershipChange = regs[id], logs[id].record
		}
		leaderLease := func(string) string { return "leader" }
		reps := map[string]*replica{}
		reps["a"] = f.start("a", manager.LeaderElection, leaderLease)
		time.Sleep(500 * time.Millisecond)
		reps["b"] = f.start("b", manager.LeaderElection, leaderLease)
		reps["c"] = f.start("c", manager.LeaderElection, leaderLease)

		leaders := func() []string {
			var ids []string
			for id, r := range reps {
				if r.m.IsLeader() {
					ids = append(ids, id)
				}
			}
			slices.Sort(ids)
			return ids
		}
		var overlaps []string // written by the sampler only, read after it stopped
		stopSampling := make(chan struct{})
		var sampler sync.WaitGroup
		sampler.Go(func() {
			for {
				select {
				case <-stopSampling:
					return
				case <-time.After(100 * time.Millisecond):
				}
				if ids := leaders(); len(ids) > 1 {
					overlaps = append(overlaps, fmt.Sprintf("%v at %v", ids, time.Now()))
				}
			}
		})
		gauge := func(id string) float64 {
			return metrictest.Value(t, regs[id], "leader_election_master_status", map[string]string{"name": "leader"})
		}
		wantLeader := func(when, want string) {
			t.Helper()
			if got := leaders(); !slices.Equal(got, []string{want}) {
				t.Errorf("%s: leaders %v, want %s", when, got, want)
			}
			for id := range reps {
				if g, w := gauge(id), boolGauge(id == want); g != w {
					t.Errorf("%s: %s's leader gauge is %v, want %v", when, id, g, w)
				}
			}
		}
		wantReports := func(when, id string, want ...bool) {
			t.Helper()
			var got []bool
			for _, l := range logs[id].get() {
				got = append(got, l.Leader)
				if l.Shards != nil {
					t.Errorf("%s: %s reported shards %v in LeaderElection mode", when, id, l.Shards)
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s: %s reported leading %v, want %v", when, id, got, want)
			}
		}

		time.Sleep(2 * time.Second)
		wantLeader("at first", "a")
		for id, r := range reps {
			wantCheck(t, id+" at first", r.m.CheckReadiness(), nil, "", "")
		}
		wantReports("at first", "a", true)
		wantReports("at first", "b")
		wantReports("at first", "c")

		if err := reps["a"].stop(); err != nil {
			t.Fatal(err)
		}
		wantReports("a stopped", "a", true, false)
		wantCheck(t, "a stopped", reps["a"].m.CheckReadiness(), manager.ErrNotReady, "running", "not running")
		time.Sleep(1500 * time.Millisecond) // the released lead is taken within a renew period
		next := leaders()
		if len(next) != 1 {
			t.Fatalf("after a stopped: leaders %v, want one of b and c", next)
		}
		l := next[0]
		o := map[string]string{"b": "c", "c": "b"}[l]
		wantLeader("after a stopped", l)
		wantReports("after a stopped", l, true)
		wantReports("after a stopped", o)

		reps[l].leaser.cut.Store(true)
		time.Sleep(2500 * time.Millisecond)
		if reps[l].m.IsLeader() {
			t.Errorf("%s leads 2.5 s after it was cut off from the store", l)
		}
		wantReports(l+" cut off", l, true, false)
		time.Sleep(2500 * time.Millisecond)
		wantLeader(l+" cut off", o)
		wantReports(l+" cut off", o, true)
		wantCheck(t, l+" cut off", reps[l].m.CheckLiveness(), manager.ErrNotLive, "leases", "failing for")
		wantCheck(t, l+" cut off, standing by", reps[l].m.CheckReadiness(), nil, "", "")
		if n := metrictest.Value(t, regs[l], "tend_manager_lease_renew_failures_total", nil); n < 1 {
			t.Errorf("%s counted %v failed renewals, want some", l, n)
		}
		if n := metrictest.Value(t, regs[o], "tend_manager_lease_renew_failures_total", nil); n != 0 {
			t.Errorf("%s counted %v failed renewals, want none", o, n)
		}

		reps[l].leaser.cut.Store(false)
		time.Sleep(1500 * time.Millisecond)
		wantCheck(t, l+" reconnected", reps[l].m.CheckLiveness(), nil, "", "")
		wantLeader(l+" reconnected", o)

		close(stopSampling)
		sampler.Wait()
		for _, id := range []string{l, o} {
			if err := reps[id].stop(); err != nil {
				t.Error(err)
			}
		}
		wantReports("at the end", l, true, false)
		wantReports("at the end", o, true, false)
		for _, ov := range overlaps {
			t.Errorf("two leaders at once: %s", ov)
		}
	})
}

// A lease call that waits for longer than the lease duration fails
// liveness, as the manager's leases are wedged behind it.
func TestLivenessHungLeaseCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 0, 0, false)
		stall := make(chan struct{})
		f.configure = func(_ string, cfg *manager.Config) { cfg.Leaser.(*crashable).stall = stall }
		r := f.start("a", manager.LeaderElection, func(string) string { return "leader" })
		time.Sleep(3 * time.Second)
		wantCheck(t, "after 3s", r.m.CheckLiveness(), nil, "", "")
		time.Sleep(time.Second)
		wantCheck(t, "after 4s", r.m.CheckLiveness(), manager.ErrNotLive, "leases", "a lease call has been waiting for 4s")
		close(stall)
		synctest.Wait()
		wantCheck(t, "once the store answered", r.m.CheckLiveness(), nil, "", "")
		// The lead taken by the call that waited 4s lapsed at once; the
		// next attempt, a renew period later, keeps it.
		time.Sleep(1500 * time.Millisecond)
		if !r.m.IsLeader() {
			t.Error("not leading once the store answers")
		}
		if err := r.stop(); err != nil {
			t.Fatal(err)
		}
	})
}

// A manager's series are registered by mode; a second manager on the same
// registry is refused with an error unless its registerer is wrapped.
func TestManagerMetricsRegistration(t *testing.T) {
	s := doctest.NewStore(t, memory.Config{})
	reg := prometheus.NewRegistry()
	newManager := func(r prometheus.Registerer, mode manager.Mode) error {
		_, err := manager.New(manager.Config{
			Controllers:         []*controller.Controller{newNopController(t)},
			Mode:                mode,
			Leaser:              s,
			MetricsRegisterer:   r,
			StuckReconcileAfter: -1,
		})
		return err
	}
	if err := newManager(reg, manager.Sharded); err != nil {
		t.Fatal(err)
	}
	if err := newManager(reg, manager.Sharded); err == nil {
		t.Error("a second manager registered the same series on one registry")
	}
	wrapped := prometheus.NewRegistry()
	for _, name := range []string{"one", "two"} {
		if err := newManager(prometheus.WrapRegistererWith(prometheus.Labels{"manager": name}, wrapped), manager.Sharded); err != nil {
			t.Errorf("manager %s on a wrapped registerer: %v", name, err)
		}
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range families {
		names = append(names, f.GetName())
	}
	if want := []string{"tend_manager_lease_renew_failures_total", "tend_manager_owned_shards"}; !slices.Equal(names, want) {
		t.Errorf("Sharded series %v, want %v", names, want)
	}

	single := prometheus.NewRegistry()
	if err := newManager(single, manager.Single); err != nil {
		t.Fatal(err)
	}
	if families, _ := single.Gather(); len(families) != 1 || families[0].GetName() != "leader_election_master_status" {
		t.Errorf("Single series %v, want the leader gauge alone", families)
	}
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// get serves a GET of path by h and returns the status code and body.
func get(h http.Handler, path string) (int, string) {
	return serve(h, http.MethodGet, path)
}

func serve(h http.Handler, method, path string) (int, string) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return rec.Code, rec.Body.String()
}

// The handler serves the checks in Kubernetes' format, the metrics when
// given a Gatherer, and the profiles only when asked to.
func TestHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		release := make(chan struct{})
		c, err := controller.New(controller.Config{
			Name:       "widgets",
			Reconciler: controller.ReconcilerFunc(func(context.Context, string) (controller.Result, error) { return controller.Result{}, nil }),
			Sources:    []controller.Source{controller.For(heldList{ListWatcher: doctest.NewStore(t, memory.Config{}), release: release}, "Widget")},
		})
		if err != nil {
			t.Fatal(err)
		}
		m, err := manager.New(manager.Config{
			Controllers:       []*controller.Controller{c},
			MetricsRegisterer: reg,
		})
		if err != nil {
			t.Fatal(err)
		}
		h := m.Handler(manager.HandlerConfig{Gatherer: reg})
		type want struct {
			method, path string
			code         int
			body         string // exact unless contains is set
			contains     bool
		}
		check := func(when string, tests []want) {
			t.Helper()
			for _, w := range tests {
				code, body := serve(h, w.method, w.path)
				ok := body == w.body
				if w.contains {
					ok = strings.Contains(body, w.body)
				}
				if code != w.code || !ok {
					t.Errorf("%s: %s %s: %d %q, want %d %q", when, w.method, w.path, code, body, w.code, w.body)
				}
			}
		}
		check("before Run", []want{
			{"GET", "/readyz", 503, "[-]running failed: the manager is not running\n" +
				"[-]sources failed: waiting for the sources of controller \"widgets\" to sync\nreadyz check failed\n", false},
			{"HEAD", "/readyz", 503, "", true},
			{"GET", "/healthz", 200, "ok", false},
			{"GET", "/healthz?verbose", 200, "[+]reconciles ok\nhealthz check passed\n", false},
			{"POST", "/healthz", 405, "", true},
			{"GET", "/metrics", 200, "leader_election_master_status{name=\"leader\"} 0\n", true},
			{"GET", "/debug/pprof/", 404, "", true},
			{"GET", "/debug/pprof/cmdline", 404, "", true},
			{"GET", "/", 404, "", true},
		})

		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- m.Run(ctx) }()
		synctest.Wait()
		check("before the sources synced", []want{
			{"GET", "/readyz", 503, "[+]running ok\n" +
				"[-]sources failed: waiting for the sources of controller \"widgets\" to sync\nreadyz check failed\n", false},
			{"GET", "/metrics", 200, "leader_election_master_status{name=\"leader\"} 1\n", true},
		})
		close(release)
		synctest.Wait()
		check("running", []want{
			{"GET", "/readyz", 200, "ok", false},
			{"GET", "/readyz?verbose=1", 200, "[+]running ok\n[+]sources ok\nreadyz check passed\n", false},
			{"GET", "/healthz", 200, "ok", false},
		})
		if got := httptestHeader(h, "/readyz", "Content-Type"); got != "text/plain; charset=utf-8" {
			t.Errorf("/readyz Content-Type %q", got)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}

		bare := m.Handler(manager.HandlerConfig{})
		if code, _ := get(bare, "/metrics"); code != 404 {
			t.Errorf("/metrics without a Gatherer: %d, want 404", code)
		}
	})

	// The handler serves no profiles of its own: the runtime's profiles are
	// served where the program mounts them, here as the fallback.
	m, err := manager.New(manager.Config{Controllers: []*controller.Controller{newNopController(t)}})
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := get(m.Handler(manager.HandlerConfig{}), "/debug/pprof/"); code != 404 {
		t.Errorf("/debug/pprof/ without a fallback: %d, want 404", code)
	}
	profiles := http.NewServeMux()
	profiles.HandleFunc("GET /debug/pprof/", pprof.Index)
	h := m.Handler(manager.HandlerConfig{Fallback: profiles})
	if code, body := get(h, "/debug/pprof/goroutine?debug=1"); code != 200 || body == "" {
		t.Errorf("/debug/pprof/ mounted as the fallback: %d %q, want 200", code, body)
	}
}

// Importing the runtime packages registers nothing on http.DefaultServeMux:
// profiles and every other endpoint are served only where a program mounts
// them. (This test's own file imports net/http/pprof for the test above, so
// the check runs a program that imports only the runtime:
// testdata/imports.)
func TestNoImportSideEffects(t *testing.T) {
	cmd := exec.Command("go", "run", "./testdata/imports")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go run: %v\n%s", err, out)
	}
	if string(out) != "404" {
		t.Errorf("http.DefaultServeMux answers /debug/pprof/ with %s after importing the runtime, want 404", out)
	}
}

func httptestHeader(h http.Handler, path, name string) string {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Header().Get(name)
}

func newNopController(t *testing.T) *controller.Controller {
	t.Helper()
	c, err := controller.New(controller.Config{
		Name:       "nop",
		Reconciler: controller.ReconcilerFunc(func(context.Context, string) (controller.Result, error) { return controller.Result{}, nil }),
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Serve answers on its address until its context ends, then returns nil
// once the server stopped; an address it cannot listen on is an error at
// once.
func TestServe(t *testing.T) {
	m, err := manager.New(manager.Config{Controllers: []*controller.Controller{newNopController(t)}})
	if err != nil {
		t.Fatal(err)
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	if err := m.Serve(t.Context(), taken.Addr().String(), manager.HandlerConfig{}); err == nil {
		t.Error("Serve on an address in use returned nil")
	}

	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- m.Serve(ctx, addr, manager.HandlerConfig{}) }()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	var code int
	var body string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		resp, err := client.Get("http://" + addr + "/readyz")
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		code, body = resp.StatusCode, string(b)
		break
	}
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "[-]running failed") {
		t.Errorf("GET /readyz: %d %q, want 503 as the manager does not run", code, body)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve: %v, want nil after its context ended", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after its context ended")
	}
	if _, err := client.Get("http://" + addr + "/readyz"); err == nil {
		t.Error("the server still answers after Serve returned")
	}
}

// freeAddr returns a loopback address no one listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}
