package smtest_test

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"

	sm "github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/statemachine/smtest"
)

func gatewayConfig(t testing.TB, def sm.Definition[state, phase]) smtest.Config[state, phase] {
	t.Helper()
	m, err := sm.New(def)
	if err != nil {
		t.Fatal(err)
	}
	return smtest.Config[state, phase]{
		Machine: m,
		World:   func(t *rapid.T) smtest.World[state, phase] { return drawGatewayWorld(t) },
	}
}

// The gateway machine survives random intents, failures before and after side
// effects, crashes and time, and always settles to its intent.
func TestGateway(t *testing.T) {
	smtest.Check(t, gatewayConfig(t, gatewayDefinition()))
}

// recorder is a rapid.TB that records a failing run instead of failing the
// test, so a test can assert that the harness finds a planted hole.
type recorder struct {
	failed bool
	log    strings.Builder
}

func (r *recorder) Helper()                    {}
func (r *recorder) Name() string               { return "planted" }
func (r *recorder) Logf(f string, args ...any) { fmt.Fprintf(&r.log, f+"\n", args...) }
func (r *recorder) Log(args ...any)            { fmt.Fprintln(&r.log, args...) }
func (r *recorder) Skipf(string, ...any)       { panic("skip") }
func (r *recorder) Skip(...any)                { panic("skip") }
func (r *recorder) SkipNow()                   { panic("skip") }
func (r *recorder) Errorf(f string, args ...any) {
	r.failed = true
	r.Logf(f, args...)
}
func (r *recorder) Error(args ...any) { r.failed = true; r.Log(args...) }
func (r *recorder) Fatalf(f string, args ...any) {
	r.Errorf(f, args...)
}
func (r *recorder) Fatal(args ...any) { r.Error(args...) }
func (r *recorder) FailNow()          { r.failed = true }
func (r *recorder) Fail()             { r.failed = true }
func (r *recorder) Failed() bool      { return r.failed }

// runHarness runs the harness on cfg and returns whether it failed and its
// report. It runs 100 cases from a fixed seed, whatever -short or the rapid
// flags say: a planted hole is then found, or missed, on every run.
func runHarness(t *testing.T, cfg smtest.Config[state, phase]) (bool, string) {
	t.Helper()
	t.Chdir(t.TempDir()) // rapid writes its fail file under testdata/
	for name, value := range map[string]string{"rapid.checks": "100", "rapid.seed": "1"} {
		f := flag.Lookup(name)
		old := f.Value.String()
		if err := f.Value.Set(value); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = f.Value.Set(old) })
	}
	var r recorder
	rapid.Check(&r, func(rt *rapid.T) { smtest.Run(rt, cfg) })
	return r.failed, r.log.String()
}

// A machine with a removed rule passes the build when the pair is wrongly
// declared settled; the harness finds the hole within 100 checks and names
// the pair.
func TestFindsPlantedHole(t *testing.T) {
	tests := []struct {
		name string
		hole func(*sm.Definition[state, phase])
		want string
	}{
		{
			name: "stop rule removed, (Stopped, Started) declared settled",
			hole: func(d *sm.Definition[state, phase]) {
				d.Rules = deleteRule(d.Rules, stopped, started)
				d.Settled = append(d.Settled, sm.Settle[state, phase]{State: stopped, Phase: started})
			},
			want: "machine settled (Stopped, Started) but the world does not match",
		},
		{
			name: "delete-from-Stopped rule removed, (Deleted, Stopped) declared settled",
			hole: func(d *sm.Definition[state, phase]) {
				d.Rules = deleteRule(d.Rules, deleted, stoppedPhase)
				d.Settled = append(d.Settled, sm.Settle[state, phase]{State: deleted, Phase: stoppedPhase})
			},
			want: "machine settled (Deleted, Stopped) but the world does not match",
		},
		{
			name: "Stopping deletes the Deployment before the routes",
			hole: func(d *sm.Definition[state, phase]) {
				d.Phases[4].Steps = []string{"delete_deployment", "deactivate_runtime_domain", "delete_service"}
			},
			want: "routes send traffic to a missing Deployment",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			def := gatewayDefinition()
			tt.hole(&def)
			failed, report := runHarness(t, gatewayConfig(t, def))
			if !failed {
				t.Fatalf("harness did not find the hole:\n%s", report)
			}
			first, _, _ := strings.Cut(report, "\n")
			t.Log(first)
			if !strings.Contains(report, tt.want) {
				t.Fatalf("report does not contain %q:\n%s", tt.want, report)
			}
		})
	}
}

func deleteRule(rules []sm.Rule[state, phase], s state, p phase) []sm.Rule[state, phase] {
	var out []sm.Rule[state, phase]
	for _, r := range rules {
		if r.State != s || r.Phase != p {
			out = append(out, r)
		}
	}
	return out
}

// The correct machine passes under the same recorder, so the planted-hole
// test's failures come from the holes.
func TestRecorderPassesCorrectMachine(t *testing.T) {
	if failed, report := runHarness(t, gatewayConfig(t, gatewayDefinition())); failed {
		t.Fatalf("correct machine failed:\n%s", report)
	}
}

func TestConfigErrors(t *testing.T) {
	good := gatewayConfig(t, gatewayDefinition())
	tests := []struct {
		name string
		edit func(*smtest.Config[state, phase])
	}{
		{"no machine", func(c *smtest.Config[state, phase]) { c.Machine = nil }},
		{"no world", func(c *smtest.Config[state, phase]) { c.World = nil }},
		{"negative ticks", func(c *smtest.Config[state, phase]) { c.SettleTicks = -1 }},
		{"terminal failures without a fault phase", func(c *smtest.Config[state, phase]) {
			def := gatewayDefinition()
			def.Phases = def.Phases[:len(def.Phases)-1] // no Failed
			def.Rules = def.Rules[:len(def.Rules)-1]
			for i := range def.Phases {
				def.Phases[i].Unbounded = def.Phases[i].Type == sm.Transitional
			}
			m, err := sm.New(def)
			if err != nil {
				t.Fatal(err)
			}
			c.Machine, c.TerminalFailures = m, true
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := good
			tt.edit(&cfg)
			failed, report := runHarness(t, cfg)
			if !failed || !strings.Contains(report, smtest.ErrInvalidConfig.Error()) {
				t.Fatalf("want a config error, got failed=%v:\n%s", failed, report)
			}
		})
	}
	if !errors.Is(fmt.Errorf("x: %w", smtest.ErrInvalidConfig), smtest.ErrInvalidConfig) {
		t.Fatal("ErrInvalidConfig does not match itself")
	}
}
