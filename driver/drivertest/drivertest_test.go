package drivertest_test

import (
	"errors"
	"testing"

	"github.com/tendhq/tend/manager"

	"github.com/tendhq/tend/driver/drivertest"
)

// The Service machine, with its real driver and idempotent steps, survives
// random intents, requests, deletions, faults, crashes and time.
func TestService(t *testing.T) {
	drivertest.Check(t, serviceConfig(serviceDefinition(), nil))
}

// The same with two replicas sharing the work through leases: the package
// example.
func TestServiceTwoReplicas(t *testing.T) { testServiceDriver(t) }

// Sharded replicas, terminal failures held for an oncall.
func TestServiceShardedTerminal(t *testing.T) {
	cfg := serviceConfig(serviceDefinition(), nil)
	cfg.Replicas, cfg.Mode, cfg.TerminalFailures = 3, manager.Sharded, true
	drivertest.Check(t, cfg)
}

// The same with an operator pausing, resuming, asking for restarts and
// retrying, skipping or moving a failed service by command at random
// moments, on two replicas, with terminal failures held in Fault.
func TestServiceOperators(t *testing.T) {
	cfg := serviceConfig(serviceDefinition(), nil)
	cfg.Operators, cfg.TerminalFailures, cfg.Replicas, cfg.Mode = true, true, 2, manager.LeaderElection
	drivertest.Check(t, cfg)
}

func TestConfigErrors(t *testing.T) {
	good := serviceConfig(serviceDefinition(), nil)
	tests := []struct {
		name string
		edit func(*drivertest.Config[spec, status, state, phase])
	}{
		{"no machine", func(c *drivertest.Config[spec, status, state, phase]) { c.Machine = nil }},
		{"no kind", func(c *drivertest.Config[spec, status, state, phase]) { c.Kind = "" }},
		{"no world", func(c *drivertest.Config[spec, status, state, phase]) { c.Fixture = nil }},
		{"no intent writer", func(c *drivertest.Config[spec, status, state, phase]) { c.SetIntent = nil }},
		{"requests without a request writer", func(c *drivertest.Config[spec, status, state, phase]) { c.Request = nil }},
		{"negative horizon", func(c *drivertest.Config[spec, status, state, phase]) { c.Horizon = -1 }},
		{"an accepted end outside the Fault phase", func(c *drivertest.Config[spec, status, state, phase]) {
			c.Accept = []drivertest.End[state, phase]{{Phase: Started, Reason: "r"}}
		}},
		{"an accepted end without a reason", func(c *drivertest.Config[spec, status, state, phase]) {
			c.Accept = []drivertest.End[state, phase]{{Phase: Failed}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := good
			tt.edit(&cfg)
			if _, err := drivertest.Search(t, cfg, 0); !errors.Is(err, drivertest.ErrInvalidConfig) {
				t.Fatalf("got %v, want an error matching ErrInvalidConfig", err)
			}
		})
	}
}
