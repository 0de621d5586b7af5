package drivertest_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tendhq/tend/driver/drivertest"
	"github.com/tendhq/tend/driver/drivertest/internal/catalogue"
	sm "github.com/tendhq/tend/statemachine"
)

// The correct VM controller, whose machine refuses a reboot of a stopped
// VM, passes random runs and the exhaustive search.
func TestCatalogueCorrect(t *testing.T) {
	t.Run("random", func(t *testing.T) { drivertest.Check(t, catalogue.Config(catalogue.Correct)) })
	t.Run("explore", func(t *testing.T) { drivertest.Explore(t, catalogue.Config(catalogue.Correct), 3) })
	t.Run("operators", func(t *testing.T) {
		cfg := catalogue.Config(catalogue.Correct)
		cfg.Operators = true
		drivertest.Check(t, cfg)
	})
}

// Each defect of the catalogue is found by the exhaustive search at depth
// 3, shortest first, in at most 3 actions after the replicas start.
func TestCatalogueExplore(t *testing.T) {
	for _, d := range catalogue.Defects {
		t.Run(d.Name, func(t *testing.T) {
			f, err := drivertest.Search(t, catalogue.Config(d.Defect), 3)
			if err != nil {
				t.Fatal(err)
			}
			if f == nil {
				t.Fatal("not found at depth 3")
			}
			if !catalogue.Names(f.Problems[0], d.Want) {
				t.Fatalf("found %q, want a problem with one of %q\n%v", f.Problems[0], d.Want, f)
			}
			if len(f.Actions) > 4 { // the replicas' start and up to 3 actions
				t.Fatalf("found with %d actions: %v", len(f.Actions), f.Actions)
			}
			t.Logf("found with %s: %s", strings.Join(f.Actions, "; "), f.Problems[0])
		})
	}
}

// catalogueSeeds are the fixed seeds of TestCatalogueRandom: each defect is
// found by at least one single random run among them.
var catalogueSeeds = []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}

// Each defect of the catalogue is found by a single random run (RunOne,
// the harness's default settings) from one of 20 fixed seeds; a run that
// fails fails with the defect's problem.
func TestCatalogueRandom(t *testing.T) {
	for _, d := range catalogue.Defects {
		t.Run(d.Name, func(t *testing.T) {
			found := 0
			for _, seed := range catalogueSeeds {
				f, err := drivertest.RunOne(t, catalogue.Config(d.Defect), seed)
				if err != nil {
					t.Fatal(err)
				}
				if f == nil {
					continue
				}
				if !catalogue.Names(f.Problems[0], d.Want) {
					t.Fatalf("seed %d: found %q, want a problem with one of %q\n%v", seed, f.Problems[0], d.Want, f)
				}
				found++
			}
			if found == 0 {
				t.Fatalf("no seed of %v found it", catalogueSeeds)
			}
			t.Logf("found by %d of %d seeds", found, len(catalogueSeeds))
		})
	}
}

// A forgotten rule is caught when the machine is built: a running VM that
// is off has nothing to begin.
func TestCatalogueForgottenRule(t *testing.T) {
	def := catalogue.Definition()
	def.Rules = def.Rules[1:] // (Running, Off) → Starting
	if _, err := sm.New(def); !errors.Is(err, sm.ErrUncovered) {
		t.Fatalf("got %v, want ErrUncovered", err)
	}
}
