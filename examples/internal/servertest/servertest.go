// Package servertest reaches, from the examples' tests, the servers that the
// test command starts: each script of scripts/servers exports environment
// variables that locate its server (TEND_KUBECONFIG, TEND_POSTGRES_URL,
// TEND_S3_ENDPOINT, TEND_DOCKER_HOST, ...). A test that needs a server it
// cannot find is skipped, except under CI, where a missing server is a
// failure: the test command must have started it.
package servertest

import (
	"context"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/tendhq/tend/internal/servertest"
)

// Env returns the environment variable name, which
// scripts/servers/<script>.sh exports when it starts the server the test
// needs. Without it the test is skipped, or fails under CI. It is the
// library's own servertest.Env, which its modules' tests use too.
func Env(t testing.TB, name, script string) string {
	t.Helper()
	return servertest.Env(t, name, script)
}

// Kube returns the configuration of the Kubernetes API server whose
// kubeconfig's path is in the environment variable env (TEND_KUBECONFIG, or
// one of the store's API servers), with a client rate limit no test reaches.
func Kube(t testing.TB, env string) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", Env(t, env, "kube"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 500, 1000
	return cfg
}

// Clientset returns a client of the API server cfg reaches.
func Clientset(t testing.TB, cfg *rest.Config) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// Namespace creates a namespace of the test's own, named prefix and a
// random suffix, deleted when the test ends.
func Namespace(t testing.TB, cs kubernetes.Interface, prefix string) string {
	t.Helper()
	ns := prefix + "-" + strings.ToLower(rand.Text()[:10])
	if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", ns, err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	return ns
}

// PodNamespace creates a namespace as [Namespace] does and waits for its
// default service account, without which no Pod is admitted: it needs a
// cluster whose kube-controller-manager runs its serviceaccount-controller.
func PodNamespace(t testing.TB, cs kubernetes.Interface, prefix string) string {
	t.Helper()
	ns := Namespace(t, cs, prefix)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		_, err := cs.CoreV1().ServiceAccounts(ns).Get(context.Background(), "default", metav1.GetOptions{})
		if err == nil {
			return ns
		}
		if !apierrors.IsNotFound(err) || time.Now().After(deadline) {
			t.Fatalf("service account %s/default: %v (does kube-controller-manager run its serviceaccount-controller?)", ns, err)
		}
	}
}
