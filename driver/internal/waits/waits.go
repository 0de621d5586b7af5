package waits

import (
	"strconv"
	"sync"
	"time"
)

// First is how soon a driver first observes again an operation that
// began to wait: for its completion, or on a step that reported
// statemachine.Pending. Each wait after it lasts as long as the wait so
// far, so the waits double, up to the driver's WaitInterval.
const First = 100 * time.Millisecond

// Schedule remembers, per key, since when a document has waited at one point
// of an operation, so that a condition that holds soon is seen soon and
// one that takes long is not observed more often than it must. It lives
// in memory only: it decides when to look, never what is written, and a
// driver that restarts begins each wait short again.
//
// The zero Schedule is ready to use, and safe for concurrent use.
type Schedule struct {
	mu    sync.Mutex // guards at and swept
	at    map[string]waitAt
	swept time.Time // when at was last cleared of keys no longer waiting
}

// waitAt is where and since when one key waits.
type waitAt struct {
	point       string // see Point
	since, last time.Time
}

// Next returns how long the document of key waits, now, at point before it
// is looked at again: First, then as long as it has waited there, at
// most limit.
func (w *Schedule) Next(key, point string, now time.Time, limit time.Duration) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.at == nil {
		w.at = map[string]waitAt{}
	}
	// A key that waits comes back within limit: one not seen for longer
	// waits no more (or waits anew), and is forgotten.
	stale := 2 * max(limit, First)
	a, ok := w.at[key]
	if !ok || a.point != point || now.Sub(a.last) > stale || now.Before(a.since) {
		a = waitAt{point: point, since: now}
	}
	a.last = now
	w.at[key] = a
	if now.Sub(w.swept) > stale {
		for k, x := range w.at {
			if now.Sub(x.last) > stale {
				delete(w.at, k)
			}
		}
		w.swept = now
	}
	return min(max(now.Sub(a.since), First), limit)
}

// Point names where an operation waits: its id and the pending step
// with its failed attempts so far (each attempt waits anew), or its id
// alone while it waits for its completion.
func Point(opID, step string, attempts int) string {
	return opID + "/" + step + "/" + strconv.Itoa(attempts)
}
