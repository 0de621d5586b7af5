// Package lease holds the leases of a manager's replica: a [Keeper] takes,
// renews and releases named leases through a store.Leaser, and gives each
// taken lease as a [Held] whose context carries the lease's fence and ends
// as soon as the lease may be lost, before another replica can take it. The
// Keeper records the outcome of every call to the Leaser, so that
// [Keeper.Wedged] can tell when the store has stopped answering for longer
// than a lease lasts.
package lease
