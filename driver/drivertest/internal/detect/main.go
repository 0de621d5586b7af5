// Command detect measures how often one random run of the driver harness
// finds each defect of the catalogue: it runs each defect's controller
// from fresh seeds (one run each, the harness's default settings) and
// prints the share of runs whose failure names the defect. It is not part
// of go test ./...; run it from the repository's root:
//
//	go run ./driver/drivertest/internal/detect -runs 100
//
// The seeds are drawn at random unless -from is given; they are printed,
// so a measurement can be repeated.
//
// With -explore N it measures the exhaustive search instead: for each
// defect, whether drivertest.Search finds it within N actions, with how
// many actions after the replicas start, after how many sequences and
// distinct states, and in what wall time; then the same search over the
// correct controller, which finds nothing and so explores every sequence:
//
//	go run ./driver/drivertest/internal/detect -explore 4
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"regexp"
	"testing"
	"time"

	"github.com/tendhq/tend/driver/drivertest"
	"github.com/tendhq/tend/driver/drivertest/internal/catalogue"
)

func main() {
	runs := flag.Int("runs", 100, "runs per defect, each from its own seed")
	from := flag.Int("from", 0, "the first seed (0: a random one)")
	explore := flag.Int("explore", 0, "measure the exhaustive search to this depth instead (0: random runs)")
	testing.Init()
	flag.Parse()
	if *explore > 0 {
		_ = flag.Set("test.v", "true") // the search of the correct controller logs what it explored
		testing.Main(func(pat, str string) (bool, error) { return regexp.MatchString(pat, str) },
			[]testing.InternalTest{{Name: "Explore", F: func(t *testing.T) { measureSearch(t, *explore) }}}, nil, nil)
	}
	first := *from
	if first == 0 {
		first = 1 + rand.IntN(1<<30)
	}
	fmt.Printf("seeds %d to %d, one random run each\n", first, first+*runs-1)
	measure := func(t *testing.T) {
		for _, d := range catalogue.Defects {
			found := 0
			for seed := first; seed < first+*runs; seed++ {
				f, err := drivertest.RunOne(t, catalogue.Config(d.Defect), seed)
				switch {
				case err != nil:
					t.Fatal(err)
				case f == nil:
				case catalogue.Names(f.Problems[0], d.Want):
					found++
				default:
					t.Errorf("seed %d: %s: another problem: %s", seed, d.Name, f.Problems[0])
				}
			}
			fmt.Printf("%-40s found by %3d of %d runs (%.0f%%)\n", d.Name, found, *runs, 100*float64(found)/float64(*runs))
		}
	}
	// RunOne runs in a testing/synctest bubble of a *testing.T. Main
	// exits, with 1 when a run failed with a problem that is not the
	// defect's.
	testing.Main(func(pat, str string) (bool, error) { return regexp.MatchString(pat, str) },
		[]testing.InternalTest{{Name: "Detect", F: measure}}, nil, nil)
}

// measureSearch prints, for each defect, what drivertest.Search to depth
// explores before it finds the defect, then times the search of the
// correct controller, which explores every sequence (drivertest.Explore
// logs how many).
func measureSearch(t *testing.T, depth int) {
	for _, d := range catalogue.Defects {
		start := time.Now()
		f, err := drivertest.Search(t, catalogue.Config(d.Defect), depth)
		took := time.Since(start)
		switch {
		case err != nil:
			t.Fatal(err)
		case f == nil:
			fmt.Printf("%-40s not found at depth %d: %v\n", d.Name, depth, took.Round(time.Millisecond))
		default:
			if !catalogue.Names(f.Problems[0], d.Want) {
				t.Errorf("%s: another problem: %s", d.Name, f.Problems[0])
			}
			// The replicas' start is one of the actions.
			fmt.Printf("%-40s found with %d actions after %d sequences, %d distinct states: %v\n",
				d.Name, len(f.Actions)-1, f.Sequences, f.States, took.Round(time.Millisecond))
		}
	}
	t.Run("Correct", func(t *testing.T) {
		start := time.Now()
		drivertest.Explore(t, catalogue.Config(catalogue.Correct), depth)
		fmt.Printf("%-40s explored at depth %d in %v\n", "the correct controller", depth, time.Since(start).Round(time.Millisecond))
	})
}
