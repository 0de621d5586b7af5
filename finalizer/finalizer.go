package finalizer

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/tendhq/tend/store"
)

// MaxAttempts bounds how many times [Add] and [Remove] try a conflicting write.
// Each attempt after the first reads the object again; when the last one still
// conflicts, the error matching [store.ErrConflict] is returned and the caller
// requeues.
const MaxAttempts = 5

// Guarded is the view of one stored object the helper reads and writes. An
// implementation holds the object as it was last read or written, like a
// client that updates the object it was given.
//
// Errors follow package store: a write based on a stale read fails with an
// error matching [store.ErrConflict], and an object that no longer exists (or
// was replaced by another object under the same name) with one matching
// [store.ErrNotFound]. Implementations for other systems translate their errors
// into these sentinels.
type Guarded interface {
	// Terminating reports whether deletion of the object was requested.
	Terminating() bool
	// Finalizers returns the object's finalizers. The caller does not modify
	// the slice.
	Finalizers() []string
	// SetFinalizers writes finalizers as the object's whole finalizer list,
	// provided the object is unchanged since it was last read, and on success
	// holds the object as written. Removing the last finalizer of a
	// Terminating object lets the store remove it; that is a success.
	SetFinalizers(ctx context.Context, finalizers []string) error
	// Refresh reads the object again.
	Refresh(ctx context.Context) error
}

// Stage is one of the four states of an object with respect to one finalizer.
type Stage int

// The four states, in the order of an object's life.
const (
	// Absent: not Terminating, finalizer not present. It must be added
	// before the object is acted on.
	Absent Stage = iota + 1
	// Present: not Terminating, finalizer present. Normal reconciliation.
	Present
	// Finalizing: Terminating, finalizer present. Cleanup runs; the
	// finalizer is removed once it succeeds.
	Finalizing
	// Finalized: Terminating, finalizer not present (or the object is
	// gone). Nothing is left to do.
	Finalized
)

// String returns the state's name.
func (s Stage) String() string {
	switch s {
	case Absent:
		return "Absent"
	case Present:
		return "Present"
	case Finalizing:
		return "Finalizing"
	case Finalized:
		return "Finalized"
	}
	return fmt.Sprintf("Stage(%d)", int(s))
}

// StageOf returns the state of obj with respect to the finalizer name.
func StageOf(obj Guarded, name string) Stage {
	has := slices.Contains(obj.Finalizers(), name)
	switch {
	case obj.Terminating() && has:
		return Finalizing
	case obj.Terminating():
		return Finalized
	case has:
		return Present
	}
	return Absent
}

// ErrCleanup matches every error [Ensure] returns because cleanup failed.
var ErrCleanup = errors.New("finalizer: cleanup failed")

// ErrTerminating is returned by [Add] when the object is Terminating and does
// not carry the finalizer: no finalizer can be added once deletion was
// requested.
var ErrTerminating = errors.New("finalizer: object is terminating")

// CleanupError reports a failed cleanup. The object stays Terminating with
// its finalizer until a later cleanup succeeds; a controller records Error()
// in the object's status (a condition, or the operation's last error) so that
// a stuck object shows why. It matches [ErrCleanup] and its cause.
type CleanupError struct {
	// Finalizer is the finalizer whose cleanup failed.
	Finalizer string
	// Err is the error cleanup returned.
	Err error
}

// Error formats as "finalizer example.com/cleanup: cleanup failed: cause".
func (e *CleanupError) Error() string {
	return "finalizer " + e.Finalizer + ": cleanup failed: " + e.Err.Error()
}

// Unwrap returns [ErrCleanup] and the cause.
func (e *CleanupError) Unwrap() []error { return []error{ErrCleanup, e.Err} }

