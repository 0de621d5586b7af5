package etcd_test

import (
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"

	"github.com/tendhq/tend/backends/etcd"
	"github.com/tendhq/tend/manager/managertest"
	"github.com/tendhq/tend/store"
	"github.com/tendhq/tend/store/storetest"
)

// shared is the one-member cluster most tests and the examples use; each
// test takes its own key prefix in it.
var shared *cluster

func TestMain(m *testing.M) {
	managertest.ReplicaMain(failover)
	dir, err := os.MkdirTemp("", "tend-etcd-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	shared, err = startCluster(dir, clusterOptions{members: 1})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	shared.stop()
	os.RemoveAll(dir)
	if code == 0 {
		if err := findLeaks(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// findLeaks looks for goroutines left running. Stopped etcd members' peer
// connections end only when their read deadline (5s) passes, so it gives
// them that long.
func findLeaks() error {
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := goleak.Find()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(250 * time.Millisecond)
	}
}

var prefixes atomic.Int64

// newStore returns a store on the shared cluster under a prefix no other
// store uses.
func newStore(t testing.TB, kinds ...string) (*etcd.Store, *clientv3.Client) {
	t.Helper()
	cli := shared.client(t)
	s, err := etcd.New(etcd.Config{
		Client: cli,
		Prefix: fmt.Sprintf("/test-%d/", prefixes.Add(1)),
		Kinds:  kinds,
	})
	if err != nil {
		t.Fatal(err)
	}
	return s, cli
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, kinds []string) store.Backend {
		s, _ := newStore(t, kinds...)
		return s
	})
}

func TestNewConfig(t *testing.T) {
	cli := shared.client(t)
	for _, c := range []struct {
		name string
		cfg  etcd.Config
		ok   bool
	}{
		{"valid", etcd.Config{Client: cli, Kinds: []string{"Widget"}}, true},
		{"no client", etcd.Config{Kinds: []string{"Widget"}}, false},
		{"no kinds", etcd.Config{Client: cli}, false},
		{"bad kind", etcd.Config{Client: cli, Kinds: []string{"widget"}}, false},
		{"kind twice", etcd.Config{Client: cli, Kinds: []string{"Widget", "Widget"}}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			kinds := append([]string(nil), c.cfg.Kinds...)
			s, err := etcd.New(c.cfg)
			if (err == nil) != c.ok {
				t.Fatalf("New: got error %v, want ok=%v", err, c.ok)
			}
			if err == nil && len(s.Kinds()) != len(kinds) {
				t.Fatalf("Kinds() = %q, want %q", s.Kinds(), kinds)
			}
			if len(c.cfg.Kinds) != len(kinds) || (len(kinds) > 0 && c.cfg.Kinds[0] != kinds[0]) {
				t.Fatal("New changed the caller's Config")
			}
		})
	}
}
