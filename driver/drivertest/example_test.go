package drivertest_test

import (
	"testing"
	"time"

	"github.com/tendhq/tend/driver"
	"github.com/tendhq/tend/manager"

	"github.com/tendhq/tend/driver/drivertest"
	sm "github.com/tendhq/tend/statemachine"
)

// testServiceDriver is a whole property test of the Service machine's real
// driver: its steps and observers over a simulated cloud, two replicas
// sharing the work through leases, the harness's own checks and the cloud's.
func testServiceDriver(t *testing.T) {
	m, err := sm.New(serviceDefinition())
	if err != nil {
		t.Fatal(err)
	}
	drivertest.Check(t, drivertest.Config[spec, status, state, phase]{
		Machine: m,
		Kind:    "Service",
		Fixture: func(env drivertest.Env) (drivertest.Fixture[spec, status], error) {
			c := &cloud{startDelay: time.Duration(env.Rand.Int64N(int64(20 * time.Second)))}
			return drivertest.Fixture[spec, status]{
				Driver:    driver.Config[spec, status]{Steps: c.steps(), Observers: c.observers()},
				Invariant: c.invariant,
				Matches:   c.settled,
			}, nil
		},
		SetIntent: func(s *spec, st state) { s.State, s.Restart = st, "" },
		Request:   func(s *spec, _, token string) { s.State, s.Restart = Restarting, token },
		Replicas:  2,
		Mode:      manager.LeaderElection,
	})
}

// A test function calling testServiceDriver is all a property test of a
// machine's real driver takes:
//
//	func TestServiceDriver(t *testing.T) { testServiceDriver(t) }
func Example() {}
