// Command raftcluster runs a declarative database controller on
// real etcd members: a Cluster document says how many members it wants, and
// the operator turns that into a running Raft cluster, one recorded step at
// a time, without ever losing its quorum.
//
// It starts three members (child processes of this program, on loopback
// ports), scales them to five and back to three, kills a member's process,
// deletes a Member document by hand, and all the while writes and reads a key
// through the cluster, counting the writes. It shows the phase, the plan,
// the member configuration, etcd's own member list and leader as they
// change, and exits non-zero if a write failed or a step did not finish.
//
//	go run ./examples/raftcluster
//
// The documents live in a memory store by default. With -store kube they are
// custom resources in a Kubernetes API server, and the member configuration
// a ConfigMap; with -store postgres they are rows of a PostgreSQL schema,
// the member configuration a document beside them. The members still run on
// this machine:
//
//	go run ./examples/raftcluster -store kube -kubeconfig PATH [-namespace NS]
//	go run ./examples/raftcluster -store postgres -postgres-url URL [-postgres-schema S]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/tendhq/tend/backends/kube"
	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/backends/postgres"
	"github.com/tendhq/tend/examples/raftcluster/configmap"
	"github.com/tendhq/tend/examples/raftcluster/etcdproc"
	"github.com/tendhq/tend/examples/raftcluster/operator"
	"github.com/tendhq/tend/examples/raftcluster/probe"
	"github.com/tendhq/tend/store"
)

const clusterKey = "demo"

func main() {
	// A member of the demo's cluster is this program started again.
	etcdproc.RunChildIfRequested()

	var o options
	flag.BoolVar(&o.keep, "keep", false, "keep the data directory and member logs")
	flag.DurationVar(&o.timeout, "step-timeout", 60*time.Second, "how long one step may take")
	flag.StringVar(&o.store, "store", "memory", "where the documents live: memory, kube (a Kubernetes API server) or postgres")
	flag.StringVar(&o.kubeconfig, "kubeconfig", "", "the kubeconfig of the API server, for -store kube")
	flag.StringVar(&o.namespace, "namespace", "default", "the namespace of the documents and the ConfigMap, for -store kube; it must exist")
	flag.StringVar(&o.postgresURL, "postgres-url", "", "the PostgreSQL server's connection string, for -store postgres")
	flag.StringVar(&o.postgresSchema, "postgres-schema", "raftcluster", "the schema of the documents, for -store postgres; created when missing")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "raftcluster:", err)
		os.Exit(1)
	}
}

// options are the command line's.
type options struct {
	keep       bool
	timeout    time.Duration
	store      string
	kubeconfig string
	namespace  string

	postgresURL    string
	postgresSchema string
}

// demo is the running demonstration: the operator, its members and the
// writer.
type demo struct {
	op      *operator.Operator
	rt      *etcdproc.Runtime
	etcd    *operator.Etcd
	config  operator.MemberConfig
	writer  *probe.Writer
	start   time.Time
	timeout time.Duration

	mu   sync.Mutex // guards last
	last string
}

