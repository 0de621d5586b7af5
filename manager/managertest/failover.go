package managertest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tendhq/tend/manager"

	"github.com/tendhq/tend/internal/wait"

	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/store"
)

// Timing of the failover test's replicas.
const (
	// FailoverLease is the replicas' lease duration.
	FailoverLease = 3 * time.Second
	// FailoverRenew is the replicas' lease renewal period.
	FailoverRenew = time.Second
	// LoadAllowance is added to the bound on how fast shards move, for a
	// loaded machine: the test runs three replicas and the backend's
	// servers on the same cores.
	LoadAllowance = time.Second
)

const (
	// failoverKind is the kind the replicas shard.
	failoverKind = "Widget"
	// failoverShards is the number of shards: four per replica.
	failoverShards = 12
	// failoverDocs is the number of documents.
	failoverDocs = 60
	// work is how long a reconcile works before it writes its status.
	work = 20 * time.Millisecond
	// churn is how long the specs keep changing; the kill comes one second
	// into it.
	churn = 4 * time.Second
)

// The replicas learn who they are and where their journal is from these
// environment variables.
const (
	envReplica = "TEND_FAILOVER_REPLICA"
	envJournal = "TEND_FAILOVER_JOURNAL"
)

// FailoverConfig describes the backend [Failover] runs over.
type FailoverConfig struct {
	// Open opens the backend under test holding kinds. Failover calls it in
	// the test process and each replica process calls it once; every call
	// must reach the same, initially empty, store. The returned function
	// releases what Open acquired. Required.
	Open func(ctx context.Context, kinds []string) (store.Backend, func(), error)
	// ExpiryLag is how long after a lease's TTL the backend may still hold
	// it, added to the bound on how fast shards move. Zero means none.
	ExpiryLag time.Duration
	// Unfenced says the backend cannot check fences (it refuses fenced
	// writes and has a FencingUnsupported method, as the Kubernetes backend
	// does). The replicas then run with [manager.Config].Unfenced
	// and write their statuses at fence 0, so the check of fences passes
	// trivially; every other check holds as it does for a fencing backend.
	Unfenced bool
}

func (cfg *FailoverConfig) validate() error {
	if cfg.Open == nil {
		return errors.New("managertest: FailoverConfig.Open is nil")
	}
	if cfg.ExpiryLag < 0 {
		return errors.New("managertest: FailoverConfig.ExpiryLag is negative")
	}
	return nil
}

// widgetStatus is what a replica writes: the generation it acted on, who
// it is and the fence it held.
type widgetStatus struct {
	Generation int64  `json:"generation"`
	By         string `json:"by"`
	Fence      int64  `json:"fence"`
}

// ReplicaMain runs the process as a failover replica and exits if [Failover]
// started it as one; otherwise it returns at once. Call it first in the
// TestMain of the package that calls Failover, with the same config. A
// replica runs until SIGTERM, or until it is killed.
func ReplicaMain(cfg FailoverConfig) {
	id := os.Getenv(envReplica)
	if id == "" {
		return
	}
	if err := runReplica(cfg, id); err != nil {
		fmt.Fprintf(os.Stderr, "replica %s: %v\n", id, err)
		os.Exit(1)
	}
	os.Exit(0)
}

func runReplica(cfg FailoverConfig, id string) error {
	if err := cfg.validate(); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	s, release, err := cfg.Open(ctx, []string{failoverKind})
	if err != nil {
		return err
	}
	defer release()
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
		if ok == cfg.Unfenced {
			return controller.Result{}, fmt.Errorf("reconcile with fence %v, %v, by a replica that runs unfenced=%v", f, ok, cfg.Unfenced)
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
		if err := wait.Sleep(ctx, work); err != nil {
			return controller.Result{}, err
		}
		d.Status, _ = json.Marshal(widgetStatus{Generation: d.Meta.Generation, By: id, Fence: f.Token})
		_, err = s.UpdateStatus(ctx, d)
		return controller.Result{}, err
	})
	c, err := controller.New(controller.Config{
		Name:       "widgets",
		Reconciler: rec,
		Sources:    []controller.Source{controller.For(s, failoverKind)},
		Workers:    4,
	})
	if err != nil {
		return err
	}
	m, err := manager.New(manager.Config{
		Controllers:   []*controller.Controller{c},
		Mode:          manager.Sharded,
		Leaser:        s,
		Identity:      id,
		LeaseDuration: FailoverLease,
		RenewPeriod:   FailoverRenew,
		Shards:        failoverShards,
		Unfenced:      cfg.Unfenced,
	})
	if err != nil {
		return err
	}
	return m.Run(ctx)
}

// replica is a child process running ReplicaMain.
type replica struct {
	id     string
	cmd    *exec.Cmd
	output *syncBuffer
	done   chan error // receives the result of cmd.Wait
}

func startReplica(t *testing.T, id, journal string) *replica {
	t.Helper()
	r := &replica{id: id, output: &syncBuffer{}, done: make(chan error, 1)}
	r.cmd = exec.Command(os.Args[0], "-test.run=^$")
	r.cmd.Env = append(os.Environ(), envReplica+"="+id, envJournal+"="+journal)
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

// Failover runs three controller replicas, each its own process, sharding
// one kind over the backend cfg opens, kills one with SIGKILL mid-work and
// checks the claims listed in the package documentation. The calling
// package's TestMain must call [ReplicaMain] with the same config. Failover
// takes ten to twenty seconds.
func Failover(t *testing.T, cfg FailoverConfig) {
	t.Helper()
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	s, release, err := cfg.Open(ctx, []string{failoverKind})
	if err != nil {
		t.Fatal(err)
	}
	defer release()

	var keys []string
	for i := range failoverDocs {
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
	replicas := map[string]*replica{}
	for _, id := range []string{"replica-a", "replica-b", "replica-c"} {
		replicas[id] = startReplica(t, id, journalPath)
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

	// Wait until the shards are spread: four each.
	var owned map[string][]string
	for {
		owned, err = shardOwners(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		if len(owned) == 3 && len(owned["replica-a"]) == 4 && len(owned["replica-b"]) == 4 && len(owned["replica-c"]) == 4 {
			break
		}
		if err := wait.Sleep(ctx, 50*time.Millisecond); err != nil {
			t.Fatalf("shards never spread over the replicas: %v (last: %v)", err, owned)
		}
	}

	// Keep changing specs while one replica dies.
	writer := make(chan error, 1)
	go func() { writer <- changeSpecs(ctx, s, keys, churn) }()
	if err := wait.Sleep(ctx, time.Second); err != nil {
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
	bound := FailoverLease + FailoverRenew + cfg.ExpiryLag + LoadAllowance
	for {
		owned, err = shardOwners(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		if len(owned[victim.id]) == 0 && len(owned["replica-a"])+len(owned["replica-c"]) == failoverShards {
			break
		}
		if err := wait.Sleep(ctx, 20*time.Millisecond); err != nil {
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
		if err := wait.Sleep(ctx, 50*time.Millisecond); err != nil {
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
func shardOwners(ctx context.Context, s store.Backend) (map[string][]string, error) {
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
func changeSpecs(ctx context.Context, s store.Backend, keys []string, d time.Duration) error {
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
		if err := wait.Sleep(ctx, 5*time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}
