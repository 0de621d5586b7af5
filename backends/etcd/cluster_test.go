package etcd_test

import (
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// cluster is an etcd cluster embedded in the test process, on loopback
// ports, with its data in temporary directories.
type cluster struct {
	configs []*embed.Config
	members []*embed.Etcd // nil once stopped
}

// clusterOptions tune a test cluster.
type clusterOptions struct {
	members int
	// fsync makes members sync their log to disk as a production member
	// does; without it, tests run faster.
	fsync bool
}

// startCluster starts a cluster and waits until it serves.
func startCluster(dir string, o clusterOptions) (*cluster, error) {
	ports, err := freePorts(2 * o.members)
	if err != nil {
		return nil, err
	}
	c := &cluster{}
	var initial []string
	for i := range o.members {
		initial = append(initial, fmt.Sprintf("m%d=http://127.0.0.1:%d", i, ports[2*i]))
	}
	for i := range o.members {
		cfg := embed.NewConfig()
		cfg.Name = fmt.Sprintf("m%d", i)
		cfg.Dir = fmt.Sprintf("%s/m%d", dir, i)
		peer := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[2*i])}
		client := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[2*i+1])}
		cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
		cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
		cfg.InitialCluster = strings.Join(initial, ",")
		cfg.InitialClusterToken = "tend-test"
		// A short heartbeat lets etcd grant one-second leases and elect a
		// new leader quickly.
		cfg.TickMs, cfg.ElectionMs = 50, 500
		cfg.UnsafeNoFsync = !o.fsync
		// Its logs go nowhere: spare it formatting the requests it would
		// warn about as slow, which on a loaded machine are many.
		cfg.WarningUnaryRequestDuration = time.Hour
		cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
		c.configs = append(c.configs, cfg)
	}
	c.members = make([]*embed.Etcd, o.members)
	errs := make(chan error, o.members)
	for i := range o.members {
		go func() { errs <- c.start(i) }()
	}
	for range o.members {
		if e := <-errs; e != nil && err == nil {
			err = e
		}
	}
	if err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

// start starts member i and waits until it serves.
func (c *cluster) start(i int) error {
	e, err := embed.StartEtcd(c.configs[i])
	if err != nil {
		return fmt.Errorf("start etcd member %d: %w", i, err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return fmt.Errorf("etcd member %d: %w", i, err)
	case <-time.After(60 * time.Second):
		e.Close()
		return fmt.Errorf("etcd member %d did not become ready", i)
	}
	c.members[i] = e
	return nil
}

// stopMember stops member i.
func (c *cluster) stopMember(i int) {
	if c.members[i] != nil {
		c.members[i].Close()
		c.members[i] = nil
	}
}

// stop stops every member.
func (c *cluster) stop() {
	for i := range c.members {
		c.stopMember(i)
	}
}

// endpoints returns the client URLs of the members.
func (c *cluster) endpoints() []string {
	var eps []string
	for _, cfg := range c.configs {
		eps = append(eps, cfg.AdvertiseClientUrls[0].String())
	}
	return eps
}

// client returns a client of the whole cluster, closed when t ends.
func (c *cluster) client(t testing.TB) *clientv3.Client {
	t.Helper()
	cli, err := newClient(c.endpoints())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

func newClient(endpoints []string) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 10 * time.Second,
		Logger:      zap.NewNop(),
	})
}

// freePorts returns n loopback ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
