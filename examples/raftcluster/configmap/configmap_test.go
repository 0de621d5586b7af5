package configmap_test

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/tendhq/tend/backends/kube"
	"github.com/tendhq/tend/examples/internal/servertest"
	"github.com/tendhq/tend/examples/raftcluster/configmap"
	"github.com/tendhq/tend/examples/raftcluster/operator"
	"github.com/tendhq/tend/examples/raftcluster/operator/operatortest"
	"github.com/tendhq/tend/store"
)

// TestContract runs the member configuration's contract on the quiet API
// server: nothing there collects the ConfigMaps of clusters that do not
// exist.
func TestContract(t *testing.T) {
	cfg := servertest.Kube(t, "TEND_KUBE_STORE_KUBECONFIG")
	ns := servertest.Namespace(t, servertest.Clientset(t, cfg), "raftcluster-cm")
	operatortest.TestMemberConfig(t, func(t *testing.T) operator.MemberConfig {
		mc, err := configmap.New(configmap.Config{REST: cfg, Namespace: ns})
		if err != nil {
			t.Fatal(err)
		}
		return mc
	})
}

// TestConfigMap checks the ConfigMap a cluster gets: its name, data,
// annotation and owner reference, and that a write of what it holds already
// is not sent.
func TestConfigMap(t *testing.T) {
	cfg := servertest.Kube(t, "TEND_KUBE_STORE_KUBECONFIG")
	ns := servertest.Namespace(t, servertest.Clientset(t, cfg), "raftcluster-cm")
	mc, err := configmap.New(configmap.Config{REST: cfg, Namespace: ns, Group: "db.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c := operator.ClusterRef{Key: "team-a/Orders", UID: "0d4c7c39-5c4e-4f7e-9d55-52d0c2a7f5d1"}
	const initial = "m1=http://127.0.0.1:1"
	if err := mc.Create(ctx, c, initial); err != nil {
		t.Fatal(err)
	}
	cm, err := mc.Get(ctx, c.Key)
	if err != nil {
		t.Fatal(err)
	}
	if cm.Name != kube.ObjectName(c.Key) || cm.Namespace != ns {
		t.Errorf("ConfigMap %s/%s, want %s/%s", cm.Namespace, cm.Name, ns, kube.ObjectName(c.Key))
	}
	if got := cm.Data[configmap.DataKey]; got != initial {
		t.Errorf("data %q = %q, want %q", configmap.DataKey, got, initial)
	}
	if got := cm.Annotations[configmap.KeyAnnotation]; got != c.Key {
		t.Errorf("annotation %s = %q, want %q", configmap.KeyAnnotation, got, c.Key)
	}
	if len(cm.OwnerReferences) != 1 {
		t.Fatalf("owner references %+v, want the cluster's", cm.OwnerReferences)
	}
	o := cm.OwnerReferences[0]
	if o.APIVersion != "db.example.com/v1" || o.Kind != operator.KindCluster || o.Name != kube.ObjectName(c.Key) ||
		string(o.UID) != c.UID || o.Controller == nil || !*o.Controller {
		t.Errorf("owner reference %+v, want the controlling Cluster %s of db.example.com/v1 with uid %s", o, kube.ObjectName(c.Key), c.UID)
	}
	if err := mc.Update(ctx, c, initial); err != nil {
		t.Fatal(err)
	}
	again, err := mc.Get(ctx, c.Key)
	if err != nil {
		t.Fatal(err)
	}
	if again.ResourceVersion != cm.ResourceVersion {
		t.Errorf("an Update to what the ConfigMap holds wrote it: resourceVersion %s → %s", cm.ResourceVersion, again.ResourceVersion)
	}
	if _, err := configmap.New(configmap.Config{}); err == nil {
		t.Error("New without REST succeeded")
	}
	if _, err := configmap.New(configmap.Config{REST: cfg, Namespace: "Not A Namespace"}); err == nil {
		t.Error("New with an invalid namespace succeeded")
	}
}

// TestCollectedWithItsCluster creates a cluster's ConfigMap beside the
// cluster's custom resource on the test cluster, whose garbage collector
// runs, and checks that deleting the cluster deletes its ConfigMap: the
// owner reference names the custom resource the kube store writes.
func TestCollectedWithItsCluster(t *testing.T) {
	cfg := servertest.Kube(t, "TEND_KUBECONFIG")
	ns := servertest.Namespace(t, servertest.Clientset(t, cfg), "raftcluster-cm")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b, err := kube.New(kube.Config{REST: cfg, Kinds: []string{operator.KindCluster}, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Install(ctx); err != nil {
		t.Fatal(err)
	}
	clusters, err := store.NewCollection[operator.ClusterSpec, operator.ClusterStatus](b, operator.KindCluster, store.CollectionConfig{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := clusters.Create(ctx, &store.Object[operator.ClusterSpec, operator.ClusterStatus]{
		Meta: store.Meta{Key: "demo"}, Spec: operator.ClusterSpec{Replicas: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	mc, err := configmap.New(configmap.Config{REST: cfg, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	if err := mc.Create(ctx, operator.ClusterRef{Key: c.Key, UID: c.UID}, "m1=http://127.0.0.1:1"); err != nil {
		t.Fatal(err)
	}
	// The owner reference resolves to the live custom resource: a dangling
	// one would be collected too, and prove nothing.
	cm, err := mc.Get(ctx, c.Key)
	if err != nil {
		t.Fatal(err)
	}
	client, err := kube.NewClient(kube.ClientConfig{REST: cfg, FieldManager: "configmap-test"})
	if err != nil {
		t.Fatal(err)
	}
	o := cm.OwnerReferences[0]
	owner, err := client.Get(ctx, kube.Ref{APIVersion: o.APIVersion, Kind: o.Kind, Namespace: ns, Name: o.Name})
	if err != nil {
		t.Fatalf("the owner reference %+v names no object: %v", o, err)
	}
	if owner.GetUID() != o.UID || string(o.UID) != c.UID {
		t.Fatalf("the owner reference names uid %s; the custom resource has %s, the document %s", o.UID, owner.GetUID(), c.UID)
	}
	if err := clusters.Delete(ctx, c.Key, store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The collector finds custom resources installed at run time when it
	// next rediscovers the API (every 30 seconds): wait for the outcome.
	for {
		_, err := mc.Get(ctx, c.Key)
		if apierrors.IsNotFound(err) {
			return
		}
		if err != nil && ctx.Err() == nil {
			t.Fatal(err)
		}
		if ctx.Err() != nil {
			t.Fatalf("the ConfigMap of a deleted cluster is still there: %v", ctx.Err())
		}
		time.Sleep(200 * time.Millisecond)
	}
}
