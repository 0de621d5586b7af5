package kube_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/tendhq/tend/examples/workspace/dataplane/dataplanetest"
	"github.com/tendhq/tend/examples/workspace/kube"
	"github.com/tendhq/tend/examples/workspace/objstore"
)

// testImage and testJobImage are the images of the tests' Pods and storage
// Jobs; under kwok nothing pulls them.
const (
	testImage    = "tend-workspace:test"
	testJobImage = "tend-storage-job:test"
)

// restConfig returns the configuration of the cluster make test starts
// (TEND_KUBECONFIG). Without it the test fails under CI and is skipped
// otherwise.
func restConfig(t *testing.T) *rest.Config {
	t.Helper()
	path := dataplanetest.ServerEnv(t, "TEND_KUBECONFIG",
		"TEND_KUBECONFIG is not set under CI: scripts/servers/kube.sh did not start a cluster",
		"TEND_KUBECONFIG is not set: run make test, which starts a Kubernetes cluster")
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 100, 200
	return cfg
}

func clientset(t *testing.T, cfg *rest.Config) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// namespace creates a namespace of the test's own, deleted when it ends,
// and waits for its default service account, without which no Pod is
// admitted.
func namespace(t *testing.T, cs kubernetes.Interface) string {
	t.Helper()
	ctx := context.Background()
	ns := fmt.Sprintf("tend-ws-%d", time.Now().UnixNano())
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := cs.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			return ns
		}
		if !apierrors.IsNotFound(err) || time.Now().After(deadline) {
			t.Fatalf("service account %s/default: %v (does kube-controller-manager run its serviceaccount-controller?)", ns, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// newBackends returns Kubernetes backends in namespace ns, with volumes
// under a directory of the test's own, that remove what workspace id left
// behind when the test ends. The namespace's storage Jobs run on this host
// (kube.JobHost) until then.
func newBackends(t *testing.T, cfg *rest.Config, ns, id string) (*kube.Storage, *kube.Instances) {
	t.Helper()
	dir := t.TempDir()
	objects, err := objstore.NewDir(filepath.Join(dir, "objects"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := kube.NewStorage(kube.StorageConfig{
		REST: cfg, Namespace: ns, BaseDir: filepath.Join(dir, "volumes"), Objects: objects, JobImage: testJobImage,
	})
	if err != nil {
		t.Fatal(err)
	}
	runJobHost(t, cfg, ns)
	in, err := kube.NewInstances(kube.InstancesConfig{REST: cfg, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	dataplanetest.Cleanup(t, id, in, st)
	return st, in
}

// runJobHost runs the storage Jobs of namespace ns on this host until the
// test ends.
func runJobHost(t *testing.T, cfg *rest.Config, ns string) {
	t.Helper()
	host, err := kube.NewJobHost(kube.JobHostConfig{REST: cfg, Namespace: ns, Scratch: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- host.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
}

// volumeFile returns the path of name in workspace id's volume on this
// host.
func volumeFile(t *testing.T, st *kube.Storage, id, name string) string {
	t.Helper()
	dir, err := st.Dir(context.Background(), id)
	if err != nil || dir == "" {
		t.Fatalf("directory of %s: %q %v", kube.ClaimName(id), dir, err)
	}
	return filepath.Join(dir, name)
}
