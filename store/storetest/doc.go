// Package storetest is the conformance suite every [store.Backend] passes.
//
// A backend's tests call [Run] with a function that returns a fresh, empty
// backend configured with the given kinds:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T, kinds []string) store.Backend {
//			s, err := memory.New(memory.Config{Kinds: kinds})
//			if err != nil {
//				t.Fatal(err)
//			}
//			return s
//		})
//	}
//
// # What it checks
//
// One subtest per property: creation and lookup (ErrNotFound,
// ErrAlreadyExists, errors that name the document), copies (changing a
// returned document never changes the store), revision preconditions on
// every write (ErrConflict) and no lost update under concurrent
// read-modify-write, generation rules and writes that change nothing,
// spec/status separation, deletion and finalizers (Terminating, no
// finalizer added then, removal with the last one), listing by label
// selector and by owner, watch order, exactly-once delivery, resumption from
// any revision, a watch from a revision ahead of the store (it waits and
// delivers only the changes after that revision), context handling and
// ErrCompacted, lease exclusivity, expiry and fencing (ErrFenced, nothing
// written), cancelled contexts, and malformed input.
//
// # Requirements on the backend
//
// The backend must implement [backend.Compactor], directly or through a
// wrapper in the test, so the suite can make it discard history on demand.
// Lease expiry follows the backend's clock, so the lease checks wait for
// real time: a few seconds in all, with time-to-live values under one
// second.
//
// A backend that cannot check fences atomically with its writes declares
// it by implementing [backend.Unfenced]; the Fencing check then verifies that it
// refuses every fenced write instead.
//
// The suite is strict enough to fail a backend that drops one watch event or
// ignores the revision precondition; its own tests show this on deliberately
// broken wrappers of the in-memory backend.
package storetest
