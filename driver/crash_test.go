package driver_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"

	sm "github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// crashPoints counts the points where a process may die and ends the
// goroutine at the chosen one: nothing after it runs, and no recover sees
// it, as when a process dies. It names each point it passes.
type crashPoints struct {
	at, n   int
	crashed bool
	names   []string // of the points passed, in order
}

func (c *crashPoints) point(format string, args ...any) {
	c.n++
	c.names = append(c.names, fmt.Sprintf(format, args...))
	if c.n == c.at {
		c.crashed = true
		runtime.Goexit()
	}
}

// crashBackend may die just before a status write (the write is lost) or
// just after it (the write is stored, the process never learns it). It
// names each write by the phases it moves between.
type crashBackend struct {
	store.Backend
	coll   *store.Collection[gwSpec, gwStatus]
	points *crashPoints
	writes int
}

func (b *crashBackend) UpdateStatus(ctx context.Context, doc store.Document) (store.Document, error) {
	b.writes++
	what := fmt.Sprintf("status write %d", b.writes)
	if cur, err := b.Backend.Get(ctx, doc.Meta.Kind, doc.Meta.Key); err == nil {
		from, err1 := b.coll.Decode(cur)
		to, err2 := b.coll.Decode(doc)
		if err1 == nil && err2 == nil {
			what += fmt.Sprintf(" (%s → %s)", cmpPhase(from.Status.Phase), to.Status.Phase)
		}
	}
	b.points.point("before %s", what)
	d, err := b.Backend.UpdateStatus(ctx, doc)
	b.points.point("after %s", what)
	return d, err
}

// cmpPhase names a stored phase; a status never written is in Creating.
func cmpPhase(p gwPhase) gwPhase {
	if p == "" {
		return phCreating
	}
	return p
}

// phaseOfStep returns the phase whose operation runs step, of those a
// gateway passes on its way to Started.
func phaseOfStep(step string) gwPhase {
	if slices.Contains(creatingSteps, step) {
		return phCreating
	}
	return phStarting
}

// crashResume kills the driver at every point of a gateway's way from
// Creating to Started — before and after each step's effect, before and
// after each status write — restarts it, and returns what went wrong, and
// the names of the points of a run without a crash. With a fault planted
// around the driver, the problems are what the checks catch of it.
//
// It checks, when each step runs, what is stored: the step runs under the
// operation stored (or, before the first status write, the first
// operation's, the document's UID), and it is the next step the store
// records — every step before it is checkpointed, and it is not: no step
// runs again past its checkpoint, and none runs ahead of an earlier one's. After each run it checks that
// every step of an operation ran under one id, that no step was skipped,
// that only the step a crash interrupted ran again, and that the document
// converged.
func crashResume(t *testing.T, plant fault) (problems, points []string) {
	t.Helper()
	want := slices.Concat(creatingSteps, startingSteps)
	for at := 1; ; at++ {
		cp := &crashPoints{at: at}
		mem := newGWFixture(t).mem
		cb := &crashBackend{Backend: mem, points: cp}
		f := newGWFixtureOn(t, mem, cb)
		cb.coll = f.coll
		problem := func(format string, args ...any) {
			problems = append(problems, fmt.Sprintf("crash at %d: ", at)+fmt.Sprintf(format, args...))
		}
		f.world.hook = func(r stepRun) (sm.Outcome, error) {
			doc, err := mem.Get(context.Background(), "ApiGateway", r.key)
			if err != nil {
				problem("%s: %v", r.step, err)
				return 0, nil
			}
			obj, err := f.coll.Decode(doc)
			if err != nil {
				problem("%s: %v", r.step, err)
				return 0, nil
			}
			if id := runsUnder(obj); id != r.opID {
				problem("%s ran under operation %s, not the stored one (%q)", r.step, r.opID, id)
			}
			st := obj.Status
			if phase := cmpPhase(st.Phase); phase != phaseOfStep(r.step) || st.Operation != nil && slices.Contains(st.Operation.Done, r.step) {
				problem("%s ran on a store that does not record it next: phase %s, operation %+v", r.step, phase, st.Operation)
			}
			cp.point("before the effect of %s", r.step)
			return 0, nil
		}
		f.world.after = func(r stepRun) { cp.point("after the effect of %s", r.step) }
		cfg := f.config()
		f.create(t, "gw", gwRunning)

		crashes := 0
		for settled := false; !settled; {
			d := f.driverWith(t, cfg, plant) // a fresh process after each crash
			done := make(chan bool)
			cp.crashed = false
			go func() {
				ok := false
				defer func() { done <- ok }()
				settle(t, d, "gw")
				ok = true
			}()
			if settled = <-done; !settled {
				if !cp.crashed {
					t.Fatalf("crash at %d: the reconcile failed", at)
				}
				crashes++
			}
		}
		if crashes == 0 {
			if at < 2*len(want) {
				t.Fatalf("only %d crash points", at-1)
			}
			return problems, cp.names // every point was tried
		}
		if got := f.get(t, "gw").Status.Phase; got != phStarted {
			problem("phase %s, want Started", got)
		}
		runs := f.world.stepsRun("gw")
		if got := slices.Compact(slices.Clone(runs)); !slices.Equal(got, want) {
			problem("steps %v, want %v in order, each once or repeated at once", runs, want)
		}
		if len(runs) > len(want)+1 {
			problem("%d step runs, want at most one run again: %v", len(runs), runs)
		}
		ids := map[gwPhase][]string{}
		for i, id := range f.world.opIDs("gw") {
			ids[phaseOfStep(runs[i])] = append(ids[phaseOfStep(runs[i])], id)
		}
		for phase, got := range ids {
			if len(slices.Compact(slices.Clone(got))) != 1 {
				problem("the steps of %s ran under operations %v: the id changed mid-operation", phase, got)
			}
		}
		if r := f.world.resources("gw"); !r.namespace || !r.database || !r.domain || !r.deployment || !r.service || !r.routes {
			problem("resources %+v", r)
		}
	}
}

