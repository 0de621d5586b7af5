// Package expectations lets a controller that reads from a cache avoid acting twice on a view that does not yet show
// its own writes.
//
// A controller reads the documents it reconciles from a cache fed by a watch, not from the store. Right after it
// creates a dependent, the cache may not show it yet; reconciling again at that moment would create it a second
// time. This package gives the controller three ways to wait for the cache to catch up, from the coarsest to the
// most precise.
//
// # Counts
//
// [Counts] keeps, per key, how many creations and deletions the controller still expects to observe, with the
// semantics of Kubernetes' ControllerExpectations: [Counts.ExpectCreations] before writing, [Counts.CreationObserved]
// from the watch, and [Counts.SatisfiedExpectations] before acting again. Expectations expire after a TTL
// ([DefaultTTL], five minutes) so that a lost event delays a controller but never stalls it.
//
// # Names
//
// [Names] expects specific dependents by name (a key, a UID, a member id) rather than by number: "members 4 and 5"
// instead of "two creations". An unrelated creation cannot satisfy it and an expected one is never counted twice.
// Each name expires on its own TTL.
//
// # Gate
//
// [Gate] is read-your-writes for any write, not only creations and deletions: the reconciler records the revision
// of its last write to a key with [Gate.Wrote], the cache reports the revision it has observed with [Gate.Observed],
// and [Gate.Wait] blocks until the cache has caught up or the context ends.
//
// # Keys, time and memory
//
// Every type is generic over the key type K. [Counts] and [Names] read the clock through their Config (nil means
// [time.Now]), so tests can drive them with a fake clock or inside a testing/synctest bubble; [Gate.Wait] blocks on
// a channel, so synctest sees it as durably blocked. Nothing here starts a goroutine. Entries that no longer hold a
// key back (expired, observed, caught up) are removed when their key is next touched and by an amortised sweep, so
// memory follows the keys in flight, not every key ever seen.
package expectations
