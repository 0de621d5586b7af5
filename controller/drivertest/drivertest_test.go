package drivertest_test

import (
	"testing"

	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/controller/drivertest"
)

// The Service machine, with its real driver and idempotent steps, survives
// random intents, requests, deletions, faults, crashes and time.
func TestService(t *testing.T) {
	drivertest.Check(t, serviceConfig(serviceDefinition(), nil))
}

// The same with two replicas sharing the work through leases.
func TestServiceTwoReplicas(t *testing.T) {
	cfg := serviceConfig(serviceDefinition(), nil)
	cfg.Replicas, cfg.Mode = 2, controller.LeaderElection
	drivertest.Check(t, cfg)
}
