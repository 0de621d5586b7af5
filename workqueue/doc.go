// Package workqueue provides a keyed, rate-limited, delaying priority work
// queue for controllers, over any comparable key.
//
// A client-go user switches by changing the constructor: [Queue] has the
// method names of client-go's typed rate-limiting queue (Add, AddAfter,
// AddRateLimited, Get, Done, Forget, NumRequeues, Len, ShutDown,
// ShutDownWithDrain, ShuttingDown), and [New] takes one [Config] from which
// the key type is inferred. Beyond client-go, it keeps the reasons of the
// adds that each turn of a key serves (triggers), and it can serve the keys
// of many tenants fairly (groups).
//
// # Semantics
//
// Keys, not objects, travel through the queue: a worker reads the newest
// state of whatever the key names.
//
//   - A key added while it waits collapses with the waiting one.
//   - A key is handed to one worker at a time. A key added while a worker
//     holds it is deferred until [Queue.Done] and then queued once.
//   - [Queue.AddAfter]: of several deadlines for one key, the earliest wins,
//     whatever the call order. A plain [Queue.Add] makes a delayed key ready
//     now and drops its pending delay. AddAfter with a delay of zero or less
//     is Add.
//   - Priorities ([Queue.AddWithOptions]): higher first, first in first out
//     within a level. Aging keeps low priorities from starving: a key's place
//     in line is its arrival number minus its priority times
//     [Config.PriorityAging], so a key is overtaken by at most d ×
//     PriorityAging later keys of a priority higher by d. A key added again
//     keeps the higher of its priorities.
//   - [Queue.ShutDown]: later adds are ignored and delayed keys dropped; Get
//     hands out what is ready, then reports shutdown.
//     [Queue.ShutDownWithDrain] also waits, within a context, until every
//     ready key has been handed out and every handed-out key is Done.
//   - [Queue.Done] of a key that is not being processed is a no-op.
//
// # Triggers: why a turn runs
//
// A turn is one handing out of a key by Get, up to its Done. Because adds
// collapse, one turn may serve many of them; [Queue.AddWithTrigger] says why
// each add happened with a [Trigger] (what happened, to which object, at
// which generation), and [Queue.GetTurn] hands the worker a [Turn]: the key
// and the distinct triggers of the adds that turn serves, in the order they
// first came.
//
//   - A trigger joins the key's next turn: the next one to start when the
//     key is waiting or in flight, the one its deadline starts when the add
//     is delayed (AddAfter, rate-limited retries), or an earlier one that an
//     Add starts by making the delayed key ready now.
//   - Equal triggers are kept once. A turn keeps at most
//     [Config.MaxTriggers] distinct triggers and counts the adds beyond in
//     [Turn.Dropped].
//   - The queue gives triggers no meaning; the caller defines the kinds.
//   - Get drops the triggers of the turn it hands out. A queue never given a
//     trigger keeps no trigger state, and GetTurn with the previous turn's
//     buffer allocates nothing once the buffer has grown.
//
// # Fair groups
//
// With [Config.Group] set, each key belongs to a group (a tenant, say), and
// ready keys are served in turn across the groups that have one: each group
// up to [Config.GroupWeight] keys in a row, then the next. Priorities and
// aging apply within each group. With [Config.MaxInFlightPerGroup], a group
// whose cap of keys is being processed is skipped until one of them is Done.
// The bound: while a group has a ready key and is under its cap, the other
// groups are served at most the sum of their weights before it is, whatever
// their backlog. A group's state is freed when it holds no key.
//
// # Differences from client-go
//
//   - Add of a delayed key makes it ready now (client-go keeps the delay and
//     may process the key twice); AddAfter of a key that is already ready,
//     or already due again after processing, changes nothing (client-go may
//     process it once more when the delay expires).
//   - ShutDownWithDrain takes a context, returns its error, and waits for
//     ready keys as well as keys in flight.
//   - Done of a key never handed out is a no-op (client-go may queue it
//     twice).
//   - workqueue_retries_total counts rate-limited adds only (client-go counts
//     every AddAfter).
//
// # Rate limiting
//
// [Queue.AddRateLimited] asks the [RateLimiter] of [Config.RateLimiter] how
// long to wait. The package provides per-key exponential backoff
// ([NewExponentialLimiter]), fast-then-slow retries ([NewFastSlowLimiter]),
// an overall token bucket ([NewTokenBucketLimiter]), the maximum of several
// limiters ([NewMaxOfLimiter]), a cap on another limiter
// ([NewMaxWaitLimiter]) and the controller default
// ([DefaultControllerRateLimiter]). Per-key state is dropped by
// [Queue.Forget] and also after an idle timeout, so a caller that never
// calls Forget does not leak memory.
//
// # Metrics
//
// With [Config.Metrics] set, the queue's numbers (depth, adds, retries, how
// long keys wait and are worked on, the work in progress) are read by a
// [MetricsProvider]. Package workqueue/queueprom is the Prometheus one: it
// exports the series client-go's and controller-runtime's dashboards expect,
// labelled with name=[Config.Name]. The numbers are kept as plain values
// under the queue's lock and read when the provider asks; no goroutine
// refreshes them. The package itself imports only the standard library, so
// a program using the queue alone pulls in no metrics library.
//
// # Goroutines and time
//
// [New] starts no goroutine. Delays are served by one runtime timer, created
// by the first delayed add, whose callback moves due keys to the ready line.
// Blocking uses sync.Cond, so tests can drive delays with testing/synctest.
package workqueue
