package store

import (
	"errors"
	"fmt"
	"strconv"
)

// Sentinel errors. Backends return them wrapped in an [*Error] that names the
// operation and the document; match them with errors.Is.
var (
	// ErrNotFound: no document is stored under the kind and key.
	ErrNotFound = errors.New("store: not found")
	// ErrAlreadyExists: Create found a document under the key.
	ErrAlreadyExists = errors.New("store: already exists")
	// ErrConflict: a precondition (revision or UID) no longer holds. Re-read
	// and try again.
	ErrConflict = errors.New("store: conflict")
	// ErrCompacted: the history a watch needs is gone. List again and watch
	// from the list's revision.
	ErrCompacted = errors.New("store: revision compacted")
	// ErrWatchLagged: the watch consumer fell further behind than the backend
	// buffers. Watch again from the revision of the last event received.
	ErrWatchLagged = errors.New("store: watch fell behind")
	// ErrClosed: the watch or backend was closed.
	ErrClosed = errors.New("store: closed")
	// ErrInvalid: the request is malformed (bad key, kind, label, selector,
	// finalizer, or a rule such as adding a finalizer while Terminating).
	ErrInvalid = errors.New("store: invalid")
	// ErrInvalidContinue: a List's continue token is malformed, or was not
	// made by this backend. It also matches [ErrInvalid]. List again from
	// the first page.
	ErrInvalidContinue = fmt.Errorf("%w continue token", ErrInvalid)
	// ErrUnknownKind: the backend was not configured with the kind.
	ErrUnknownKind = errors.New("store: unknown kind")
	// ErrDecode: a stored payload could not be decoded into the caller's type.
	ErrDecode = errors.New("store: cannot decode")
	// ErrLeaseHeld: another holder has the lease and it has not expired.
	ErrLeaseHeld = errors.New("store: lease held by another holder")
	// ErrLeaseLost: the lease expired and was taken, or was released.
	ErrLeaseLost = errors.New("store: lease lost")
	// ErrFenced: a fenced write was refused because its lease is no longer
	// held at the fence's token.
	ErrFenced = errors.New("store: fenced")
)

// Error describes a failed store operation on one document or lease.
type Error struct {
	// Op is the operation: "get", "list", "create", "update spec",
	// "update status", "delete", "watch", "decode", "lease"...
	Op string
	// Kind and Key name the document (Key is empty for kind-wide operations;
	// for lease operations Key is the lease name and Kind is empty).
	Kind, Key string
	// Err is the cause; it matches one of the sentinels with errors.Is.
	Err error
}

// Error formats as `store: update status ApiGateway "team-a/gw-1": store: conflict`.
func (e *Error) Error() string {
	s := "store: " + e.Op
	if e.Kind != "" {
		s += " " + e.Kind
	}
	if e.Key != "" {
		s += " " + strconv.Quote(e.Key)
	}
	return s + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
