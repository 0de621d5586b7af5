package registry

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// Kind is the kind of the documents in which a running Manager records the
// machine of each kind it drives: one document per driven kind, keyed by
// that kind, whose spec is an [Entry].
const Kind = "TendMachine"

// Kinds returns the kinds a store must hold, beside the user's kinds and
// their histories, for Managers to record their machines and for on-call
// tools to read them.
func Kinds() []string { return []string{Kind} }

// ErrUnregistered is returned for a kind no Manager recorded a machine of.
var ErrUnregistered = errors.New("registry: no machine registered for the kind")

// ErrSuperseded is returned by [Put] for an entry whose machine declares a
// lower version than the machine recorded: a newer version of the machine
// drives the kind.
var ErrSuperseded = errors.New("registry: a newer machine is registered for the kind")

// putAttempts is how many times [Put] reads the stored entry again after a
// write conflicted with another replica's.
const putAttempts = 3

// Entry is what a Manager records about a kind it drives.
type Entry struct {
	// Kind is the kind of the documents the machine drives.
	Kind string `json:"kind"`
	// Machine is the machine, with states and phases written as their
	// String forms; statemachine.New builds it again.
	Machine statemachine.Descriptor `json:"machine"`
	// Digest is the machine's digest (statemachine.Machine.Digest): two
	// entries with one digest record the same machine.
	Digest string `json:"digest,omitempty"`
	// Finalizers are the finalizers the driver puts on the kind's documents
	// and removes when it has cleaned up.
	Finalizers []string `json:"finalizers,omitempty"`
	// Presence is the prefix of the lease names the kind's controllers hold
	// while they run (see [PresencePrefix]): while an unexpired lease whose
	// name begins with it exists, a controller serves the kind.
	Presence string `json:"presence,omitempty"`
	// Replica names the replica that recorded the entry last, and
	// RecordedAt is when.
	Replica    string    `json:"replica,omitempty"`
	RecordedAt time.Time `json:"recordedAt,omitzero"`
}

// Build builds the entry's machine.
func (e Entry) Build() (*statemachine.Machine[string, string], error) {
	m, err := statemachine.New(e.Machine)
	if err != nil {
		return nil, fmt.Errorf("registry: the machine registered for %s does not build: %w", e.Kind, err)
	}
	return m, nil
}

// PresencePrefix returns the prefix of the presence leases of the
// controllers of kind under a Manager whose lease names begin with
// leasePrefix: each replica running a driver of kind holds
// "<leasePrefix>presence/<kind>/<identity>" while it runs.
func PresencePrefix(leasePrefix, kind string) string {
	return leasePrefix + "presence/" + kind + "/"
}

// Get returns the entry of kind, or an error matching [ErrUnregistered]
// when none was recorded (or the store does not hold [Kind]).
func Get(ctx context.Context, b store.Reader, kind string) (Entry, error) {
	d, err := b.Get(ctx, Kind, kind)
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrUnknownKind) {
		return Entry{}, fmt.Errorf("%w: %s", ErrUnregistered, kind)
	}
	if err != nil {
		return Entry{}, fmt.Errorf("registry: reading the entry of %s: %w", kind, err)
	}
	return Decode(d)
}

// List returns the entries of every kind, sorted by kind. A store that does
// not hold [Kind] holds none.
func List(ctx context.Context, b store.Reader) ([]Entry, error) {
	var out []Entry
	opts := store.ListOptions{}
	for {
		page, err := b.List(ctx, Kind, opts)
		if errors.Is(err, store.ErrUnknownKind) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("registry: listing: %w", err)
		}
		for _, d := range page.Items {
			e, err := Decode(d)
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		}
		if page.Continue == "" {
			break
		}
		opts.Continue = page.Continue
	}
	slices.SortFunc(out, func(a, b Entry) int { return cmp.Compare(a.Kind, b.Kind) })
	return out, nil
}

// Decode decodes the entry a document of [Kind] holds.
func Decode(d store.Document) (Entry, error) {
	var e Entry
	if err := json.Unmarshal(d.Spec, &e); err != nil {
		return Entry{}, fmt.Errorf("registry: the entry of %s: %w", d.Meta.Key, err)
	}
	if e.Kind == "" {
		e.Kind = d.Meta.Key
	}
	return e, nil
}

// Put writes e in b unless b holds it already, as far as it describes the
// machine (the kind, the machine, the finalizers and the presence prefix:
// not who recorded it, nor when). It reports whether it wrote. It does
// not replace an entry whose machine declares a higher version than e's:
// it returns an error matching [ErrSuperseded] instead.
func Put(ctx context.Context, b store.Backend, e Entry) (bool, error) {
	spec, err := json.Marshal(e)
	if err != nil {
		return false, err
	}
	want := machinePart(e)
	for attempt := 1; ; attempt++ {
		doc, err := b.Get(ctx, Kind, e.Kind)
		switch {
		case errors.Is(err, store.ErrNotFound):
			_, err = b.Create(ctx, store.Document{Meta: store.Meta{Kind: Kind, Key: e.Kind}, Spec: spec})
		case err != nil:
			return false, err
		default:
			var stored Entry
			if json.Unmarshal(doc.Spec, &stored) == nil && bytes.Equal(machinePart(stored), want) {
				return false, nil
			}
			if stored.Machine.Version > e.Machine.Version {
				return false, fmt.Errorf("%w: %s: version %d is recorded, not replaced by version %d",
					ErrSuperseded, e.Kind, stored.Machine.Version, e.Machine.Version)
			}
			doc.Spec = spec
			_, err = b.UpdateSpec(ctx, doc)
		}
		if (errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrAlreadyExists)) && attempt < putAttempts {
			continue
		}
		return err == nil, err
	}
}

// machinePart returns the part of e that says what the machine is, encoded.
func machinePart(e Entry) []byte {
	e.Replica, e.RecordedAt = "", time.Time{}
	out, _ := json.Marshal(e)
	return out
}