// Ensure runs the finalizer state machine once for obj and the finalizer name:
//
//   - Absent: adds name with [Add], then continues with the new state (so
//     apply runs in the same call).
//   - Present: runs apply and returns its error unchanged.
//   - Finalizing: runs cleanup; on success removes name with [Remove], on
//     failure returns a [*CleanupError] and leaves the finalizer in place.
//   - Finalized: does nothing.
//
// It returns the state it acted in (zero, with an error matching
// [store.ErrInvalid], for a malformed name). apply and cleanup may be nil
// (nothing to do). Both must be idempotent: cleanup runs again after a failure, and after a
// removal that kept conflicting. An object that disappears while Ensure runs
// is Finalized. After Ensure, obj holds the newest state it read or wrote, so
// an apply that writes the object reads its revision from obj.
func Ensure(ctx context.Context, obj Guarded, name string, apply, cleanup func(context.Context) error) (Stage, error) {
	if err := store.ValidateFinalizer(name); err != nil {
		return 0, err
	}
	st := StageOf(obj, name)
	if st == Absent {
		if err := add(ctx, obj, name); err != nil {
			if errors.Is(err, ErrTerminating) || errors.Is(err, store.ErrNotFound) {
				return Finalized, nil
			}
			return Absent, err
		}
		st = StageOf(obj, name)
	}
	switch st {
	case Present:
		if apply == nil {
			return Present, nil
		}
		return Present, apply(ctx)
	case Finalizing:
		if cleanup != nil {
			if err := cleanup(ctx); err != nil {
				return Finalizing, &CleanupError{Finalizer: name, Err: err}
			}
		}
		return Finalizing, remove(ctx, obj, name)
	}
	return Finalized, nil
}

// Add adds the finalizer name to obj unless it is already there, and persists
// it. On a conflict it reads obj again and retries, up to [MaxAttempts]
// writes. It fails with [ErrTerminating] if obj is Terminating without the
// finalizer, and with an error matching [store.ErrNotFound] if obj is gone.
func Add(ctx context.Context, obj Guarded, name string) error {
	if err := store.ValidateFinalizer(name); err != nil {
		return err
	}
	return add(ctx, obj, name)
}

func add(ctx context.Context, obj Guarded, name string) error {
	return update(ctx, obj, func(fs []string) ([]string, bool, error) {
		if slices.Contains(fs, name) {
			return nil, false, nil
		}
		if obj.Terminating() {
			return nil, false, fmt.Errorf("%w: cannot add %s", ErrTerminating, name)
		}
		return append(slices.Clip(fs), name), true, nil
	})
}

// Remove removes the finalizer name, and only it, from obj and persists the
// change. The write is conditional on the state obj was read at, so a
// finalizer another controller added or removed meanwhile is never lost or
// restored: on a conflict Remove reads obj again, removes name from the fresh
// list and retries, up to [MaxAttempts] writes. Removing a finalizer that is
// not there, or from an object that is gone, succeeds.
func Remove(ctx context.Context, obj Guarded, name string) error {
	if err := store.ValidateFinalizer(name); err != nil {
		return err
	}
	return remove(ctx, obj, name)
}

func remove(ctx context.Context, obj Guarded, name string) error {
	err := update(ctx, obj, func(fs []string) ([]string, bool, error) {
		if !slices.Contains(fs, name) {
			return nil, false, nil
		}
		return slices.DeleteFunc(slices.Clone(fs), func(f string) bool { return f == name }), true, nil
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}

// update writes change(current finalizers) to obj until it succeeds, change
// reports there is nothing to write, or MaxAttempts writes conflicted.
func update(ctx context.Context, obj Guarded, change func([]string) ([]string, bool, error)) error {
	for attempt := 1; ; attempt++ {
		next, write, err := change(obj.Finalizers())
		if err != nil || !write {
			return err
		}
		err = obj.SetFinalizers(ctx, next)
		if !errors.Is(err, store.ErrConflict) || attempt == MaxAttempts {
			return err
		}
		if err := obj.Refresh(ctx); err != nil {
			return err
		}
	}
}
