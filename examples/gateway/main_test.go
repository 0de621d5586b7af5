package main

import (
	"context"
	"io"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

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
