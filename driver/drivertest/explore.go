package drivertest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tendhq/tend/driver"
)

// Explore runs every sequence of up to depth actions from a small set, in
// order of length, on a new run each, and fails t with the first that breaks
// a property: a deterministic search, for small machines, that finds a
// planted defect on every run. See [Search].
func Explore[Spec driver.HasIntent[S], Status any, S, P comparable](t *testing.T, cfg Config[Spec, Status, S, P], depth int) {
	t.Helper()
	f, n, err := search[Spec, Status](t, cfg, depth)
	if err != nil {
		t.Fatal(err)
	}
	if f != nil {
		f.Replay = fmt.Sprintf("go test -run '^%s$' (the search is deterministic)", t.Name())
		t.Logf("drivertest: found after %d sequences of up to %d actions, %d distinct states", n.sequences, depth, n.states)
		t.Fatal(f)
	}
	t.Logf("drivertest: explored %d sequences of up to %d actions, %d distinct states; %s",
		n.sequences, depth, n.states, strings.TrimPrefix(line(n.cov, cfg.Machine), "drivertest: "))
}

// explored counts what a search explored.
type explored struct {
	sequences int       // runs made
	states    int       // distinct states they reached
	cov       *coverage // what they exercised
}

// Search explores cfg breadth first and returns the first failure, a
// shortest one, or nil when no sequence of up to depth actions breaks a
// property.
//
// The document is created with each intent the machine admits in its
// initial phase. Then each action is one of: set each intent, ask for each
// request, delete the document, write its labels during the next step
// call, fail the next step call, crash the replica after the next step
// call's effect, fail the next call of each step before its effect and
// after it (one such fault is armed at a time: a new one replaces it),
// fail every step call until healed, heal,
// let a second pass, let the horizon pass; with several replicas also make
// the next step call outlast a lease and cut a replica off the store. After
// each action the run goes on until everything waits, and at the end of
// each sequence the lasting faults heal and the document must settle. The
// replicas start after a sequence's leading faults of the next step call,
// so that faults reach the first operation's steps too. Sequences
// that reach a state already reached by a shorter one (the same intent,
// phase, operation, requests and faults) are not extended.
//
// Each sequence runs on a new store and world, built from one fixed seed.
func Search[Spec driver.HasIntent[S], Status any, S, P comparable](t *testing.T, cfg Config[Spec, Status, S, P], depth int) (*Failure, error) {
	t.Helper()
	f, _, err := search[Spec, Status](t, cfg, depth)
	return f, err
}

// search is Search, and counts what it explored.
func search[Spec driver.HasIntent[S], Status any, S, P comparable](t *testing.T, cfg Config[Spec, Status, S, P], depth int) (*Failure, explored, error) {
	n := explored{cov: newCoverage()}
	cfg, err := cfg.validate()
	if err != nil {
		return nil, n, err
	}
	if depth < 0 {
		return nil, n, fmt.Errorf("%w: negative depth %d", ErrInvalidConfig, depth)
	}
	alphabet := exploredActions(cfg)
	type node struct {
		first   S
		actions []action[S]
	}
	seen := map[string]bool{}
	// try runs n and reports its failure, and whether it reached a state
	// no shorter sequence reached.
	try := func(nd node) (f *Failure, fresh bool) {
		defer func() {
			if f != nil {
				f.Sequences, f.States = n.sequences, n.states
			}
		}()
		// The replicas start after the sequence's leading faults, so
		// that they hit the first operation's steps.
		lead := 0
		for lead < len(nd.actions) && nd.actions[lead].stepFault() {
			lead++
		}
		actions := slices.Insert(slices.Clone(nd.actions), lead, action[S]{kind: doStart})
		f, fp := execute[Spec, Status](t, cfg, plan[S]{seed: 1, first: nd.first, actions: actions, oneFault: true, cov: n.cov})
		fresh = !seen[fp]
		seen[fp] = true
		n.sequences++
		n.states = len(seen)
		return f, fresh
	}
	var frontier []node
	for _, s := range cfg.Machine.States() {
		if cfg.Machine.Admit(s, cfg.Machine.Initial()) != nil {
			continue
		}
		nd := node{first: s}
		if f, _ := try(nd); f != nil {
			return f, n, nil
		}
		frontier = append(frontier, nd)
	}
	for range depth {
		var next []node
		for _, nd := range frontier {
			for _, a := range alphabet {
				child := node{first: nd.first, actions: append(slices.Clip(nd.actions), a)}
				f, fresh := try(child)
				if f != nil {
					return f, n, nil
				}
				if fresh {
					next = append(next, child)
				}
			}
		}
		frontier = next
	}
	return nil, n, nil
}

// exploredActions returns the actions an exploration of cfg tries.
func exploredActions[Spec driver.HasIntent[S], Status any, S, P comparable](cfg Config[Spec, Status, S, P]) []action[S] {
	var out []action[S]
	for _, s := range cfg.Machine.States() {
		out = append(out, action[S]{kind: doIntent, intent: s})
	}
	for _, name := range cfg.Machine.Requests() {
		out = append(out, action[S]{kind: doRequest, name: name})
	}
	out = append(out,
		action[S]{kind: doDelete},
		action[S]{kind: doTouch},
		action[S]{kind: doFail},
		action[S]{kind: doCrashAfter},
	)
	for _, step := range cfg.Machine.Steps() {
		out = append(out,
			action[S]{kind: doFail, name: step},
			action[S]{kind: doFailAfter, name: step},
		)
	}
	out = append(out,
		action[S]{kind: doBreak},
		action[S]{kind: doHeal},
		action[S]{kind: doSleep, d: time.Second},
		action[S]{kind: doSleep, d: cfg.Horizon},
	)
	if cfg.Replicas > 1 {
		out = append(out,
			action[S]{kind: doSlow, d: 2 * cfg.LeaseDuration},
			action[S]{kind: doPartition, replica: 0},
		)
	}
	return out
}
