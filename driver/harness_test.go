package driver_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tendhq/tend/driver"
	"github.com/tendhq/tend/manager"

	"github.com/tendhq/tend/driver/drivertest"
	"github.com/tendhq/tend/store"
)

// harnessConfig is the driver harness's configuration of the gateway
// machine over gwWorld, with plant, if any, planted around each replica's
// driver.
func harnessConfig(t testing.TB, plant fault) drivertest.Config[gwSpec, gwStatus, gwState, gwPhase] {
	return drivertest.Config[gwSpec, gwStatus, gwState, gwPhase]{
		Machine: gatewayMachine(t),
		Kind:    "ApiGateway",
		Fixture: func(env drivertest.Env) (drivertest.Fixture[gwSpec, gwStatus], error) {
			w := newGWWorld()
			w.startDelay = time.Duration(env.Rand.Int64N(int64(30 * time.Second)))
			cfg := driver.Config[gwSpec, gwStatus]{Steps: w.steps(), Observers: w.observers(), WaitInterval: time.Second}
			world := drivertest.Fixture[gwSpec, gwStatus]{Driver: cfg}
			if plant != nil {
				// The fault decodes statuses with a collection of its own.
				coll, err := store.NewCollection[gwSpec, gwStatus](env.Backend, "ApiGateway", store.CollectionConfig{})
				if err != nil {
					return world, err
				}
				world.Backend = func(b store.Backend) store.Backend { return plant(b, coll) }
			}
			return world, nil
		},
		// As the gateway's API: a restart is asked for with a new token,
		// so Restarting set again without one asks for none.
		SetIntent: func(s *gwSpec, st gwState) { s.State, s.Restart = st, "" },
		Request:   func(s *gwSpec, _, token string) { s.State, s.Restart = gwRestarting, token },
	}
}

// The gateway's real driver passes the harness: random runs and the
// exhaustive search.
func TestHarnessGateway(t *testing.T) {
	drivertest.Check(t, harnessConfig(t, nil))
}

func TestHarnessGatewayExplored(t *testing.T) {
	drivertest.Explore(t, harnessConfig(t, nil), 2)
}

// plantedDriverDefects are the faults planted around each replica's
// driver, in the store it reads and writes, and what the harness reports
// for each.
var plantedDriverDefects = []struct {
	name  string
	plant fault
	want  []string // the first problem names one of these
}{
	// Its retry comes before the stored retry time, and sooner than
	// the backoff allows: whichever check sees it first reports it.
	{"a failed step is retried at once", retryTimeLost, []string{"before its stored retry time", "its backoff allows"}},
	{"a request is recorded served without an operation", requestsServedUnseen, []string{"no operation carried it"}},
	// The lost write is the step's outcome (its retry comes too soon) or
	// the next operation's beginning (its first step runs under an id
	// not stored), as the driver's next decision falls.
	{"a step's outcome is lost to a write made while it ran", outcomeLost, []string{"its backoff allows", "not the operation stored"}},
	{"an operation's step runs before its id is stored", idUnstored, []string{"not the operation stored"}},
}

// names reports whether problem names one of want.
func names(problem string, want []string) bool {
	return slices.ContainsFunc(want, func(w string) bool { return strings.Contains(problem, w) })
}

// The exhaustive search finds each defect planted in the driver, on every
// run: its depth, 5, exceeds each defect's shortest failing sequence (2
// actions, 1, 3 and 1) by two or more.
func TestHarnessFindsDriverDefects(t *testing.T) {
	for _, tt := range plantedDriverDefects {
		t.Run(tt.name, func(t *testing.T) {
			f, err := drivertest.Search(t, harnessConfig(t, tt.plant), 5)
			if err != nil {
				t.Fatal(err)
			}
			if f == nil || !names(f.Problems[0], tt.want) {
				t.Fatalf("want a failure with %q, got %v", tt.want, f)
			}
			t.Logf("found with %d actions: %s: %s", len(f.Actions), strings.Join(f.Actions, "; "), f.Problems[0])
		})
	}
}

// Random runs find each defect planted in the driver from almost every
// seed: a seed here is what one run of the test is, rapid's 100 cases, and
// at least 95 of 100 seeds must find the defect. A seed stops at its first
// failure, as rapid does; a failure other than the planted one fails the
// test.
func TestHarnessRandomRunsFindDriverDefects(t *testing.T) {
	if testing.Short() {
		t.Skip("up to 10,000 runs per defect")
	}
	for _, tt := range plantedDriverDefects {
		t.Run(tt.name, func(t *testing.T) {
			found, runs := 0, 0
			for seed := range 100 {
				for c := range 100 {
					runs++
					f, err := drivertest.RunOne(t, harnessConfig(t, tt.plant), seed*100+c)
					if err != nil {
						t.Fatal(err)
					}
					if f == nil {
						continue
					}
					if !names(f.Problems[0], tt.want) {
						t.Fatalf("seed %d, case %d: want a failure with %q, got %v", seed, c, tt.want, f)
					}
					found++
					break
				}
			}
			t.Logf("found by %d of 100 seeds, in %d runs (%.0f%% of runs)", found, runs, 100*float64(found)/float64(runs))
			if found < 95 {
				t.Fatalf("found by %d of 100 seeds, want at least 95", found)
			}
		})
	}
}

// The same with two replicas sharing the keys through leases, and a third
// of every step call failing in the world itself.
func TestHarnessGatewayReplicas(t *testing.T) {
	cfg := harnessConfig(t, nil)
	cfg.Replicas, cfg.Mode = 2, manager.Sharded
	drivertest.Check(t, cfg)
}
