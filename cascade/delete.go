package cascade

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/tendhq/tend/store"
)

// Policy says what happens to an owner's dependents when the owner is deleted.
type Policy int

// The propagation policies, with the semantics of Kubernetes' garbage
// collector.
const (
	// Background removes the owner now (or as soon as its other finalizers
	// are gone); the garbage collector ([NewController]) then deletes the
	// dependents that have no other owner left.
	Background Policy = iota
	// Foreground keeps the owner Terminating, with [ForegroundFinalizer],
	// until every dependent whose reference has BlockOwnerDeletion is gone.
	// The garbage collector deletes the dependents first, their own
	// dependents before them.
	Foreground
	// Orphan keeps the owner Terminating, with [OrphanFinalizer], until the
	// garbage collector has removed the references to it from every
	// dependent. The dependents stay.
	Orphan
)

// String returns "Background", "Foreground" or "Orphan".
func (p Policy) String() string {
	switch p {
	case Background:
		return "Background"
	case Foreground:
		return "Foreground"
	case Orphan:
		return "Orphan"
	}
	return fmt.Sprintf("Policy(%d)", int(p))
}

// The finalizers that hold an owner while the garbage collector
// ([NewController]) handles its dependents. They are the only finalizers it
// adds or removes.
const (
	ForegroundFinalizer = "tend.dev/foreground-deletion"
	OrphanFinalizer     = "tend.dev/orphan"
)

// ErrPolicyChange is returned by [Delete] for a document that is already
// Terminating under another policy: its finalizers can no longer be changed to
// the policy asked for.
var ErrPolicyChange = errors.New("cascade: document already terminating under another policy")

// ErrInvalidPolicy is returned by [Delete] for a Policy that is not one of the
// constants.
var ErrInvalidPolicy = errors.New("cascade: invalid policy")

// maxAttempts bounds how many times Delete reads the document again after a
// conflicting write.
const maxAttempts = 5

// Delete requests deletion of the document kind/key under policy. It sets the
// policy's finalizer (and clears the other policy's) in one conditional write
// and then deletes the document, conditional on that write, so a concurrent
// change makes it read the document again and start over (up to five
// attempts; then the conflict is returned). Foreground and Orphan need a
// running garbage collector ([NewController]) to complete.
//
// Deleting a document that is already Terminating under the same policy
// succeeds and changes nothing; under another policy it fails with
// [ErrPolicyChange]. A missing document fails with an error matching
// [store.ErrNotFound].
func Delete(ctx context.Context, b store.Backend, kind, key string, policy Policy) error {
	if policy < Background || policy > Orphan {
		return fmt.Errorf("%w: %d", ErrInvalidPolicy, int(policy))
	}
	for attempt := 1; ; attempt++ {
		doc, err := b.Get(ctx, kind, key)
		if err != nil {
			return err
		}
		err = deleteDocument(ctx, b, doc, policy)
		if !errors.Is(err, store.ErrConflict) || attempt == maxAttempts {
			return err
		}
	}
}

// deleteDocument deletes doc under policy, conditional on doc's UID and
// revision.
func deleteDocument(ctx context.Context, b store.Writer, doc store.Document, policy Policy) error {
	m := &doc.Meta
	if m.Terminating() {
		if policyOf(m) == policy {
			return nil
		}
		return fmt.Errorf("%w: %s %q is terminating under %s, not %s", ErrPolicyChange, m.Kind, m.Key, policyOf(m), policy)
	}
	if want := withPolicy(m.Finalizers, policy); !slices.Equal(want, m.Finalizers) {
		m.Finalizers = want
		var err error
		if doc, err = b.UpdateSpec(ctx, doc); err != nil {
			return err
		}
	}
	return b.Delete(ctx, m.Kind, m.Key, store.DeleteOptions{UID: doc.Meta.UID, Revision: doc.Meta.Revision})
}

// policyOf returns the policy a document's finalizers select.
func policyOf(m *store.Meta) Policy {
	switch {
	case m.HasFinalizer(OrphanFinalizer):
		return Orphan
	case m.HasFinalizer(ForegroundFinalizer):
		return Foreground
	}
	return Background
}

// withPolicy returns finalizers with the policy's finalizer and without the
// other's, keeping every other finalizer in place.
func withPolicy(finalizers []string, policy Policy) []string {
	fg, orphan := slices.Contains(finalizers, ForegroundFinalizer), slices.Contains(finalizers, OrphanFinalizer)
	if fg == (policy == Foreground) && orphan == (policy == Orphan) {
		return finalizers
	}
	out := slices.DeleteFunc(slices.Clone(finalizers), func(f string) bool {
		return f == ForegroundFinalizer || f == OrphanFinalizer
	})
	switch policy {
	case Foreground:
		out = append(out, ForegroundFinalizer)
	case Orphan:
		out = append(out, OrphanFinalizer)
	}
	return out
}
