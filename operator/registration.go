package operator

import (
	"time"

	"github.com/tendhq/tend/statemachine"
)

// MachinesKind is the kind of the documents in which a running controller
// records the machine of the kind it drives: one document per driven kind,
// keyed by that kind, whose spec is a [Registration]. A store that serves
// operators must be configured with it (see [Kinds]).
const MachinesKind = "TendMachine"

// Kinds returns the kinds a store must be configured with, beside the
// user's kinds and their histories, for controllers to record their
// machines and for operators to read them.
func Kinds() []string { return []string{MachinesKind} }

// Registration is what a controller records about the kind it drives, so
// that a program which does not link the user's Go types (the tend command,
// the console) can show and act on its documents.
type Registration struct {
	// Kind is the kind of the documents the machine drives.
	Kind string `json:"kind"`
	// Machine is the machine, with states and phases written as their
	// String forms; statemachine.New builds it again.
	Machine statemachine.Descriptor `json:"machine"`
	// Finalizers are the finalizers the controller puts on the kind's
	// documents and removes when it has cleaned up.
	Finalizers []string `json:"finalizers,omitempty"`
	// Presence is the prefix of the lease names the kind's controllers hold
	// while they run: while an unexpired lease whose name begins with it
	// exists, a controller serves the kind.
	Presence string `json:"presence,omitempty"`
	// Replica names the replica that recorded the registration last, and
	// RecordedAt is when.
	Replica    string    `json:"replica,omitempty"`
	RecordedAt time.Time `json:"recordedAt,omitzero"`
}
