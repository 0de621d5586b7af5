// Command raftcluster runs a declarative database controller on
// real etcd members: a Cluster document says how many members it wants, and
// the operator turns that into a running Raft cluster, one recorded step at
// a time, without ever losing its quorum.
//
// It starts three members (child processes of this program, on loopback
// ports), scales them to five and back to three, kills a member's process,
// deletes a Member document by hand, and all the while writes and reads a key
// through the cluster, counting the writes. It shows the phase, the plan,
// etcd's own member list and leader as they change, and exits non-zero if a
// write failed or a step did not finish.
//
//	go run ./examples/raftcluster
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

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/examples/raftcluster/etcdproc"
	"github.com/tendhq/tend/examples/raftcluster/operator"
	"github.com/tendhq/tend/examples/raftcluster/probe"
	"github.com/tendhq/tend/store"
)

const clusterKey = "demo"

func main() {
	// A member of the demo's cluster is this program started again.
	etcdproc.RunChildIfRequested()

	keep := flag.Bool("keep", false, "keep the data directory and member logs")
	timeout := flag.Duration("step-timeout", 60*time.Second, "how long one step may take")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *keep, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "raftcluster:", err)
		os.Exit(1)
	}
}

// demo is the running demonstration: the operator, its members and the
// writer.
type demo struct {
	op      *operator.Operator
	rt      *etcdproc.Runtime
	etcd    *operator.Etcd
	writer  *probe.Writer
	start   time.Time
	timeout time.Duration

	mu   sync.Mutex // guards last
	last string
}

func run(ctx context.Context, keep bool, timeout time.Duration) error {
	dir, err := os.MkdirTemp("", "raftcluster-")
	if err != nil {
		return err
	}
	if keep {
		fmt.Println("data and member logs in", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	b, err := memory.New(memory.Config{Kinds: []string{operator.KindCluster, operator.KindMember, operator.KindMemberConfig}})
	if err != nil {
		return err
	}
	mc, err := operator.NewDocumentMemberConfig(b)
	if err != nil {
		return err
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
	d := &demo{op: op, rt: rt, etcd: ms, writer: w, start: time.Now(), timeout: timeout}

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

// scenario drives the cluster through the demonstration.
func (d *demo) scenario(ctx context.Context, wg *sync.WaitGroup) error {
	d.say("create cluster %q with 3 replicas", clusterKey)
	_, err := d.op.Clusters().Create(ctx, &store.Object[operator.ClusterSpec, operator.ClusterStatus]{
		Meta: store.Meta{Key: clusterKey},
		Spec: operator.ClusterSpec{Replicas: 3},
	})
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
// status is read every 50 ms; etcd's member list and leader, slower to ask,
// every 300 ms.
func (d *demo) show(ctx context.Context) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	etcdView, leader := "unreachable", "?"
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
		line := fmt.Sprintf("phase=%-12s plan=%-12s etcd=[%s] leader=%s", st.Phase, plan, etcdView, leader)
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

// say prints a step of the scenario.
func (d *demo) say(format string, args ...any) {
	fmt.Printf("%6.1fs  >> %s\n", time.Since(d.start).Seconds(), fmt.Sprintf(format, args...))
}
