package driver_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/driver"
	"github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

type bindSpec struct{ State string }

func (s bindSpec) Intent() string { return s.State }

type bindStatus struct {
	statemachine.Status[string, string]
}

type bindObj = store.Object[bindSpec, bindStatus]

// TestOperationDeclaresThePhase checks that a phase declared from bound
// values is the plain PhaseSpec its names make.
func TestOperationDeclaresThePhase(t *testing.T) {
	noop := func(context.Context, *bindObj, string) error { return nil }
	fill, check := driver.Do("fill", noop), driver.Do("check", noop)
	full := driver.Observe("full", func(context.Context, *bindObj) (bool, string, error) { return true, "", nil })
	got := driver.Operation("Filling", fill, check).Until(full.Is(), full.Not()).Then("Full")
	want := statemachine.PhaseSpec[string]{Phase: "Filling", Type: statemachine.Transitional, Steps: []string{"fill", "check"},
		Completion: []statemachine.Require{statemachine.Is("full"), statemachine.Not("full")}, Then: "Full"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Operation (-want +got):\n%s", diff)
	}
}

// TestDoOutcomes checks the outcomes of a step made with Do, and that New
// reports a step bound twice.
func TestDoOutcomes(t *testing.T) {
	boom := errors.New("boom")
	var err error
	step := driver.Do("fill", func(context.Context, *bindObj, string) error { return err })
	full := driver.Observe("full", func(context.Context, *bindObj) (bool, string, error) { return true, "", nil })
	cfg := driver.Config[bindSpec, bindStatus]{}.Bind([]driver.Step[bindSpec, bindStatus]{step}, []driver.Condition[bindSpec, bindStatus]{full})
	for _, tt := range []struct {
		err  error
		want statemachine.Outcome
	}{{nil, statemachine.Done}, {boom, statemachine.Failed}} {
		err = tt.err
		if out, got := cfg.Steps["fill"](context.Background(), &bindObj{}, "op"); out != tt.want || got != tt.err {
			t.Errorf("Do with %v: %v, %v; want %v", tt.err, out, got, tt.want)
		}
	}

	m, merr := statemachine.New(statemachine.Definition[string, string]{Name: "Tank", States: []string{"Full"}, Initial: "Empty",
		Phases: []statemachine.PhaseSpec[string]{{Phase: "Empty"}, driver.Operation("Filling", step).Until(full.Is()).Then("Filled"),
			{Phase: "Filled"}, {Phase: "Stuck", Type: statemachine.Fault}},
		Settled: []statemachine.Settle[string, string]{{State: "Full", Phase: "Filled"}},
		Rules: []statemachine.Rule[string, string]{{State: "Full", Phase: "Empty", Begin: "Filling"},
			{State: "Full", Phase: "Stuck", Begin: "Filling"}}})
	if merr != nil {
		t.Fatal(merr)
	}
	b, berr := memory.New(memory.Config{Kinds: []string{"Tank"}})
	if berr != nil {
		t.Fatal(berr)
	}
	coll, cerr := store.NewCollection[bindSpec, bindStatus](b, "Tank", store.CollectionConfig{})
	if cerr != nil {
		t.Fatal(cerr)
	}
	twice := cfg.Bind([]driver.Step[bindSpec, bindStatus]{step}, nil)
	if _, err := driver.New(coll, m, twice); !errors.Is(err, driver.ErrInvalidConfig) || !strings.Contains(err.Error(), "given twice") {
		t.Errorf("New with a step bound twice: %v", err)
	}
	if _, err := driver.New(coll, m, cfg); err != nil {
		t.Errorf("New with the step bound once: %v", err)
	}
}
