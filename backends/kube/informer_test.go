package kube_test

import (
	"os"
	"testing"

	"github.com/tendhq/tend/informer/informertest"
	"github.com/tendhq/tend/store"
)

// TestInformerConformance runs the informer's suite on the Kubernetes API,
// with and without the API server's watch cache, as TestConformance runs
// the store's.
func TestInformerConformance(t *testing.T) {
	for _, server := range []struct{ name, env string }{
		{"NoWatchCache", "TEND_KUBE_STORE_KUBECONFIG"},
		{"WatchCache", "TEND_KUBE_STORE_CACHED_KUBECONFIG"},
	} {
		t.Run(server.name, func(t *testing.T) {
			cfg := kubeconfig(t, server.env)
			etcdURL := os.Getenv("TEND_KUBE_STORE_ETCD")
			if etcdURL == "" {
				t.Fatalf("TEND_KUBE_STORE_ETCD is not set: scripts/servers/kube.sh exports it with %s", server.env)
			}
			informertest.Run(t, func(t *testing.T, kinds []string) store.Backend {
				return &compacting{Store: newStoreOn(t, cfg, kinds...), etcd: etcdURL}
			})
		})
	}
}