// TestDriverCrashResume kills the driver at every point of a gateway's way
// from Creating to Started, right before and right after each status write
// among them, and checks that it resumes at the first step not recorded
// done: no step is skipped, none runs again past its checkpoint, only the
// step the crash interrupted runs again, every step runs under its
// operation's stored id, and the document converges. The writes that
// combine a checkpoint with a completion and the next operation's begin are
// among the points.
func TestDriverCrashResume(t *testing.T) {
	problems, points := crashResume(t, nil)
	for _, p := range problems {
		t.Error(p)
	}
	t.Logf("crashed at each of %d points: %s", len(points), strings.Join(points, "; "))
	for _, p := range []string{
		// create_runtime_domain's checkpoint, Creating's completion and
		// Starting's begin with its id, in one write.
		"before status write 3 (Creating → Starting)", "after status write 3 (Creating → Starting)",
		// activate_runtime_domain's checkpoint and Starting's completion.
		"before status write 6 (Starting → Started)", "after status write 6 (Starting → Started)",
	} {
		if !slices.Contains(points, p) {
			t.Errorf("no crash point %q", p)
		}
	}
}

// TestDriverCrashResumeFindsDefects plants faults in the store under the
// driver, each losing some of its status writes, and checks that the crash
// test catches each.
func TestDriverCrashResumeFindsDefects(t *testing.T) {
	for _, tc := range []struct {
		name  string
		plant fault
		want  string
	}{
		{"a step runs before the checkpoint of the step before it is stored", checkpointDropped, "does not record it next"},
		{"a step runs before its operation's id is stored", idUnstored, "not the stored one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			problems, _ := crashResume(t, tc.plant)
			if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, tc.want) }) {
				t.Fatalf("no problem mentions %q: %v", tc.want, problems)
			}
			t.Logf("%d problems, the first: %s", len(problems), problems[0])
		})
	}
}

// writeLog records the machine's part of each status written.
type writeLog struct {
	store.Backend
	coll   *store.Collection[gwSpec, gwStatus]
	specs  int
	status []sm.Status[gwState, gwPhase]
}

func (b *writeLog) UpdateSpec(ctx context.Context, doc store.Document) (store.Document, error) {
	b.specs++
	return b.Backend.UpdateSpec(ctx, doc)
}

func (b *writeLog) UpdateStatus(ctx context.Context, doc store.Document) (store.Document, error) {
	if obj, err := b.coll.Decode(doc); err == nil {
		b.status = append(b.status, obj.Status.Status)
	}
	return b.Backend.UpdateStatus(ctx, doc)
}

// TestDriverWrites checks the writes a gateway takes from Creating to
// Started: the finalizer, then one status write per step, each the step's
// checkpoint. The first operation's id is the document's UID, so it begins
// with no write; Creating's completion, on the observations it was judged
// from, and Starting's begin with its id ride on the checkpoint of
// Creating's last step; Starting's completion rides on the checkpoint of
// its last step.
func TestDriverWrites(t *testing.T) {
	mem := newGWFixture(t).mem
	wl := &writeLog{Backend: mem}
	f := newGWFixtureOn(t, mem, wl)
	wl.coll = f.coll
	d := f.driver(t, f.config())
	uid := f.create(t, "gw", gwRunning).UID
	settle(t, d, "gw")

	type write struct {
		phase      gwPhase
		op         string
		done       []string
		conditions []string
	}
	var got []write
	for _, st := range wl.status {
		w := write{phase: st.Phase}
		if st.Operation != nil {
			w.op, w.done = st.Operation.ID, st.Operation.Done
		}
		for _, c := range st.Conditions {
			w.conditions = append(w.conditions, c.Name)
		}
		got = append(got, w)
	}
	created := []string{"database_ready", "namespace_ready", "runtime_domain_present"}
	want := []write{
		{phCreating, uid, creatingSteps[:1], nil},
		{phCreating, uid, creatingSteps[:2], nil},
		{phStarting, "op-1", nil, created},
		{phStarting, "op-1", startingSteps[:1], created},
		{phStarting, "op-1", startingSteps[:2], created},
		{phStarted, "", nil, slices.Concat(created[:1], []string{"deployment_available"}, created[1:])},
	}
	if !slices.EqualFunc(got, want, func(a, b write) bool {
		return a.phase == b.phase && a.op == b.op && slices.Equal(a.done, b.done) && slices.Equal(a.conditions, b.conditions)
	}) {
		t.Errorf("status writes:\n got %+v\nwant %+v", got, want)
	}
	if wl.specs != 1 {
		t.Errorf("%d spec writes, want 1 (the finalizer)", wl.specs)
	}
}
