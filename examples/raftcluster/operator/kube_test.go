package operator_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/tendhq/tend/backends/kube"
	"github.com/tendhq/tend/examples/raftcluster/configmap"
	"github.com/tendhq/tend/examples/raftcluster/operator"
	"github.com/tendhq/tend/store"
)

// serverEnv returns the environment variable env, which a script of
// scripts/servers exports to locate server. Without it the test is skipped,
// except under CI, where it fails.
func serverEnv(t *testing.T, env, server string) string {
	t.Helper()
	v := os.Getenv(env)
	if v == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set: CI must run `make test`, which starts %s", env, server)
		}
		t.Skipf("%s is not set; run `make test`, which starts %s", env, server)
	}
	return v
}

// kubeconfig reads the kubeconfig whose path is in the environment variable
// env, which scripts/servers/kube.sh exports.
func kubeconfig(t *testing.T, env string) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", serverEnv(t, env, "the Kubernetes API servers"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 500, 1000
	return cfg
}

var namespaces atomic.Int64

// kubeStore is the Kubernetes API of the test cluster (with its garbage
// collector, which follows the documents' owner references), in a namespace
// of the test's own: the Cluster and Member documents are custom resources,
// the member configuration a ConfigMap. When the test ends, the finalizers
// of the Members left are removed (their processes are gone with the
// test's runtime) and the namespace is deleted.
func kubeStore(t *testing.T) (store.Backend, operator.MemberConfig) {
	t.Helper()
	cfg := kubeconfig(t, "TEND_KUBECONFIG")
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ns := fmt.Sprintf("raftcluster-%d-%d", time.Now().UnixNano()%1e9, namespaces.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", ns, err)
	}
	b, err := kube.New(kube.Config{REST: cfg, Kinds: []string{operator.KindCluster, operator.KindMember}, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		releaseMembers(ctx, t, b)
		_ = cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	})
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
