package compare

import (
	"fmt"
	"slices"
	"strings"
)

// Version is what a comparison reads of one version of a machine.
type Version struct {
	// Number is the machine's declared version.
	Number int
	// States and Phases are the declared states and phases, in order.
	States []string
	Phases []Phase
	// RetiredStates carries each retired state to the state that replaces
	// it, and RenamedPhases each renamed phase to its new name.
	RetiredStates []Rename
	RenamedPhases []Rename
	// Requests and Timers are the names of the declared requests and
	// timers; Settled and Rules name the settled pairs and rules (see
	// [Pair] and [Rule]).
	Requests, Timers []string
	Settled, Rules   []string
}

// Phase is one declared phase: its name, its type's name and its steps.
type Phase struct {
	Name  string
	Type  string
	Steps []string
}

// Rename carries the retired value From to To.
type Rename struct {
	From string
	To   string
}

// Change is one difference: what changed (Subject) and how (Change).
type Change struct {
	Subject string
	Change  string
}

// Pair names the settled pair (s, p).
func Pair(s, p string) string { return "(" + s + ", " + p + ")" }

// Rule names the rule by which s in p begins the phase begin.
func Rule(s, p, begin string) string { return Pair(s, p) + " → " + begin }

// Versions returns what changed from old to cur, in this order: the
// version, states removed (or retired, as cur's RetiredStates say) and
// added, phases removed (or renamed, as cur's RenamedPhases say), phases
// whose type or steps changed and phases added, then requests, timers,
// settled pairs and rules removed and added.
func Versions(old, cur Version) []Change {
	var out []Change
	add := func(subject, format string, args ...any) {
		out = append(out, Change{Subject: subject, Change: fmt.Sprintf(format, args...)})
	}
	if old.Number != cur.Number {
		add("version", "%d → %d", old.Number, cur.Number)
	}
	renamed := func(renames []Rename, from string) (string, bool) {
		i := slices.IndexFunc(renames, func(r Rename) bool { return r.From == from })
		if i < 0 {
			return "", false
		}
		return renames[i].To, true
	}
	for _, s := range old.States {
		if !slices.Contains(cur.States, s) {
			if to, ok := renamed(cur.RetiredStates, s); ok {
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
	oldPhases := map[string]Phase{}
	for _, ps := range old.Phases {
		oldPhases[ps.Name] = ps
	}
	curPhases := map[string]bool{}
	for _, ps := range cur.Phases {
		curPhases[ps.Name] = true
	}
	for _, ps := range old.Phases {
		if !curPhases[ps.Name] {
			if to, ok := renamed(cur.RenamedPhases, ps.Name); ok {
				add("phase "+ps.Name, "renamed to %s", to)
			} else {
				add("phase "+ps.Name, "removed")
			}
		}
	}
	for _, ps := range cur.Phases {
		was, ok := oldPhases[ps.Name]
		if !ok {
			from := ""
			for _, r := range cur.RenamedPhases {
				if r.To == ps.Name {
					from = r.From
				}
			}
			if was, ok = oldPhases[from]; !ok {
				add("phase "+ps.Name, "added (%s)", ps.Type)
				continue
			}
		}
		if was.Type != ps.Type {
			add("phase "+ps.Name, "%s → %s", was.Type, ps.Type)
		}
		if !slices.Equal(was.Steps, ps.Steps) {
			add("steps of "+ps.Name, "%s → %s", listOrNone(was.Steps), listOrNone(ps.Steps))
		}
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
	diff("request", old.Requests, cur.Requests)
	diff("timer", old.Timers, cur.Timers)
	diff("settled", old.Settled, cur.Settled)
	diff("rule", old.Rules, cur.Rules)
	return out
}

func listOrNone(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, ", ")
}
