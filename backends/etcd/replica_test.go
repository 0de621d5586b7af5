package etcd_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tendhq/tend/backends/etcd"
	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/store"
)

// The failover test runs controller replicas as child processes of the
// test binary, configured through these environment variables.
const (
	envReplica   = "TEND_ETCD_REPLICA"   // the replica's identity
	envEndpoints = "TEND_ETCD_ENDPOINTS" // comma-separated etcd client URLs
	envPrefix    = "TEND_ETCD_PREFIX"    // the store's key prefix
	envJournal   = "TEND_ETCD_JOURNAL"   // file the replica appends its reconciles to
)

// Timing of the failover test's replicas.
const (
	failoverLease  = 3 * time.Second
	failoverRenew  = time.Second
	failoverShards = 12
	failoverKind   = "Widget"
	// etcdExpiryLag is how late etcd may delete the keys of an expired
	// lease: its lessor looks for expired leases every 500ms.
	etcdExpiryLag = 500 * time.Millisecond
	// loadAllowance covers a loaded machine: the test runs three etcd
	// members and three replicas on two shared cores.
	loadAllowance = time.Second
	// work is how long a reconcile works before it writes its status.
	work = 20 * time.Millisecond
)

// widgetStatus is what a replica writes: the generation it acted on, who
// it is and the fence it held.
type widgetStatus struct {
	Generation int64  `json:"generation"`
	By         string `json:"by"`
	Fence      int64  `json:"fence"`
}

// journalEntry is one line of the journal: a reconcile starting or ending.
type journalEntry struct {
	Event   string `json:"event"` // "start" or "end"
	Key     string `json:"key"`
	Replica string `json:"replica"`
	Fence   int64  `json:"fence"`
	At      int64  `json:"at"` // wall clock, Unix nanoseconds
}

// replicaMain runs the test binary as a controller replica when the
// failover test started it as one, and reports whether it did. The replica
// runs until SIGTERM, or until it is killed.
func replicaMain() bool {
	id := os.Getenv(envReplica)
	if id == "" {
		return false
	}
	if err := runReplica(id); err != nil {
		fmt.Fprintf(os.Stderr, "replica %s: %v\n", id, err)
		os.Exit(1)
	}
	os.Exit(0)
	return true
}

