package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"strings"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/tendhq/tend/examples/gateway/infra"
	"github.com/tendhq/tend/examples/gateway/platform"
)

// world is the infrastructure a scenario runs on: the simulated cluster and
// databases, or a Kubernetes cluster with the databases simulated.
type world struct {
	cluster infra.Cluster
	// sim holds the databases, and the cluster unless kube is set; it
	// injects the failures.
	sim  *infra.Sim
	kube *infra.Kube
	// auditLog is the cluster's audit log, where the ordering rules are
	// checked; empty when there is none to read.
	auditLog string
	// prefix starts every gateway id: "gw" on the simulation, a random one
	// on a cluster, so that runs on one cluster do not meet.
	prefix string
}

// newWorld returns the world opts ask for.
func newWorld(ctx context.Context, opts options) (*world, error) {
	sim, err := infra.NewSim(infra.SimConfig{ReadyDelay: opts.Delay, DeleteDelay: opts.Delay,
		Latency: opts.Latency, FailureRate: opts.FailureRate, Seed: opts.Seed})
	if err != nil {
		return nil, err
	}
	if opts.Kubeconfig == "" {
		return &world{cluster: sim, sim: sim, prefix: "gw"}, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", opts.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", opts.Kubeconfig, err)
	}
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = 200, 400 // the platform polls what it waits for
	}
	k, err := infra.NewKube(infra.KubeConfig{REST: cfg})
	if err != nil {
		return nil, err
	}
	if err := k.Install(ctx); err != nil {
		return nil, err
	}
	return &world{cluster: k, sim: sim, kube: k, auditLog: opts.AuditLog,
		prefix: "gw-" + strings.ToLower(rand.Text()[:4])}, nil
}

// gatewayID is the id of the scenario's gateway i.
func (w *world) gatewayID(i int) string { return fmt.Sprintf("%s-%02d", w.prefix, i+1) }

// resources returns every resource of the platform that exists now.
func (w *world) resources(ctx context.Context) ([]infra.Observed, error) {
	if w.kube == nil {
		return w.sim.Resources(), nil
	}
	return w.kube.Resources(ctx, platform.LabelGateway)
}

// ops returns the log of changes the ordering rules are checked on, for the
// scenario's n gateways; ok is false when there is none (a cluster without
// an audit log).
func (w *world) ops(ctx context.Context, n int) (ops []infra.Op, ok bool, err error) {
	if w.kube == nil {
		return w.sim.Ops(), true, nil
	}
	if w.auditLog == "" {
		return nil, false, nil
	}
	f, err := os.Open(w.auditLog)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = w.gatewayID(i)
	}
	cluster, err := w.kube.AuditOps(ctx, f, ids)
	if err != nil {
		return nil, false, err
	}
	return infra.MergeOps(cluster, w.sim.Ops()), true, nil
}
