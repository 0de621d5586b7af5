package main

import (
	"net"
	"net/url"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/tendhq/tend/backends/etcd"
)

// etcdStore starts an etcd member in the test process and returns a store
// on it and its --store value.
func etcdStore(t *testing.T) (*etcd.Store, string) {
	t.Helper()
	cfg := embed.NewConfig()
	cfg.Dir = t.TempDir()
	peer, client := freeURL(t), freeURL(t)
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.InitialCluster = cfg.Name + "=" + peer.String()
	cfg.UnsafeNoFsync = true
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(time.Minute):
		t.Fatal("etcd did not become ready")
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{client.String()}, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	s, err := etcd.New(etcd.Config{Client: cli, Prefix: "/ops/", Kinds: testKinds})
	if err != nil {
		t.Fatal(err)
	}
	return s, "etcd://" + client.Host + "/ops"
}

// freeURL returns a loopback URL on a port free for now.
func freeURL(t *testing.T) url.URL {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return url.URL{Scheme: "http", Host: l.Addr().String()}
}

func TestReadEtcd(t *testing.T) {
	s, spec := etcdStore(t)
	produce(t, s)
	golden(t, "read", transcript(t, spec, readCommands...))
}

func TestWatchEtcd(t *testing.T) {
	s, spec := etcdStore(t)
	produce(t, s)
	testWatch(t, s, spec)
}
