package driver

import (
	"strconv"
	"sync"
	"time"
)

// firstWait is how soon a driver first observes again an operation that
// began to wait: for its completion, or on a step that reported
// [statemachine.Pending]. Each wait after it lasts as long as the wait so
// far, so the waits double, up to Config.WaitInterval.
const firstWait = 100 * time.Millisecond

// waits remembers, per key, since when a document has waited at one point
// of an operation, so that a condition that holds soon is seen soon and
// one that takes long is not observed more often than it must. It lives
// in memory only: it decides when to look, never what is written, and a
// driver that restarts begins each wait short again.
type waits struct {
	mu    sync.Mutex // guards at and swept
	at    map[string]waitAt
	swept time.Time // when at was last cleared of keys no longer waiting
}

// waitAt is where and since when one key waits.
type waitAt struct {
	point       string // see waitPoint
	since, last time.Time
}

// next returns how long the document of key waits, now, at point before it
// is looked at again: firstWait, then as long as it has waited there, at
// most limit.
func (w *waits) next(key, point string, now time.Time, limit time.Duration) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.at == nil {
		w.at = map[string]waitAt{}
	}
	// A key that waits comes back within limit: one not seen for longer
	// waits no more (or waits anew), and is forgotten.
	stale := 2 * max(limit, firstWait)
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
	return min(max(now.Sub(a.since), firstWait), limit)
}

// waitPoint names where an operation waits: its id and the pending step
// with its failed attempts so far (each attempt waits anew), or its id
// alone while it waits for its completion.
func waitPoint(opID, step string, attempts int) string {
	return opID + "/" + step + "/" + strconv.Itoa(attempts)
}