func run(ctx context.Context, o options) error {
	b, mc, closeStore, err := openStore(ctx, o)
	if err != nil {
		return err
	}
	defer closeStore()
	dir, err := os.MkdirTemp("", "raftcluster-")
	if err != nil {
		return err
	}
	if o.keep {
		fmt.Println("data and member logs in", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	rt, err := etcdproc.New(etcdproc.Config{LogDir: dir})
	if err != nil {
		return err
	}
	defer rt.Close()
	ms := &operator.Etcd{}
	defer ms.Close()
	op, err := operator.New(operator.Config{Backend: b, Membership: ms, Runtime: rt, MemberConfig: mc, DataDir: dir, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	w, err := probe.New(probe.Config{Endpoints: func(ctx context.Context) []string {
		c, err := op.Clusters().Get(ctx, clusterKey)
		if err != nil {
			return nil
		}
		return c.Status.Endpoints()
	}})
	if err != nil {
		return err
	}
	d := &demo{op: op, rt: rt, etcd: ms, config: mc, writer: w, start: time.Now(), timeout: o.timeout}

	// Everything the demo starts stops when runCtx ends, and is waited for.
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() {
		if err := op.Run(runCtx); err != nil {
			fmt.Fprintln(os.Stderr, "operator:", err)
		}
	})
	wg.Go(func() { d.show(runCtx) })

	err = d.scenario(runCtx, &wg)
	if err == nil {
		err = d.teardown(runCtx)
	}
	ok, failed := w.Counts()
	fmt.Printf("\nwrites: %d succeeded, %d failed after retries\n", ok, failed)
	if err == nil && failed > 0 {
		err = fmt.Errorf("%d writes failed; last: %v", failed, w.LastErr())
	}
	if err == nil {
		fmt.Println("the cluster kept serving through every change")
	}
	return err
}

// openStore returns the store the options name, holding the operator's
// kinds, the member configuration that goes with it, and a function that
// closes the store.
func openStore(ctx context.Context, o options) (store.Backend, operator.MemberConfig, func(), error) {
	kinds := []string{operator.KindCluster, operator.KindMember, operator.KindMemberConfig}
	switch o.store {
	case "memory":
		b, err := memory.New(memory.Config{Kinds: kinds})
		if err != nil {
			return nil, nil, nil, err
		}
		mc, err := operator.NewDocumentMemberConfig(b)
		return b, mc, func() {}, err
	case "postgres":
		if o.postgresURL == "" {
			return nil, nil, nil, errors.New("-store postgres needs -postgres-url")
		}
		b, err := postgres.New(ctx, postgres.Config{URL: o.postgresURL, Schema: o.postgresSchema, Kinds: kinds})
		if err != nil {
			return nil, nil, nil, err
		}
		mc, err := operator.NewDocumentMemberConfig(b)
		if err != nil {
			b.Close()
			return nil, nil, nil, err
		}
		fmt.Printf("documents and member configuration: schema %s of PostgreSQL\n", o.postgresSchema)
		return b, mc, b.Close, nil
	case "kube":
		if o.kubeconfig == "" {
			return nil, nil, nil, errors.New("-store kube needs -kubeconfig")
		}
		rest, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
		if err != nil {
			return nil, nil, nil, err
		}
		rest.QPS, rest.Burst = 100, 200
		b, err := kube.New(kube.Config{REST: rest, Kinds: []string{operator.KindCluster, operator.KindMember}, Namespace: o.namespace})
		if err != nil {
			return nil, nil, nil, err
		}
		ictx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := b.Install(ictx); err != nil {
			return nil, nil, nil, err
		}
		mc, err := configmap.New(configmap.Config{REST: rest, Namespace: o.namespace})
		if err != nil {
			return nil, nil, nil, err
		}
		fmt.Printf("documents: custom resources in namespace %s; member configuration: ConfigMap %s/%s\n",
			o.namespace, o.namespace, configmap.Name(clusterKey))
		return b, mc, func() {}, nil
	}
	return nil, nil, nil, fmt.Errorf("-store %q: want memory, kube or postgres", o.store)
}

// teardown deletes the cluster and its members, as a user would: the
// members' finalizers stop their processes. The documents outlive the demo
// in a store such as the Kubernetes API; this leaves none behind.
func (d *demo) teardown(ctx context.Context) error {
	d.say("delete the cluster and its members")
	if err := d.op.Clusters().Delete(ctx, clusterKey, store.DeleteOptions{}); err != nil {
		return err
	}
	ms, _, err := d.op.Members().List(ctx, store.ListOptions{})
	if err != nil {
		return err
	}
	for _, m := range ms {
		if m.Spec.Cluster != clusterKey {
			continue
		}
		if err := d.op.Members().Delete(ctx, m.Key, store.DeleteOptions{}); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	return d.until(ctx, "members deleted", func() bool {
		ms, _, err := d.op.Members().List(ctx, store.ListOptions{})
		return err == nil && !slices.ContainsFunc(ms, func(m *store.Object[operator.MemberSpec, operator.MemberStatus]) bool {
			return m.Spec.Cluster == clusterKey
		})
	})
}

// scenario drives the cluster through the demonstration.
func (d *demo) scenario(ctx context.Context, wg *sync.WaitGroup) error {
	d.say("create cluster %q with 3 replicas", clusterKey)
	_, err := d.op.Clusters().Create(ctx, &store.Object[operator.ClusterSpec, operator.ClusterStatus]{
		Meta: store.Meta{Key: clusterKey},
		Spec: operator.ClusterSpec{Replicas: 3},
	})
	if errors.Is(err, store.ErrAlreadyExists) {
		return fmt.Errorf("cluster %q exists already (left by an interrupted run? delete it, or use another namespace): %w", clusterKey, err)
	}
	if err != nil {
		return err
	}
	if err := d.settle(ctx, 3); err != nil {
		return err
	}
	d.say("start writing and reading key \"probe\"")
	wctx, stopWriter := context.WithCancel(ctx)
	defer stopWriter()
	wg.Go(func() {
		if err := d.writer.Run(wctx); err != nil {
			fmt.Fprintln(os.Stderr, "writer:", err)
		}
	})

	for _, n := range []int{5, 3} {
		d.say("scale to %d replicas (one member at a time)", n)
		if err := d.scale(ctx, n); err != nil {
			return err
		}
		if err := d.settle(ctx, n); err != nil {
			return err
		}
	}

	victim, err := d.leader(ctx)
	if err != nil {
		return err
	}
	key := operator.MemberKey(clusterKey, victim)
	starts := d.rt.Starts(key)
	d.say("kill -9 the leader's process (%s, pid %d): it must come back on its data directory", operator.MemberName(victim), d.rt.PID(key))
	d.rt.Kill(key)
	if err := d.until(ctx, "member restarted", func() bool { return d.rt.Starts(key) > starts && d.rt.Running(key) }); err != nil {
		return err
	}
	if err := d.settle(ctx, 3); err != nil {
		return err
	}

	c, err := d.op.Clusters().Get(ctx, clusterKey)
	if err != nil {
		return err
	}
	gone := c.Status.Members[0].ID
	d.say("delete Member document %s by hand: it must be replaced by a new id, and leave etcd's membership", operator.MemberKey(clusterKey, gone))
	if err := d.op.Members().Delete(ctx, operator.MemberKey(clusterKey, gone), store.DeleteOptions{}); err != nil {
		return err
	}
	if err := d.until(ctx, "member replaced", func() bool {
		c, err := d.op.Clusters().Get(ctx, clusterKey)
		return err == nil && !slices.Contains(c.Status.IDs(), gone)
	}); err != nil {
		return err
	}
	if err := d.settle(ctx, 3); err != nil {
		return err
	}
	stopWriter()
	return nil
}

// scale writes a new intent.
func (d *demo) scale(ctx context.Context, n int) error {
	for {
		c, err := d.op.Clusters().Get(ctx, clusterKey)
		if err != nil {
			return err
		}
		c.Spec.Replicas = n
		_, err = d.op.Clusters().UpdateSpec(ctx, c)
		if !errors.Is(err, store.ErrConflict) {
			return err
		}
	}
}

// settle waits until the cluster has settled at n members, checked against
// etcd's own member list.
func (d *demo) settle(ctx context.Context, n int) error {
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	ids, err := d.op.WaitSettled(ctx, clusterKey, n)
	if err != nil {
		return err
	}
	leader, err := d.leader(ctx)
	if err != nil {
		return err
	}
	d.say("settled: members %v, matching etcd's member list; leader m%d", ids, leader)
	return nil
}

// until waits for cond, checking it every 100 ms.
func (d *demo) until(ctx context.Context, what string, cond func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", what, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

// leader returns the operator's id of the etcd leader.
func (d *demo) leader(ctx context.Context) (int, error) {
	c, err := d.op.Clusters().Get(ctx, clusterKey)
	if err != nil {
		return 0, err
	}
	v, err := d.etcd.View(ctx, c.Status.Endpoints())
	if err != nil {
		return 0, err
	}
	for _, m := range c.Status.Members {
		if rm, ok := v.ByPeerURL(m.PeerURL); ok && rm.ID == v.Leader {
			return m.ID, nil
		}
	}
	return 0, errors.New("no leader")
}

// show prints the cluster's state whenever it changes, until ctx ends. The
// status and the member configuration are read every 50 ms; etcd's member
// list and leader, slower to ask, every 300 ms.
func (d *demo) show(ctx context.Context) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	etcdView, leader, conf := "unreachable", "?", "-"
	var asked time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		c, err := d.op.Clusters().Get(ctx, clusterKey)
		if err != nil {
			continue
		}
		st := c.Status
		plan := "-"
		if p := st.Plan; p != nil {
			var names []string
			for _, m := range p.Members {
				names = append(names, m.Name())
			}
			plan = string(p.Op) + " " + strings.Join(names, ",")
		}
		if eps := st.Endpoints(); len(eps) > 0 && time.Since(asked) > 300*time.Millisecond {
			vctx, cancel := context.WithTimeout(ctx, time.Second)
			if v, err := d.etcd.View(vctx, eps); err == nil {
				etcdView, leader = strings.Join(v.Names(), " "), v.LeaderName()
			} else {
				etcdView, leader = "unreachable", "?"
			}
			cancel()
			asked = time.Now()
		}
		if initial, err := d.config.InitialCluster(ctx, operator.ClusterRef{Key: c.Key, UID: c.UID}); err == nil {
			conf = configNames(initial)
		}
		line := fmt.Sprintf("phase=%-12s plan=%-12s config=[%s] etcd=[%s] leader=%s", st.Phase, plan, conf, etcdView, leader)
		d.mu.Lock()
		changed := line != d.last
		d.last = line
		d.mu.Unlock()
		if changed {
			ok, failed := d.writer.Counts()
			fmt.Printf("%6.1fs  %s  writes ok=%d failed=%d\n", time.Since(d.start).Seconds(), line, ok, failed)
		}
	}
}

// configNames returns the member names of an initial cluster, sorted.
func configNames(initial string) string {
	var names []string
	for part := range strings.SplitSeq(initial, ",") {
		if name, _, ok := strings.Cut(part, "="); ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return strings.Join(names, " ")
}

// say prints a step of the scenario.
func (d *demo) say(format string, args ...any) {
	fmt.Printf("%6.1fs  >> %s\n", time.Since(d.start).Seconds(), fmt.Sprintf(format, args...))
}
