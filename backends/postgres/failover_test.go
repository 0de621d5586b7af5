package postgres_test

import (
	"context"
	"os"
	"testing"

	"github.com/tendhq/tend/backends/postgres"
	"github.com/tendhq/tend/manager/managertest"
	"github.com/tendhq/tend/store"
)

// envSchema passes the failover test's schema to its replica processes;
// the server is the one TEND_POSTGRES_URL names.
const envSchema = "TEND_POSTGRES_FAILOVER_SCHEMA"

// failover opens the store named by the environment, in the test process
// and in the replica processes alike. Leases expire by the server's clock
// as soon as their TTL passes, so it has no expiry lag.
var failover = managertest.FailoverConfig{
	Open: func(ctx context.Context, kinds []string) (store.Backend, func(), error) {
		s, err := postgres.New(ctx, postgres.Config{
			URL:    os.Getenv("TEND_POSTGRES_URL"),
			Schema: os.Getenv(envSchema),
			Kinds:  kinds,
		})
		if err != nil {
			return nil, nil, err
		}
		return s, s.Close, nil
	},
}

// TestFailover runs managertest.Failover over the test server: three
// replica processes, one killed with SIGKILL mid-work.
func TestFailover(t *testing.T) {
	serverURL(t)
	t.Setenv(envSchema, newSchema(t, newPool(t)))
	managertest.Failover(t, failover)
}
