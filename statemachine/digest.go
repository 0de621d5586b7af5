package statemachine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/tendhq/tend/statemachine/internal/compare"
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
	var out Changes
	for _, c := range compare.Versions(compareVersion(old), compareVersion(m.Descriptor())) {
		out = append(out, Change(c))
	}
	return out
}

// compareVersion returns what a comparison reads of d.
func compareVersion(d Descriptor) compare.Version {
	rename := func(r Rename[string]) compare.Rename { return compare.Rename(r) }
	return compare.Version{
		Number: d.Version,
		States: d.States,
		Phases: mapAll(d.Phases, func(ps PhaseSpec[string]) compare.Phase {
			return compare.Phase{Name: ps.Phase, Type: ps.Type.String(), Steps: ps.Steps}
		}),
		RetiredStates: mapAll(d.Migrations.States, rename),
		RenamedPhases: mapAll(d.Migrations.Phases, rename),
		Requests:      mapAll(d.Requests, func(r RequestRule[string]) string { return r.Name }),
		Timers:        mapAll(d.Timers, func(t Timer[string]) string { return t.Name }),
		Settled:       mapAll(d.Settled, func(s Settle[string, string]) string { return compare.Pair(s.State, s.Phase) }),
		Rules:         mapAll(d.Rules, func(r Rule[string, string]) string { return compare.Rule(r.State, r.Phase, r.Begin) }),
	}
}
