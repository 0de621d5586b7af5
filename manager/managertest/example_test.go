package managertest_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/manager/managertest"
	"github.com/tendhq/tend/store"
)

// A backend's tests share one config between TestMain, which turns the
// replica processes into replicas, and the test, which passes the backend's
// address to them through the environment.
func ExampleFailover() {
	// open is the backend's own: it connects to the server named by
	// TEST_SERVER and opens the store under TEST_NAMESPACE.
	var open func(ctx context.Context, server, namespace string, kinds []string) (store.Backend, func(), error)

	failover := managertest.FailoverConfig{
		Open: func(ctx context.Context, kinds []string) (store.Backend, func(), error) {
			return open(ctx, os.Getenv("TEST_SERVER"), os.Getenv("TEST_NAMESPACE"), kinds)
		},
	}
	testMain := func(m *testing.M) {
		managertest.ReplicaMain(failover) // exits in a replica process
		os.Exit(m.Run())
	}
	testFailover := func(t *testing.T) {
		t.Setenv("TEST_SERVER", "127.0.0.1:5432")
		t.Setenv("TEST_NAMESPACE", "failover")
		managertest.Failover(t, failover)
	}
	_, _ = testMain, testFailover
}

// A backend's benchmark passes a factory for fresh backends; this one runs on
// the memory store, through testing.Benchmark so that the figures can be
// read.
func ExampleConverge() {
	open := func(b *testing.B, kinds []string) store.Backend {
		s, err := memory.New(memory.Config{Kinds: kinds})
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	r := testing.Benchmark(func(b *testing.B) {
		managertest.Converge(b, managertest.ConvergeConfig{Open: open, Documents: 100})
	})
	fmt.Println("converged:", r.Extra["s/converge"] > 0)
	fmt.Println("at least four status writes per document:", r.Extra["writes/converge"] >= 400)
	// Output:
	// converged: true
	// at least four status writes per document: true
}
