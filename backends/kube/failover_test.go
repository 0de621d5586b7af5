package kube_test

import (
	"context"
	"os"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/tendhq/tend/backends/kube"
	"github.com/tendhq/tend/manager/managertest"
	"github.com/tendhq/tend/store"
)

// envFailoverNamespace passes the failover test's namespace to its replica
// processes; the API server's kubeconfig comes in TEND_KUBECONFIG.
const envFailoverNamespace = "TEND_KUBE_FAILOVER_NAMESPACE"

// failover opens the store named by the environment, in the test process
// and in the replica processes alike. The store cannot fence, so the
// replicas run unfenced.
var failover = managertest.FailoverConfig{
	Open: func(ctx context.Context, kinds []string) (store.Backend, func(), error) {
		cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("TEND_KUBECONFIG"))
		if err != nil {
			return nil, nil, err
		}
		cfg.QPS, cfg.Burst = 500, 1000
		s, err := kube.New(kube.Config{REST: cfg, Kinds: kinds, Namespace: os.Getenv(envFailoverNamespace)})
		if err != nil {
			return nil, nil, err
		}
		if err := s.Install(ctx); err != nil {
			return nil, nil, err
		}
		return s, func() {}, nil
	},
	Unfenced: true,
}

// TestFailover runs managertest.Failover over the API server: three
// replica processes sharding a kind through coordination Leases, one killed
// with SIGKILL mid-work, with manager.Config.Unfenced as this store requires.
func TestFailover(t *testing.T) {
	t.Setenv(envFailoverNamespace, storeNamespace(t, restConfig(t)))
	managertest.Failover(t, failover)
}
