package platform

import (
	"errors"
	"slices"
	"testing"

	"github.com/tendhq/tend/examples/gateway/infra"
	sm "github.com/tendhq/tend/statemachine"
)

// TestMachinesBuild: both machines pass every check of statemachine.New.
func TestMachinesBuild(t *testing.T) {
	if _, err := GatewayMachine(); err != nil {
		t.Error(err)
	}
	if _, err := DomainMachine(); err != nil {
		t.Error(err)
	}
}

// TestGatewayMachineRejectsHoles removes, one at a time, each rule that covers
// a (State, Phase) pair in a resting phase (a stopped gateway lacked
// the one for (Deleted, Stopped)): the machine must not build, and the error
// must name the uncovered pair.
func TestGatewayMachineRejectsHoles(t *testing.T) {
	def := GatewayDefinition()
	for i, r := range def.Rules {
		t.Run(string(r.State)+"/"+string(r.Phase), func(t *testing.T) {
			holed := GatewayDefinition()
			holed.Rules = slices.Delete(holed.Rules, i, i+1)
			_, err := sm.New(holed)
			if !errors.Is(err, sm.ErrUncovered) {
				t.Fatalf("machine without rule %+v built (err %v)", r, err)
			}
			var pe *sm.PairError[GatewayState, GatewayPhase]
			if !errors.As(err, &pe) || pe.State != r.State || pe.Phase != r.Phase {
				t.Fatalf("error does not name (%s, %s): %v", r.State, r.Phase, err)
			}
		})
	}
	t.Run("stuck gateway through New", func(t *testing.T) {
		holed := GatewayDefinition()
		holed.Rules = slices.DeleteFunc(holed.Rules, func(r sm.Rule[GatewayState, GatewayPhase]) bool {
			return r.State == Deleted && r.Phase == GatewayStopped
		})
		if _, err := sm.New(holed); !errors.Is(err, sm.ErrUncovered) {
			t.Fatalf("the machine with the stuck gateway's hole built: %v", err)
		}
	})
}

// TestCheckOrder: the ordering checker accepts the cascade's order and
// rejects each breach.
func TestCheckOrder(t *testing.T) {
	gw := "gw-1"
	apply := func(ref infra.Ref) infra.Op { return infra.Op{Type: infra.OpApply, Ref: ref} }
	del := func(ref infra.Ref) infra.Op { return infra.Op{Type: infra.OpDelete, Ref: ref} }
	gone := func(ref infra.Ref) infra.Op { return infra.Op{Type: infra.OpGone, Ref: ref} }
	drop := infra.Op{Type: infra.OpDropDatabase, Database: databaseOf(gw).Name}
	start := []infra.Op{apply(namespaceRef(gw)), apply(routeRef(gw, "dev")), apply(deploymentRef(gw))}
	tests := []struct {
		name string
		ops  []infra.Op
		ok   bool
	}{
		{"cascade order", []infra.Op{del(routeRef(gw, "dev")), gone(routeRef(gw, "dev")),
			del(deploymentRef(gw)), gone(deploymentRef(gw)), drop}, true},
		{"Deployment before routes", []infra.Op{del(deploymentRef(gw)), gone(deploymentRef(gw)),
			del(routeRef(gw, "dev")), gone(routeRef(gw, "dev")), drop}, false},
		{"route still Terminating", []infra.Op{del(routeRef(gw, "dev")), del(deploymentRef(gw)),
			gone(routeRef(gw, "dev")), gone(deploymentRef(gw)), drop}, false},
		{"database before Deployment gone", []infra.Op{del(routeRef(gw, "dev")), gone(routeRef(gw, "dev")),
			del(deploymentRef(gw)), drop, gone(deploymentRef(gw))}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckOrder(append(slices.Clone(start), tt.ops...))
			if (err == nil) != tt.ok {
				t.Fatalf("CheckOrder = %v, want ok %v", err, tt.ok)
			}
		})
	}
}