func runReplica(id string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	cli, err := newClient(strings.Split(os.Getenv(envEndpoints), ","))
	if err != nil {
		return err
	}
	defer cli.Close()
	s, err := etcd.New(etcd.Config{Client: cli, Prefix: os.Getenv(envPrefix), Kinds: []string{failoverKind}})
	if err != nil {
		return err
	}
	journal, err := os.OpenFile(os.Getenv(envJournal), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	defer journal.Close()
	record := func(event, key string, fence int64) {
		b, _ := json.Marshal(journalEntry{Event: event, Key: key, Replica: id, Fence: fence, At: time.Now().UnixNano()})
		// One write per line: appends of a few hundred bytes are not
		// interleaved with other processes' appends.
		journal.Write(append(b, '\n'))
	}
	rec := controller.ReconcilerFunc(func(ctx context.Context, key string) (controller.Result, error) {
		f, ok := store.FenceFrom(ctx)
		if !ok {
			return controller.Result{}, errors.New("reconcile without a fence")
		}
		record("start", key, f.Token)
		defer record("end", key, f.Token)
		d, err := s.Get(ctx, failoverKind, key)
		if errors.Is(err, store.ErrNotFound) {
			return controller.Result{}, nil
		}
		if err != nil {
			return controller.Result{}, err
		}
		var st widgetStatus
		if len(d.Status) > 0 {
			if err := json.Unmarshal(d.Status, &st); err != nil {
				return controller.Result{}, controller.Terminal(err)
			}
		}
		if st.Generation == d.Meta.Generation {
			return controller.Result{}, nil
		}
		select {
		case <-time.After(work):
		case <-ctx.Done():
			return controller.Result{}, ctx.Err()
		}
		d.Status, _ = json.Marshal(widgetStatus{Generation: d.Meta.Generation, By: id, Fence: f.Token})
		_, err = s.UpdateStatus(ctx, d)
		return controller.Result{}, err
	})
	c, err := controller.New(controller.Config{
		Name:       "widgets",
		Reconciler: rec,
		Sources:    []controller.Source{controller.Kind(s, failoverKind)},
		Workers:    4,
	})
	if err != nil {
		return err
	}
	m, err := controller.NewManager(controller.ManagerConfig{
		Controllers:   []*controller.Controller{c},
		Mode:          controller.Sharded,
		Leaser:        s,
		Identity:      id,
		LeaseDuration: failoverLease,
		RenewPeriod:   failoverRenew,
		Shards:        failoverShards,
	})
	if err != nil {
		return err
	}
	return m.Run(ctx)
}

// replica is a child process running replicaMain.
type replica struct {
	id     string
	cmd    *exec.Cmd
	output *syncBuffer
	done   chan error
}

func startReplica(t *testing.T, id string, env []string) *replica {
	t.Helper()
	r := &replica{id: id, output: &syncBuffer{}, done: make(chan error, 1)}
	r.cmd = exec.Command(os.Args[0], "-test.run=^$")
	r.cmd.Env = append(os.Environ(), append(env, envReplica+"="+id)...)
	r.cmd.Stdout, r.cmd.Stderr = r.output, r.output
	if err := r.cmd.Start(); err != nil {
		t.Fatalf("start replica %s: %v", id, err)
	}
	go func() { r.done <- r.cmd.Wait() }()
	return r
}

// syncBuffer is a bytes.Buffer safe for the writes of a child's output.
type syncBuffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestFailover runs three controller replicas, each its own process,
// sharding one kind over a three-member etcd cluster, while specs keep
// changing. It kills one replica with SIGKILL mid-work and checks that its
// shards move to the others within one lease period (the manager's bound
// of LeaseDuration + RenewPeriod, plus etcd's expiry lag and an allowance
// for a loaded machine), that every
// document converges, that no key was reconciled by two replicas at once,
// and that every key's status was written under non-decreasing fences.
func TestFailover(t *testing.T) {
	c, err := startCluster(t.TempDir(), clusterOptions{members: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer c.stop()
	const prefix = "/failover/"
	cli := c.client(t)
	s, err := etcd.New(etcd.Config{Client: cli, Prefix: prefix, Kinds: []string{failoverKind}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	const docs = 60
	var keys []string
	for i := range docs {
		key := fmt.Sprintf("team-%d/widget-%d", i%4, i)
		if _, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: failoverKind, Key: key}, Spec: []byte(`{"n":0}`)}); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, key)
	}
	start, err := s.List(ctx, failoverKind, store.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	history, err := s.Watch(ctx, failoverKind, start.Revision)
	if err != nil {
		t.Fatal(err)
	}
	defer history.Close()

	journalPath := t.TempDir() + "/journal"
	if err := os.WriteFile(journalPath, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{
		envEndpoints + "=" + strings.Join(c.endpoints(), ","),
		envPrefix + "=" + prefix,
		envJournal + "=" + journalPath,
	}
	replicas := map[string]*replica{}
	for _, id := range []string{"replica-a", "replica-b", "replica-c"} {
		replicas[id] = startReplica(t, id, env)
	}
	defer func() {
		for _, r := range replicas {
			r.cmd.Process.Kill()
			<-r.done
			if t.Failed() {
				t.Logf("output of %s:\n%s", r.id, r.output.String())
			}
		}
	}()

	// Wait until the shards are spread: 4 each.
	var owned map[string][]string
	for {
		owned, err = shardOwners(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		if len(owned) == 3 && len(owned["replica-a"]) == 4 && len(owned["replica-b"]) == 4 && len(owned["replica-c"]) == 4 {
			break
		}
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			t.Fatalf("shards never spread over the replicas: %v (last: %v)", err, owned)
		}
	}

	// Keep changing specs while one replica dies.
	writer := make(chan error, 1)
	go func() { writer <- changeSpecs(ctx, s, keys, 4*time.Second) }()
	if err := sleepCtx(ctx, time.Second); err != nil {
		t.Fatal(err)
	}
	victim := replicas["replica-b"]
	orphans := owned[victim.id]
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	<-victim.done
	delete(replicas, victim.id)

	// Its shards move to the survivors.
	bound := failoverLease + failoverRenew + etcdExpiryLag + loadAllowance
	for {
		owned, err = shardOwners(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		if len(owned[victim.id]) == 0 && len(owned["replica-a"])+len(owned["replica-c"]) == failoverShards {
			break
		}
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
			t.Fatalf("shards %v of the killed replica never moved: %v (last: %v)", orphans, err, owned)
		}
	}
	moved := time.Since(killed)
	t.Logf("shards %v of the killed replica moved %v after SIGKILL (bound %v)", orphans, moved.Round(time.Millisecond), bound)
	if moved > bound {
		t.Errorf("shards moved %v after the kill, more than one lease period (%v)", moved, bound)
	}
	if err := <-writer; err != nil {
		t.Fatal(err)
	}

	// Every document converges.
	var final store.ListResult
	for {
		final, err = s.List(ctx, failoverKind, store.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pending := 0
		for _, d := range final.Items {
			var st widgetStatus
			if len(d.Status) == 0 || json.Unmarshal(d.Status, &st) != nil || st.Generation != d.Meta.Generation {
				pending++
			}
		}
		if pending == 0 {
			break
		}
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			t.Fatalf("%d documents never converged: %v", pending, err)
		}
	}

	// Status writes of each key carry non-decreasing fences.
	last := int64(0)
	for _, d := range final.Items {
		last = max(last, d.Meta.Revision)
	}
	fences := map[string]int64{}
	writers := map[string]bool{}
	for {
		e, err := history.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(e.Document.Status) > 0 {
			var st widgetStatus
			if err := json.Unmarshal(e.Document.Status, &st); err != nil {
				t.Fatal(err)
			}
			if st.Fence < fences[e.Document.Meta.Key] {
				t.Errorf("%q: status written at fence %d after one at fence %d", e.Document.Meta.Key, st.Fence, fences[e.Document.Meta.Key])
			}
			fences[e.Document.Meta.Key] = st.Fence
			writers[st.By] = true
		}
		if e.Revision >= last {
			break
		}
	}
	if !writers[victim.id] {
		t.Errorf("the killed replica wrote no status before it died: it was not killed mid-work")
	}

	// Stop the survivors gracefully and check the journal: no key was
	// reconciled by two replicas at once.
	for _, r := range replicas {
		r.cmd.Process.Signal(syscall.SIGTERM)
		if err := <-r.done; err != nil {
			t.Errorf("replica %s: %v\n%s", r.id, err, r.output.String())
		}
		r.done <- nil
	}
	entries, err := readJournal(journalPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkExclusive(entries, victim.id, killed); err != nil {
		t.Error(err)
	}
	t.Logf("%d reconciles journaled by %d replicas", len(entries)/2, len(writers))
}

// shardOwners returns the shards each replica holds.
func shardOwners(ctx context.Context, s *etcd.Store) (map[string][]string, error) {
	leases, err := s.ListLeases(ctx, "shard/")
	if err != nil {
		return nil, err
	}
	owned := map[string][]string{}
	for _, l := range leases {
		owned[l.Holder] = append(owned[l.Holder], l.Name)
	}
	return owned, nil
}

// changeSpecs updates the specs of keys round-robin for d.
func changeSpecs(ctx context.Context, s *etcd.Store, keys []string, d time.Duration) error {
	end := time.Now().Add(d)
	for i := 0; time.Now().Before(end); i++ {
		key := keys[i%len(keys)]
		doc, err := s.Get(ctx, failoverKind, key)
		if err != nil {
			return err
		}
		doc.Spec = fmt.Appendf(nil, `{"n":%d}`, i+1)
		if _, err := s.UpdateSpec(ctx, doc); err != nil && !errors.Is(err, store.ErrConflict) {
			return err
		}
		if err := sleepCtx(ctx, 5*time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

func readJournal(path string) ([]journalEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []journalEntry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e journalEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			// The killed replica may have died in the middle of a line.
			continue
		}
		out = append(out, e)
	}
	return out, sc.Err()
}

// checkExclusive checks that no two replicas' reconciles of one key
// overlapped in time. A reconcile of the killed replica that never ended
// lasts until the kill.
func checkExclusive(entries []journalEntry, victim string, killed time.Time) error {
	type span struct {
		replica    string
		start, end int64
	}
	spans := map[string][]span{} // by key
	open := map[[2]string]int64{}
	for _, e := range entries {
		k := [2]string{e.Key, e.Replica}
		switch e.Event {
		case "start":
			open[k] = e.At
		case "end":
			spans[e.Key] = append(spans[e.Key], span{e.Replica, open[k], e.At})
			delete(open, k)
		}
	}
	for k, at := range open {
		if k[1] != victim {
			return fmt.Errorf("replica %s never ended its reconcile of %q", k[1], k[0])
		}
		spans[k[0]] = append(spans[k[0]], span{k[1], at, killed.UnixNano()})
	}
	for key, ss := range spans {
		for i, a := range ss {
			for _, b := range ss[i+1:] {
				if a.replica != b.replica && a.start < b.end && b.start < a.end {
					return fmt.Errorf("%q was reconciled by %s and %s at once (%v overlap)",
						key, a.replica, b.replica, time.Duration(min(a.end, b.end)-max(a.start, b.start)))
				}
			}
		}
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
