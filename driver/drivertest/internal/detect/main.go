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
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"regexp"
	"testing"

	"github.com/tendhq/tend/driver/drivertest"
	"github.com/tendhq/tend/driver/drivertest/internal/catalogue"
)

func main() {
	runs := flag.Int("runs", 100, "runs per defect, each from its own seed")
	from := flag.Int("from", 0, "the first seed (0: a random one)")
	testing.Init()
	flag.Parse()
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
