package oncall

import (
	"bytes"
	"context"
	"fmt"

	"github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// MachineDiff is what deploying a new version of a kind's machine would
// change: see [Client.DiffMachine].
type MachineDiff struct {
	// Kind is the kind whose machine is compared.
	Kind string `json:"kind"`
	// Recorded and Next are the version and digest of the machine recorded
	// for the kind and of the one given.
	Recorded MachineVersion `json:"recorded"`
	Next     MachineVersion `json:"next"`
	// Changes are what changed from the recorded machine to the given one.
	Changes statemachine.Changes `json:"changes"`
	// Documents counts the kind's documents; Carried those whose status the
	// given machine would carry on changed (a driver writes each at its
	// next reconcile); Stranded lists those it could not carry on, nil
	// when there are none.
	Documents int                         `json:"documents"`
	Carried   int                         `json:"carried"`
	Stranded  *statemachine.StrandedError `json:"stranded,omitempty"`
}

// MachineVersion names one version of a machine.
type MachineVersion struct {
	Version int    `json:"version"`
	Digest  string `json:"digest"`
}

// DiffMachine compares next, a new version of the machine of kind as a
// statemachine.Descriptor, with the machine recorded for the kind, and
// checks it against the documents the store holds, before anything is
// deployed: what changed, and which documents it would carry on or strand
// (statemachine.Machine.Carry). A document is judged by the intent its
// status records (the machine's target), as the client does not know
// where a spec holds its intent. It fails with an error matching
// registry.ErrUnregistered when no machine is recorded for kind, and with
// the build's errors when next does not build.
func (c *Client) DiffMachine(ctx context.Context, kind string, next statemachine.Descriptor) (MachineDiff, error) {
	r, err := c.Registration(ctx, kind)
	if err != nil {
		return MachineDiff{}, err
	}
	m, err := statemachine.New(next)
	if err != nil {
		return MachineDiff{}, fmt.Errorf("oncall: the machine given for %s: %w", kind, err)
	}
	digest := r.Digest
	if recorded, err := r.Build(); err == nil {
		digest = recorded.Digest() // entries recorded before digests were
	}
	diff := MachineDiff{Kind: kind, Recorded: MachineVersion{Version: r.Machine.Version, Digest: digest},
		Next: MachineVersion{Version: m.Version(), Digest: m.Digest()}, Changes: m.Compare(r.Machine)}
	docs, err := c.list(ctx, kind, store.ListOptions{})
	if err != nil {
		return MachineDiff{}, err
	}
	stranded := &statemachine.StrandedError{Kind: kind, Machine: m.Name()}
	for _, d := range docs {
		diff.Documents++
		if len(bytes.TrimSpace(d.Status)) == 0 {
			continue // never written: the machine's new status
		}
		st, err := machineStatus(d)
		if err != nil {
			return MachineDiff{}, err
		}
		carried, strand := m.Carry(st.Target, st)
		switch {
		case strand != nil:
			stranded.Add(d.Meta.Key, *strand)
		case !carried.Equal(st):
			diff.Carried++
		}
	}
	if stranded.Err() != nil {
		diff.Stranded = stranded
	}
	return diff, nil
}
