package operator_test

import (
	"context"
	"testing"
	"time"

	"github.com/tendhq/tend/backends/kube"
	"github.com/tendhq/tend/examples/internal/servertest"
	"github.com/tendhq/tend/examples/raftcluster/configmap"
	"github.com/tendhq/tend/examples/raftcluster/operator"
	"github.com/tendhq/tend/store"
)

// kubeStore is the Kubernetes API of the test cluster (with its garbage
// collector, which follows the documents' owner references), in a namespace
// of the test's own: the Cluster and Member documents are custom resources,
// the member configuration a ConfigMap. When the test ends, the finalizers
// of the Members left are removed (their processes are gone with the
// test's runtime) and the namespace is deleted.
func kubeStore(t *testing.T) (store.Backend, operator.MemberConfig) {
	t.Helper()
	cfg := servertest.Kube(t, "TEND_KUBECONFIG")
	ns := servertest.Namespace(t, servertest.Clientset(t, cfg), "raftcluster")
	b, err := kube.New(kube.Config{REST: cfg, Kinds: []string{operator.KindCluster, operator.KindMember}, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	// Cleanups run last first: the finalizers go before the namespace.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		releaseMembers(ctx, t, b)
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := b.Install(ctx); err != nil {
		t.Fatal(err)
	}
	mc, err := configmap.New(configmap.Config{REST: cfg, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	return b, mc
}

// releaseMembers removes the finalizer of every Member document in b, so
// that deleting the namespace does not wait for an operator that is gone.
func releaseMembers(ctx context.Context, t *testing.T, b store.Backend) {
	members, err := store.NewCollection[operator.MemberSpec, operator.MemberStatus](b, operator.KindMember, store.CollectionConfig{})
	if err != nil {
		t.Error(err)
		return
	}
	objs, _, err := members.List(ctx, store.ListOptions{})
	if err != nil {
		t.Logf("list members to release them: %v", err)
		return
	}
	for _, m := range objs {
		if len(m.Finalizers) == 0 {
			continue
		}
		m.Finalizers = nil
		if _, err := members.UpdateSpec(ctx, m); err != nil {
			t.Logf("release member %s: %v", m.Key, err)
		}
	}
}
