package main

import (
	"context"
	"io"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/tendhq/tend/examples/internal/servertest"
)

func TestMain(m *testing.M) {
	// client-go keeps one cached HTTP/2 connection per API server for the
	// life of the process.
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*ClientConn).readLoop"))
}

// TestScenario plays the demo's scenario under fake time with failures
// injected, for several seeds and sizes, and requires it to converge with
// every invariant of the spec held: routes gone before the Deployment, the
// Deployment gone before the database, Deleting never going back, nothing
// left of a gateway once its document is removed.
func TestScenario(t *testing.T) {
	tests := []struct {
		name string
		opts options
	}{
		{"no failures", options{Gateways: 5, Delay: 200 * time.Millisecond}},
		{"failures", options{Gateways: 6, FailureRate: 0.2, Delay: 300 * time.Millisecond, Latency: time.Millisecond, Seed: 7}},
		{"many failures", options{Gateways: 8, FailureRate: 0.4, Delay: 50 * time.Millisecond, Latency: 2 * time.Millisecond, Seed: 3}},
		{"zero delay", options{Gateways: 6, FailureRate: 0.2, Seed: 11}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tt.opts.Timeout = 10 * time.Minute
				tt.opts.Refresh = time.Second
				rep, err := run(context.Background(), tt.opts, io.Discard)
				if err != nil {
					t.Fatal(err)
				}
				for _, v := range rep.Violations {
					t.Error(v)
				}
				if !rep.Converged || rep.Removed != 2 {
					t.Fatalf("converged %v, removed %d: %+v", rep.Converged, rep.Removed, rep)
				}
				if tt.opts.FailureRate > 0 && rep.Retried == 0 {
					t.Errorf("failures injected (%d) but no step retried", rep.Injected)
				}
				// Settled: every gateway but the two deleted, and their domains.
				if want := 2 * (tt.opts.Gateways - 2); rep.Settled != want {
					t.Errorf("settled %d documents, want %d", rep.Settled, want)
				}
			})
		})
	}
}

// TestScenarioKube plays the demo's scenario on the test cluster that
// scripts/servers/kube.sh starts (API server, controller manager,
// scheduler, kwok's nodes), with failures injected into the simulated
// databases, then deletes every gateway; it checks the ordering rules on the
// API server's audit log, and that nothing is left in the cluster.
func TestScenarioKube(t *testing.T) {
	kubeconfig, audit := servertest.Env(t, "TEND_KUBECONFIG", "kube"), servertest.Env(t, "TEND_KUBE_AUDIT_LOG", "kube")
	opts := options{Gateways: 6, FailureRate: 0.2, Seed: 5, Timeout: 5 * time.Minute, Kubeconfig: kubeconfig, AuditLog: audit}
	rep, err := run(t.Context(), opts, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range rep.Violations {
		t.Error(v)
	}
	if !rep.Converged || rep.Removed != opts.Gateways || rep.Documents != 0 {
		t.Fatalf("converged %v, removed %d, documents left %d: %+v", rep.Converged, rep.Removed, rep.Documents, rep)
	}
	// Six gateways, each with its namespace, ConfigMap, Deployment,
	// Service, routes, plugin config and TLS, created and removed, and two
	// restarts: far more operations than that.
	if rep.OrderUnchecked || rep.OrderOps < 6*2*10 {
		t.Fatalf("ordering rules checked on %d operations (unchecked %v)", rep.OrderOps, rep.OrderUnchecked)
	}
	if rep.Injected == 0 {
		t.Errorf("no failure injected into the databases: %+v", rep)
	}
}
