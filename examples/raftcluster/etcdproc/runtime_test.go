package etcdproc_test

import (
	"errors"
	"testing"

	"go.uber.org/goleak"

	"github.com/tendhq/tend/examples/raftcluster/etcdproc"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestStartRefusesBadMembers(t *testing.T) {
	good := etcdproc.Member{
		Name: "m1", DataDir: t.TempDir(), PeerURL: "http://127.0.0.1:1", ClientURL: "http://127.0.0.1:2",
		InitialCluster: "m1=http://127.0.0.1:1", ClusterState: "new",
	}
	tests := []struct {
		name string
		edit func(*etcdproc.Member)
	}{
		{"no name", func(m *etcdproc.Member) { m.Name = "" }},
		{"no data directory", func(m *etcdproc.Member) { m.DataDir = "" }},
		{"no peer URL", func(m *etcdproc.Member) { m.PeerURL = "" }},
		{"no client URL", func(m *etcdproc.Member) { m.ClientURL = "" }},
		{"no initial cluster", func(m *etcdproc.Member) { m.InitialCluster = "" }},
		{"bad cluster state", func(m *etcdproc.Member) { m.ClusterState = "joining" }},
	}
	rt, err := etcdproc.New(etcdproc.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := good
			tt.edit(&m)
			if err := rt.Start("c/m1", m); !errors.Is(err, etcdproc.ErrInvalidConfig) {
				t.Fatalf("Start = %v, want ErrInvalidConfig", err)
			}
			if rt.Running("c/m1") {
				t.Fatal("a refused member is running")
			}
		})
	}
}

func TestClosedRuntime(t *testing.T) {
	rt, err := etcdproc.New(etcdproc.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	m := etcdproc.Member{
		Name: "m1", DataDir: t.TempDir(), PeerURL: "http://127.0.0.1:1", ClientURL: "http://127.0.0.1:2",
		InitialCluster: "m1=http://127.0.0.1:1", ClusterState: "new",
	}
	if err := rt.Start("c/m1", m); !errors.Is(err, etcdproc.ErrClosed) {
		t.Fatalf("Start after Close = %v, want ErrClosed", err)
	}
	if _, ok := <-rt.Exited(); ok {
		t.Fatal("Exited is open after Close")
	}
	if _, err := etcdproc.New(etcdproc.Config{StopTimeout: -1}); !errors.Is(err, etcdproc.ErrInvalidConfig) {
		t.Fatalf("New with a negative timeout = %v", err)
	}
}
