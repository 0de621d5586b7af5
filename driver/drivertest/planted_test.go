package drivertest_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/tendhq/tend/manager"

	"github.com/tendhq/tend/driver/drivertest"
	sm "github.com/tendhq/tend/statemachine"
)

// Each planted defect is found by the exhaustive search, on every run: the
// search is deterministic, and its depth exceeds the defect's shortest
// failing sequence by two.
func TestFindsPlantedDefects(t *testing.T) {
	tests := []struct {
		name  string
		cfg   func() drivertest.Config[spec, status, state, phase]
		depth int
		want  []string // the problem found names one of these
	}{
		{
			name: "a stopped service cannot be deleted",
			cfg: func() drivertest.Config[spec, status, state, phase] {
				def := serviceDefinition()
				def.Rules = slices.DeleteFunc(def.Rules, func(r sm.Rule[state, phase]) bool { return r.State == Deleted && r.Phase == Halted })
				def.Refusals = append(def.Refusals, sm.RefusalRule[state, phase]{
					States: []state{Deleted}, Phases: []phase{Halted}, Reason: "stop it first"})
				return serviceConfig(def, nil)
			},
			depth: 6,
			want:  []string{"not removed"},
		},
		{
			name: "Starting waits forever for an instance that never becomes ready",
			cfg: func() drivertest.Config[spec, status, state, phase] {
				def := serviceDefinition()
				for i := range def.Phases {
					if def.Phases[i].Phase == Starting {
						def.Phases[i].Unbounded = true
					}
				}
				return serviceConfig(def, func(c *cloud) { c.lazy = true })
			},
			depth: 3,
			want:  []string{"has not settled"},
		},
		{
			name: "create_instance does nothing: Starting reaches its deadline while every step call succeeds",
			cfg: func() drivertest.Config[spec, status, state, phase] {
				return serviceConfig(serviceDefinition(), func(c *cloud) { c.idle = true })
			},
			depth: 1,
			want:  []string{"nothing explains it"},
		},
		{
			name: "create_instance is not idempotent: a crash after its effect makes a second instance",
			cfg: func() drivertest.Config[spec, status, state, phase] {
				return serviceConfig(serviceDefinition(), func(c *cloud) { c.leaky = true })
			},
			depth: 5,
			want:  []string{"2 instances"},
		},
		{
			name: "two replicas run every key",
			cfg: func() drivertest.Config[spec, status, state, phase] {
				cfg := serviceConfig(serviceDefinition(), nil)
				cfg.Replicas, cfg.Mode = 2, manager.Single
				world := cfg.Fixture
				cfg.Fixture = func(env drivertest.Env) (drivertest.Fixture[spec, status], error) {
					w, err := world(env)
					w.Invariant, w.Matches = nil, nil // the harness's own checks only
					return w, err
				}
				return cfg
			},
			depth: 6,
			// Which symptom shows first depends on how the replicas race:
			// overlapping step calls, one replica retrying a failure the
			// other recorded (sooner than the backoff, or before the
			// retry time stored), or one replica's step running under an
			// operation the other replaced in the store.
			want: []string{"while replica", "its backoff allows", "before its stored retry time", "not the operation stored"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := drivertest.Search(t, tt.cfg(), tt.depth)
			if err != nil {
				t.Fatal(err)
			}
			if f == nil {
				t.Fatalf("no sequence of up to %d actions found the defect", tt.depth)
			}
			if !slices.ContainsFunc(tt.want, func(w string) bool { return strings.Contains(f.Problems[0], w) }) {
				t.Fatalf("found %q, want a problem with %q\n%v", f.Problems[0], tt.want, f)
			}
			t.Logf("found with %d actions: %s\n%v", len(f.Actions), strings.Join(f.Actions, "; "), f.Problems[0])
		})
	}
}

// The fixed Service machine passes the same search.
func TestExploreService(t *testing.T) {
	drivertest.Explore(t, serviceConfig(serviceDefinition(), nil), 3)
}

// A step that does nothing is caught by random runs too: a document held in
// Fault by a deadline while every step call succeeded fails the run, even
// with no terminal failures injected.
func TestFaultIsNotSuccess(t *testing.T) {
	cfg := serviceConfig(serviceDefinition(), func(c *cloud) { c.idle = true })
	found := 0
	for seed := range 20 {
		f, err := drivertest.RunOne(t, cfg, seed)
		if err != nil {
			t.Fatal(err)
		}
		if f != nil && strings.Contains(f.Problems[0], "nothing explains it") {
			found++
		}
	}
	if found == 0 {
		t.Fatal("no run of seeds 0 to 19 found the step that does nothing")
	}
	t.Logf("%d of 20 seeds found it", found)

	// An end the test declares, with its reason, is accepted.
	cfg.Accept = []drivertest.End[state, phase]{{Phase: Failed, Reason: "the instance is made by hand"}}
	if f, err := drivertest.Search(t, cfg, 1); err != nil || f != nil {
		t.Fatalf("with the end accepted: %v %v", err, f)
	}
}

// A machine that refuses a request where it cannot serve it passes: a token
// recorded served with the refusal's reason needs no operation.
func TestRefusedRequest(t *testing.T) {
	def := serviceDefinition()
	def.Requests = []sm.RequestRule[phase]{{Name: "restart",
		Serve:  []sm.Edge[phase]{{From: Started, To: Stopping}},
		Refuse: []phase{Created, Halted}, Reason: "a stopped service has nothing to restart"}}
	cfg := serviceConfig(def, nil)
	cfg.Request = func(s *spec, _, token string) { s.Restart = token } // the intent stays
	drivertest.Explore(t, cfg, 2)
}
