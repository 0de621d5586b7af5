package controller_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"testing"

	sm "github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// crashPoints counts the points where a process may die and ends the
// goroutine at the chosen one: nothing after it runs, and no recover sees
// it, as when a process dies.
type crashPoints struct {
	at, n   int
	crashed bool
}

func (c *crashPoints) point() {
	c.n++
	if c.n == c.at {
		c.crashed = true
		runtime.Goexit()
	}
}

// crashBackend may die just before a status write (the write is lost) or
// just after it (the write is stored, the process never learns it).
type crashBackend struct {
	store.Backend
	points *crashPoints
}

func (b *crashBackend) UpdateStatus(ctx context.Context, doc store.Document) (store.Document, error) {
	b.points.point()
	d, err := b.Backend.UpdateStatus(ctx, doc)
	b.points.point()
	return d, err
}

// TestDriverCrashResume kills the driver at every point of a gateway's way
// from Creating to Started — before and after each step's effect, before and
// after each status write — restarts it, and checks that it resumes at the
// first step not recorded done: no step is skipped, only the step the crash
// interrupted runs again, every step runs under its operation's stored id,
// and the document converges.
func TestDriverCrashResume(t *testing.T) {
	want := slices.Concat(creatingSteps, startingSteps)
	for at := 1; ; at++ {
		points := &crashPoints{at: at}
		mem := newGWFixture(t).mem
		f := newGWFixtureOn(t, mem, &crashBackend{Backend: mem, points: points})
		var problems []string
		f.world.hook = func(r stepRun) (sm.Outcome, error) {
			doc, err := mem.Get(context.Background(), "ApiGateway", r.key)
			if err == nil {
				obj, err := f.coll.Decode(doc)
				if err != nil || obj.Status.Operation == nil || obj.Status.Operation.ID != r.opID {
					problems = append(problems, fmt.Sprintf("%s ran under operation %s, not the stored one", r.step, r.opID))
				}
			}
			points.point()
			return 0, nil
		}
		f.world.after = func(stepRun) { points.point() }
		cfg := f.config()
		f.create(t, "gw", gwRunning)

		crashes := 0
		for settled := false; !settled; {
			d := f.driver(t, cfg) // a fresh process after each crash
			done := make(chan bool)
			points.crashed = false
			go func() {
				ok := false
				defer func() { done <- ok }()
				settle(t, d, "gw")
				ok = true
			}()
			if settled = <-done; !settled {
				if !points.crashed {
					t.Fatalf("crash at %d: the reconcile failed", at)
				}
				crashes++
			}
		}
		if crashes == 0 {
			if at < 2*len(want) {
				t.Fatalf("only %d crash points", at-1)
			}
			t.Logf("crashed at each of %d points", at-1)
			return // every point was tried
		}
		if len(problems) > 0 {
			t.Errorf("crash at %d: %v", at, problems)
		}
		if got := f.get(t, "gw").Status.Phase; got != phStarted {
			t.Errorf("crash at %d: phase %s, want Started", at, got)
		}
		runs := f.world.stepsRun("gw")
		if got := slices.Compact(slices.Clone(runs)); !slices.Equal(got, want) {
			t.Errorf("crash at %d: steps %v, want %v in order, each once or repeated at once", at, runs, want)
		}
		if len(runs) > len(want)+1 {
			t.Errorf("crash at %d: %d step runs, want at most one run again: %v", at, len(runs), runs)
		}
		if r := f.world.resources("gw"); !r.namespace || !r.database || !r.domain || !r.deployment || !r.service || !r.routes {
			t.Errorf("crash at %d: resources %+v", at, r)
		}
	}
}
