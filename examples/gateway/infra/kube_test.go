package infra_test

import (
	"context"
	"errors"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tendhq/tend/backends/kube"
	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/examples/gateway/infra"
	"github.com/tendhq/tend/examples/gateway/platform"
	"github.com/tendhq/tend/examples/internal/servertest"
	"github.com/tendhq/tend/finalizer"
	"github.com/tendhq/tend/store"
)

// newKube returns a Kube on the test cluster, with the custom resources
// installed, and a client of the same cluster for the test's own looks.
func newKube(t *testing.T) (*infra.Kube, *kube.Client) {
	t.Helper()
	cfg := servertest.Kube(t, "TEND_KUBECONFIG")
	k, err := infra.NewKube(infra.KubeConfig{REST: cfg})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := k.Install(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := kube.NewClient(kube.ClientConfig{REST: cfg, FieldManager: "infra-test"})
	if err != nil {
		t.Fatal(err)
	}
	return k, c
}

// waitFor polls cond for up to two minutes.
func waitFor(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ok, err := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s (last error: %v)", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// resources returns one resource of every kind in namespace ns.
func resources(ns string) []infra.Resource {
	label := map[string]string{platform.LabelGateway: ns}
	res := func(kind infra.Kind, name string, data map[string]string) infra.Resource {
		r := infra.Resource{Ref: infra.Ref{Kind: kind, Namespace: ns, Name: name}, Labels: label, Data: data}
		if kind == infra.Namespace {
			r.Namespace = ""
		}
		return r
	}
	return []infra.Resource{
		res(infra.Namespace, ns, nil),
		res(infra.ConfigMap, ns+"-config", map[string]string{"database": "db"}),
		res(infra.Deployment, ns, map[string]string{"image": "example.com/runtime:1", "configMap": ns + "-config"}),
		res(infra.Service, ns, map[string]string{"port": "80"}),
		res(infra.Certificate, ns+"-cert", map[string]string{"host": ns + ".example.com"}),
		res(infra.ApisixTls, ns+"-tls", nil),
		res(infra.ApisixPluginConfig, ns+"-plugins", map[string]string{"plugins": "cors,key-auth"}),
		res(infra.ApisixRoute, ns+"-dev", map[string]string{"host": ns + "-dev.example.dev", "backend": ns}),
	}
}

// uniqueNamespace returns a namespace name no other test or run uses.
func uniqueNamespace(prefix string) string { return prefix + "-" + suffix() }

// TestKube: every kind of resource applies onto a real object, reads back
// as applied with the cluster's readiness, and deletes idempotently; what a
// real server refuses is refused with the package's sentinels.
func TestKube(t *testing.T) {
	k, c := newKube(t)
	ctx := t.Context()
	ns := uniqueNamespace("infra")
	rs := resources(ns)
	t.Cleanup(func() { _ = k.Delete(context.Background(), rs[0].Ref) })

	if err := k.Apply(ctx, rs[1]); !errors.Is(err, infra.ErrNotFound) {
		t.Fatalf("apply into a missing namespace: got %v, want ErrNotFound", err)
	}
	for _, r := range rs {
		if err := k.Apply(ctx, r); err != nil {
			t.Fatalf("apply %v: %v", r.Ref, err)
		}
		if err := k.Apply(ctx, r); err != nil {
			t.Fatalf("apply %v again: %v", r.Ref, err)
		}
		o, err := k.Get(ctx, r.Ref)
		if err != nil || o.Ref != r.Ref || o.Labels[platform.LabelGateway] != ns || !maps.Equal(o.Data, r.Data) || o.Terminating {
			t.Fatalf("get %v: %+v, %v", r.Ref, o, err)
		}
	}
	// The objects are the real kinds with the data in their fields.
	dep, err := c.Get(ctx, kube.Ref{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: ns})
	if err != nil {
		t.Fatal(err)
	}
	containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	if len(containers) != 1 || containers[0].(map[string]any)["image"] != "example.com/runtime:1" {
		t.Fatalf("Deployment containers: %v", containers)
	}
	route, err := c.Get(ctx, kube.Ref{APIVersion: "apisix.apache.org/v2", Kind: "ApisixRoute", Namespace: ns, Name: ns + "-dev"})
	if err != nil {
		t.Fatal(err)
	}
	if hosts, _, _ := unstructured.NestedSlice(route.Object, "spec", "http"); len(hosts) != 1 {
		t.Fatalf("ApisixRoute spec: %v", route.Object["spec"])
	}

	for _, r := range rs {
		if r.Kind == infra.Deployment {
			continue // needs the controllers: TestKubeDeployment
		}
		waitFor(t, r.Ref.String()+" ready", func() (bool, error) {
			o, err := k.Get(ctx, r.Ref)
			return err == nil && o.Ready, err
		})
	}
	listed, err := k.Resources(ctx, platform.LabelGateway+"="+ns)
	if err != nil || len(listed) != len(rs) {
		t.Fatalf("Resources: %d, %v; want %d", len(listed), err, len(rs))
	}

	for _, r := range slices.Backward(rs[1:]) {
		for range 2 {
			if err := k.Delete(ctx, r.Ref); err != nil {
				t.Fatalf("delete %v: %v", r.Ref, err)
			}
		}
		if r.Kind == infra.Deployment {
			continue
		}
		if _, err := k.Get(ctx, r.Ref); !errors.Is(err, infra.ErrNotFound) {
			t.Fatalf("get %v after delete: %v", r.Ref, err)
		}
	}
}

// TestKubeTerminating: a Namespace being deleted is reported Terminating,
// and nothing is applied into it.
func TestKubeTerminating(t *testing.T) {
	k, c := newKube(t)
	ctx := t.Context()
	ns := uniqueNamespace("infra-term")
	rs := resources(ns)
	if err := k.Apply(ctx, rs[0]); err != nil {
		t.Fatal(err)
	}
	// The test's finalizer keeps the namespace Terminating.
	u, err := c.Get(ctx, kube.Ref{APIVersion: "v1", Kind: "Namespace", Name: ns})
	if err != nil {
		t.Fatal(err)
	}
	hold := kube.NewFinalizerObject(c, u)
	if err := finalizer.Add(ctx, hold, "test.tend.dev/hold"); err != nil {
		t.Fatal(err)
	}
	if err := k.Delete(ctx, rs[0].Ref); err != nil {
		t.Fatal(err)
	}
	o, err := k.Get(ctx, rs[0].Ref)
	if err != nil || !o.Terminating || o.Ready {
		t.Fatalf("a namespace being deleted: %+v, %v; want Terminating, not ready", o, err)
	}
	if err := k.Apply(ctx, rs[1]); !errors.Is(err, infra.ErrTerminating) {
		t.Fatalf("apply into a Terminating namespace: got %v, want ErrTerminating", err)
	}
	if err := k.Apply(ctx, rs[0]); !errors.Is(err, infra.ErrTerminating) {
		t.Fatalf("apply of a Terminating namespace: got %v, want ErrTerminating", err)
	}
	if err := hold.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if err := finalizer.Remove(ctx, hold, "test.tend.dev/hold"); err != nil {
		t.Fatal(err)
	}
}

// TestKubeDeployment: on the test cluster (deployment controller,
// scheduler, kwok's nodes) a Deployment becomes ready, and once deleted
// stays Terminating until its pods are gone.
func TestKubeDeployment(t *testing.T) {
	servertest.Env(t, "TEND_KUBE_AUDIT_LOG", "kube") // the cluster with its controllers
	k, c := newKube(t)
	ctx := t.Context()
	ns := uniqueNamespace("infra-dep")
	rs := resources(ns)
	t.Cleanup(func() { _ = k.Delete(context.Background(), rs[0].Ref) })
	for _, r := range rs[:3] {
		if err := k.Apply(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	dep := rs[2].Ref
	waitFor(t, "the Deployment ready", func() (bool, error) {
		o, err := k.Get(ctx, dep)
		return err == nil && o.Ready, err
	})
	pods, err := c.List(ctx, "v1", "Pod", kube.ListOptions{Namespace: ns})
	if err != nil || len(pods) != 1 {
		t.Fatalf("pods of a ready Deployment: %d, %v", len(pods), err)
	}
	if err := k.Delete(ctx, dep); err != nil {
		t.Fatal(err)
	}
	if o, err := k.Get(ctx, dep); err != nil || !o.Terminating || o.Ready {
		t.Fatalf("a Deployment just deleted: %+v, %v; want Terminating (foreground deletion)", o, err)
	}
	waitFor(t, "the Deployment gone", func() (bool, error) {
		_, err := k.Get(ctx, dep)
		return errors.Is(err, infra.ErrNotFound), err
	})
	if pods, err := c.List(ctx, "v1", "Pod", kube.ListOptions{Namespace: ns}); err != nil || len(pods) != 0 {
		t.Fatalf("pods left once the Deployment is gone: %d, %v", len(pods), err)
	}
}

// databaseLog is a Databases that logs each creation and drop it is asked
// for, as Sim logs its own, so that the ordering rules can be checked on a
// real database server. An op is logged when its call starts, whatever its
// outcome: a drop that failed may still have dropped.
type databaseLog struct {
	infra.Databases

	mu  sync.Mutex // guards ops
	ops []infra.Op
}

func (l *databaseLog) log(t infra.OpType, db infra.Database) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ops = append(l.ops, infra.Op{Seq: len(l.ops) + 1, Type: t, Database: db.Name, Time: time.Now()})
}

func (l *databaseLog) EnsureDatabase(ctx context.Context, db infra.Database) error {
	l.log(infra.OpCreateDatabase, db)
	return l.Databases.EnsureDatabase(ctx, db)
}

func (l *databaseLog) DropDatabase(ctx context.Context, db infra.Database) error {
	l.log(infra.OpDropDatabase, db)
	return l.Databases.DropDatabase(ctx, db)
}

func (l *databaseLog) Ops() []infra.Op {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.ops)
}

// TestKubeCascade runs a gateway through creation, start, stop, start and
// the deletion cascade on the test cluster, with its database on PostgreSQL
// when TEND_POSTGRES_URL is set and simulated otherwise, and checks the
// platform's ordering rules on the API server's audit log.
func TestKubeCascade(t *testing.T) {
	audit := servertest.Env(t, "TEND_KUBE_AUDIT_LOG", "kube")
	k, _ := newKube(t)
	var dbs infra.Databases
	if os.Getenv("TEND_POSTGRES_URL") != "" {
		pg, _ := newPostgres(t)
		dbs = pg
	} else {
		sim, err := infra.NewSim(infra.SimConfig{})
		if err != nil {
			t.Fatal(err)
		}
		dbs = sim
	}
	logged := &databaseLog{Databases: dbs}
	st, err := memory.New(memory.Config{Kinds: platform.Kinds()})
	if err != nil {
		t.Fatal(err)
	}
	p, ctx := runPlatform(t, platform.Config{Store: st, Cluster: k, Databases: logged, Poll: 100 * time.Millisecond})

	id := uniqueNamespace("gw")
	t.Cleanup(func() { _ = dbs.DropDatabase(context.Background(), databaseOf(id)) })
	gws := p.Collections().Gateways
	waitPhase := func(phase platform.GatewayPhase) {
		t.Helper()
		waitFor(t, string(phase), func() (bool, error) {
			gw, err := gws.Get(ctx, id)
			return err == nil && gw.Status.Phase == phase && gw.Status.Operation == nil, err
		})
	}
	if _, err := p.CreateGateway(ctx, id, platform.GatewaySpec{State: platform.Running, Image: "example.com/runtime:1",
		CustomDomain: id + ".api.example.com"}); err != nil {
		t.Fatal(err)
	}
	waitPhase(platform.GatewayStarted)
	for _, s := range []platform.GatewayState{platform.Stopped, platform.Running} {
		if _, err := p.SetGatewayState(ctx, id, s); err != nil {
			t.Fatal(err)
		}
		if s == platform.Stopped {
			waitPhase(platform.GatewayStopped)
		} else {
			waitPhase(platform.GatewayStarted)
		}
	}
	if _, err := p.SetGatewayState(ctx, id, platform.Deleted); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "removal", func() (bool, error) {
		_, err := gws.Get(ctx, id)
		return errors.Is(err, store.ErrNotFound), err
	})

	ops := auditOps(t, k, audit, id)
	count := map[string]int{}
	for _, op := range ops {
		count[string(op.Type)+" "+string(op.Ref.Kind)]++
	}
	// Two starts and two stops: two Deployments created, deleted and gone,
	// with the routes and the namespace.
	if count["apply Deployment"] < 2 {
		t.Errorf("apply Deployment: %d in the audit log, want at least 2\n%v", count["apply Deployment"], ops)
	}
	for what, want := range map[string]int{
		"delete Deployment": 2, "gone Deployment": 2,
		"delete ApisixRoute": 6, "gone ApisixRoute": 6, "gone Namespace": 1,
	} {
		if count[what] != want {
			t.Errorf("%s: %d in the audit log, want %d\n%v", what, count[what], want, ops)
		}
	}
	merged := infra.MergeOps(ops, logged.Ops())
	if err := platform.CheckOrder(merged); err != nil {
		t.Errorf("ordering rules on the audit log: %v\n%v", err, merged)
	}
	if ok, err := dbs.DatabaseExists(ctx, databaseOf(id)); err != nil || ok {
		t.Errorf("database after removal: exists %v, %v", ok, err)
	}
	left, err := k.Resources(ctx, platform.LabelGateway+"="+id)
	if err != nil || len(left) != 0 {
		t.Errorf("resources left: %v, %v", left, err)
	}
}

// TestKubeAuditCatchesDisorder: the ordering rules, checked on the audit
// log, catch a Deployment deleted while a route exists and a database
// dropped while the Deployment is still Terminating.
func TestKubeAuditCatchesDisorder(t *testing.T) {
	audit := servertest.Env(t, "TEND_KUBE_AUDIT_LOG", "kube")
	k, c := newKube(t)
	ctx := t.Context()
	ns := uniqueNamespace("gw-bad")
	rs := resources(ns)
	t.Cleanup(func() { _ = k.Delete(context.Background(), rs[0].Ref) })
	sim, err := infra.NewSim(infra.SimConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if err := k.Apply(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := sim.EnsureDatabase(ctx, databaseOf(ns)); err != nil {
		t.Fatal(err)
	}
	// The test's finalizer keeps the Deployment Terminating until removed.
	dep, err := c.Get(ctx, kube.Ref{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: ns})
	if err != nil {
		t.Fatal(err)
	}
	hold := kube.NewFinalizerObject(c, dep)
	if err := finalizer.Add(ctx, hold, "test.tend.dev/hold"); err != nil {
		t.Fatal(err)
	}
	if err := k.Delete(ctx, rs[2].Ref); err != nil { // the route still exists
		t.Fatal(err)
	}
	if err := sim.DropDatabase(ctx, databaseOf(ns)); err != nil { // the Deployment still exists
		t.Fatal(err)
	}
	if err := hold.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if err := finalizer.Remove(ctx, hold, "test.tend.dev/hold"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the Deployment gone", func() (bool, error) {
		_, err := k.Get(ctx, rs[2].Ref)
		return errors.Is(err, infra.ErrNotFound), err
	})
	err = platform.CheckOrder(infra.MergeOps(auditOps(t, k, audit, ns), sim.Ops()))
	if err == nil || !strings.Contains(err.Error(), "Deployment deleted while ApisixRoute "+ns+"/"+ns+"-dev still exists") ||
		!strings.Contains(err.Error(), "database dropped while Deployment "+ns+"/"+ns+" still exists") {
		t.Fatalf("CheckOrder on the audit log: got %v, want both rules broken", err)
	}
}

// auditOps reads the operations on namespace ns from the audit log.
func auditOps(t *testing.T, k *infra.Kube, path, ns string) []infra.Op {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ops, err := k.AuditOps(t.Context(), f, []string{ns})
	if err != nil {
		t.Fatal(err)
	}
	return ops
}

// databaseOf is the platform's name of gateway id's database.
func databaseOf(id string) infra.Database {
	name := "gateway_" + strings.ReplaceAll(id, "-", "_")
	return infra.Database{Name: name, User: name + "_user"}
}

// TestKubeDrift deletes a Started gateway's Deployment through the API
// server, behind the controller's back: the gateway's health check notices
// and its Starting operation makes the Deployment again, available.
func TestKubeDrift(t *testing.T) {
	servertest.Env(t, "TEND_KUBE_AUDIT_LOG", "kube") // the cluster with its controllers: pods become ready
	k, client := newKube(t)
	sim, err := infra.NewSim(infra.SimConfig{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := memory.New(memory.Config{Kinds: platform.Kinds()})
	if err != nil {
		t.Fatal(err)
	}
	p, ctx := runPlatform(t, platform.Config{Store: st, Cluster: k, Databases: sim, Poll: 100 * time.Millisecond,
		HealthEvery: time.Second})
	id := uniqueNamespace("gw")
	gws := p.Collections().Gateways
	started := func() (bool, error) {
		gw, err := gws.Get(ctx, id)
		return err == nil && gw.Status.Phase == platform.GatewayStarted && gw.Status.Operation == nil, err
	}
	if _, err := p.CreateGateway(ctx, id, platform.GatewaySpec{State: platform.Running, Image: "example.com/runtime:1"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "Started", started)
	ref := kube.Ref{APIVersion: "apps/v1", Kind: "Deployment", Namespace: id, Name: id}
	before, err := client.Get(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Delete(ctx, ref, kube.DeleteOptions{}); err != nil {
		t.Fatalf("deleting the Deployment behind the controller's back: %v", err)
	}
	waitFor(t, "the Deployment made again, available, and the gateway Started", func() (bool, error) {
		after, err := client.Get(ctx, ref)
		if err != nil || after.GetUID() == before.GetUID() {
			return false, nil
		}
		obs, err := k.Get(ctx, infra.Ref{Kind: infra.Deployment, Namespace: id, Name: id})
		if err != nil || !obs.Ready {
			return false, nil
		}
		return started()
	})
	if _, err := p.SetGatewayState(ctx, id, platform.Deleted); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "removal", func() (bool, error) {
		_, err := gws.Get(ctx, id)
		return errors.Is(err, store.ErrNotFound), err
	})
}

// runPlatform runs a platform of cfg until the test ends (or three minutes
// pass) and returns it with the context it runs in; the test's cleanup
// stops it and checks that Run returned cleanly.
func runPlatform(t *testing.T, cfg platform.Config) (*platform.Platform, context.Context) {
	t.Helper()
	p, err := platform.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	})
	return p, ctx
}
