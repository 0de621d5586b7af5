package etcd_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tendhq/tend/backends/etcd"
	"github.com/tendhq/tend/manager/managertest"
	"github.com/tendhq/tend/store"
)

// The failover test passes the cluster to its replica processes in these
// environment variables.
const (
	envEndpoints = "TEND_ETCD_ENDPOINTS" // comma-separated etcd client URLs
	envPrefix    = "TEND_ETCD_PREFIX"    // the store's key prefix
)

// failover opens the store named by the environment, in the test process
// and in the replica processes alike.
var failover = managertest.FailoverConfig{
	Open: func(ctx context.Context, kinds []string) (store.Backend, func(), error) {
		cli, err := newClient(strings.Split(os.Getenv(envEndpoints), ","))
		if err != nil {
			return nil, nil, err
		}
		s, err := etcd.New(etcd.Config{Client: cli, Prefix: os.Getenv(envPrefix), Kinds: kinds})
		if err != nil {
			cli.Close()
			return nil, nil, err
		}
		return s, func() { cli.Close() }, nil
	},
	// etcd's lessor looks for expired leases every 500ms.
	ExpiryLag: 500 * time.Millisecond,
}

// TestFailover runs managertest.Failover over a three-member etcd
// cluster: three replica processes, one killed with SIGKILL mid-work.
func TestFailover(t *testing.T) {
	c, err := startCluster(t.TempDir(), clusterOptions{members: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer c.stop()
	t.Setenv(envEndpoints, strings.Join(c.endpoints(), ","))
	t.Setenv(envPrefix, "/failover/")
	managertest.Failover(t, failover)
}
