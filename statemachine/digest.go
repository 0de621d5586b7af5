package statemachine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Digest returns a digest of the machine's [Descriptor]: two machines have
// the same digest when, and only when, they declare the same thing (the
// version and migrations included), whatever program built them.
func (m *Machine[S, P]) Digest() string {
	data, err := json.Marshal(m.Descriptor())
	if err != nil {
		// A Descriptor is plain data that always encodes.
		panic("statemachine: encoding a descriptor: " + err.Error())
	}
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Change is one difference between two versions of a machine.
type Change struct {
	// Subject names what changed: "version", "state Retired", "phase
	// Upgrading", "steps of Upgrading", "request restart", "timer renew",
	// "settled", "rule".
	Subject string `json:"subject"`
	// Change says how: "added", "removed", "renamed to X",
	// "resting → transitional", "a, b → a, c".
	Change string `json:"change"`
}

// String renders the change as "subject: change".
func (c Change) String() string { return c.Subject + ": " + c.Change }

// Changes are the differences between two versions of a machine, in the
// order [Machine.Compare] finds them.
type Changes []Change

// String renders one change a line.
func (cs Changes) String() string {
	var b strings.Builder
	for _, c := range cs {
		b.WriteString(c.String() + "\n")
	}
	return b.String()
}

// Compare returns what changed from old, a previous version of the
// machine as its [Descriptor], to m: the version, states and phases added,
// removed or renamed (as m's migrations declare), phases whose type or
// steps changed, requests and timers added or removed, and settled pairs
// and rules added or removed. Two versions that differ only in what these
// do not cover (bounds, completions, refusals, …) compare as no change;
// their digests still differ.
func (m *Machine[S, P]) Compare(old Descriptor) Changes {
	cur := m.Descriptor()
	var out Changes
	add := func(subject, format string, args ...any) {
		out = append(out, Change{Subject: subject, Change: fmt.Sprintf(format, args...)})
	}
	if old.Version != cur.Version {
		add("version", "%d → %d", old.Version, cur.Version)
	}
	renamed := func(renames []Rename[string], from string) (string, bool) {
		i := slices.IndexFunc(renames, func(r Rename[string]) bool { return r.From == from })
		if i < 0 {
			return "", false
		}
		return renames[i].To, true
	}
	for _, s := range old.States {
		if !slices.Contains(cur.States, s) {
			if to, ok := renamed(cur.Migrations.States, s); ok {
				add("state "+s, "retired, carried to %s", to)
			} else {
				add("state "+s, "removed")
			}
		}
	}
	for _, s := range cur.States {
		if !slices.Contains(old.States, s) {
			add("state "+s, "added")
		}
	}
	oldPhases := map[string]PhaseSpec[string]{}
	for _, ps := range old.Phases {
		oldPhases[ps.Phase] = ps
	}
	curPhases := map[string]bool{}
	for _, ps := range cur.Phases {
		curPhases[ps.Phase] = true
	}
	for _, ps := range old.Phases {
		if !curPhases[ps.Phase] {
			if to, ok := renamed(cur.Migrations.Phases, ps.Phase); ok {
				add("phase "+ps.Phase, "renamed to %s", to)
			} else {
				add("phase "+ps.Phase, "removed")
			}
		}
	}
	for _, ps := range cur.Phases {
		was, ok := oldPhases[ps.Phase]
		if !ok {
			from := ""
			for _, r := range cur.Migrations.Phases {
				if r.To == ps.Phase {
					from = r.From
				}
			}
			if was, ok = oldPhases[from]; !ok {
				add("phase "+ps.Phase, "added (%s)", ps.Type)
				continue
			}
		}
		if was.Type != ps.Type {
			add("phase "+ps.Phase, "%s → %s", was.Type, ps.Type)
		}
		if !slices.Equal(was.Steps, ps.Steps) {
			add("steps of "+ps.Phase, "%s → %s", listOrNone(was.Steps), listOrNone(ps.Steps))
		}
	}
	names := func(n int, name func(int) string) []string {
		out := make([]string, n)
		for i := range n {
			out[i] = name(i)
		}
		return out
	}
	diff := func(what string, before, after []string) {
		for _, n := range before {
			if !slices.Contains(after, n) {
				add(what+" "+n, "removed")
			}
		}
		for _, n := range after {
			if !slices.Contains(before, n) {
				add(what+" "+n, "added")
			}
		}
	}
	diff("request", names(len(old.Requests), func(i int) string { return old.Requests[i].Name }),
		names(len(cur.Requests), func(i int) string { return cur.Requests[i].Name }))
	diff("timer", names(len(old.Timers), func(i int) string { return old.Timers[i].Name }),
		names(len(cur.Timers), func(i int) string { return cur.Timers[i].Name }))
	diff("settled", names(len(old.Settled), func(i int) string { return pairString(old.Settled[i].State, old.Settled[i].Phase) }),
		names(len(cur.Settled), func(i int) string { return pairString(cur.Settled[i].State, cur.Settled[i].Phase) }))
	diff("rule", names(len(old.Rules), func(i int) string { return ruleString(old.Rules[i]) }),
		names(len(cur.Rules), func(i int) string { return ruleString(cur.Rules[i]) }))
	return out
}

func pairString(s, p string) string { return "(" + s + ", " + p + ")" }

func ruleString(r Rule[string, string]) string {
	return pairString(r.State, r.Phase) + " → " + r.Begin
}

func listOrNone(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, ", ")
}
