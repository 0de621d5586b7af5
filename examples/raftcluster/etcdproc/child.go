package etcdproc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"syscall"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// RunChildIfRequested runs an etcd member and exits the program when the
// environment carries [EnvMember], that is when the program was started by a
// [Runtime]; otherwise it returns at once. Call it first thing in main, and
// in TestMain of tests that start members.
func RunChildIfRequested() {
	conf, ok := os.LookupEnv(EnvMember)
	if !ok {
		return
	}
	if err := runChild(conf); err != nil {
		fmt.Fprintln(os.Stderr, "etcd member:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// runChild runs the member described by conf until SIGTERM or SIGINT, or
// until etcd stops on its own (removed from its cluster, for example).
func runChild(conf string) error {
	var m Member
	if err := json.Unmarshal([]byte(conf), &m); err != nil {
		return err
	}
	if err := m.validate(); err != nil {
		return err
	}
	cfg, err := embedConfig(&m)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return err
	}
	defer e.Close()
	select {
	case <-ctx.Done():
		return nil
	case err := <-e.Err():
		return err
	case <-e.Server.StopNotify():
		return errors.New("etcd stopped on its own (removed from its cluster?)")
	}
}

// embedConfig turns m into etcd's configuration.
func embedConfig(m *Member) (*embed.Config, error) {
	peer, err := url.Parse(m.PeerURL)
	if err != nil {
		return nil, fmt.Errorf("%w: peer URL: %v", ErrInvalidConfig, err)
	}
	client, err := url.Parse(m.ClientURL)
	if err != nil {
		return nil, fmt.Errorf("%w: client URL: %v", ErrInvalidConfig, err)
	}
	cfg := embed.NewConfig()
	cfg.Name = m.Name
	cfg.Dir = m.DataDir
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*peer}, []url.URL{*peer}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*client}, []url.URL{*client}
	cfg.InitialCluster = m.InitialCluster
	cfg.ClusterState = m.ClusterState
	cfg.InitialClusterToken = m.Token
	cfg.TickMs, cfg.ElectionMs = m.TickMs, m.ElectionMs
	if cfg.TickMs == 0 {
		cfg.TickMs = 100
	}
	if cfg.ElectionMs == 0 {
		cfg.ElectionMs = 1000
	}
	// Loopback members of a demonstration: speed matters more than surviving
	// a power cut of the whole machine. A killed process loses nothing the
	// kernel has been given.
	cfg.UnsafeNoFsync = true
	// Warnings and errors go to stderr, which the Runtime sends to the
	// member's log file.
	lcfg := zap.NewProductionConfig()
	lcfg.Level = zap.NewAtomicLevelAt(zap.WarnLevel)
	lg, err := lcfg.Build()
	if err != nil {
		return nil, err
	}
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(lg)
	return cfg, nil
}
