package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	cgworkqueue "k8s.io/client-go/util/workqueue"

	"github.com/tendhq/tend/workqueue"
)

// conformer is the API both queues share, with drain standing for
// ShutDownWithDrain (tend's takes a context).
type conformer interface {
	Add(key string)
	AddAfter(key string, d time.Duration)
	AddRateLimited(key string)
	Get() (string, bool)
	Done(key string)
	Forget(key string)
	NumRequeues(key string) int
	Len() int
	ShutDown()
	ShuttingDown() bool
	drain()
}

type tendQueue struct{ *workqueue.Queue[string] }

func (q tendQueue) drain() { _ = q.ShutDownWithDrain(context.Background()) }

type clientGoQueue struct {
	cgworkqueue.TypedRateLimitingInterface[string]
}

func (q clientGoQueue) drain() { q.ShutDownWithDrain() }

// A step acts on the queue and appends what it observed to the log.
type step func(t *testing.T, q conformer, log *[]string)

func add(k string) step { return func(_ *testing.T, q conformer, _ *[]string) { q.Add(k) } }
func addAfter(k string, d time.Duration) step {
	return func(_ *testing.T, q conformer, _ *[]string) { q.AddAfter(k, d) }
}
func addRateLimited(k string) step {
	return func(_ *testing.T, q conformer, _ *[]string) { q.AddRateLimited(k) }
}
func done(k string) step   { return func(_ *testing.T, q conformer, _ *[]string) { q.Done(k) } }
func forget(k string) step { return func(_ *testing.T, q conformer, _ *[]string) { q.Forget(k) } }
func shutDown() step       { return func(_ *testing.T, q conformer, _ *[]string) { q.ShutDown() } }
func length() step {
	return func(_ *testing.T, q conformer, l *[]string) { logf(l, "len %d", q.Len()) }
}
func requeues(k string) step {
	return func(_ *testing.T, q conformer, l *[]string) { logf(l, "requeues %s %d", k, q.NumRequeues(k)) }
}

// sleep advances the bubble's fake time and lets the queues' timers run.
func sleep(d time.Duration) step {
	return func(_ *testing.T, _ conformer, _ *[]string) {
		time.Sleep(d)
		synctest.Wait()
	}
}

// get logs the key Get returns, or "empty" when Get would block.
func get() step {
	return func(_ *testing.T, q conformer, l *[]string) {
		if q.Len() == 0 && !q.ShuttingDown() {
			logf(l, "get empty")
			return
		}
		k, shutdown := q.Get()
		if shutdown {
			logf(l, "get shutdown")
			return
		}
		logf(l, "get %s", k)
	}
}

// drainAsync starts ShutDownWithDrain and logs when it has returned, checked
// by drained.
func drainAsync(ch chan struct{}) step {
	return func(_ *testing.T, q conformer, _ *[]string) {
		go func() {
			q.drain()
			close(ch)
		}()
		synctest.Wait()
	}
}

func drained(ch chan struct{}) step {
	return func(_ *testing.T, _ conformer, l *[]string) {
		synctest.Wait()
		select {
		case <-ch:
			logf(l, "drained")
		default:
			logf(l, "draining")
		}
	}
}

func logf(l *[]string, format string, args ...any) { *l = append(*l, fmt.Sprintf(format, args...)) }

// TestConformanceWithClientGo runs one scenario table against tend's queue
// and client-go's typed rate-limiting queue. Where clientGo is set, the
// queues differ on purpose (see the workqueue package documentation) and
// each must show its own documented behaviour; elsewhere both must log
// exactly want.
func TestConformanceWithClientGo(t *testing.T) {
	type scenario struct {
		name     string
		steps    func() []step // fresh per queue: some steps hold channels
		want     []string
		clientGo []string // nil: same as want
	}
	scenarios := []scenario{
		{
			name:  "duplicates collapse",
			steps: func() []step { return []step{add("a"), add("b"), add("a"), length(), get(), get(), get()} },
			want:  []string{"len 2", "get a", "get b", "get empty"},
		},
		{
			name: "re-add while processing is deferred until Done",
			steps: func() []step {
				return []step{add("a"), get(), add("a"), add("a"), length(), get(), done("a"), length(), get()}
			},
			want: []string{"get a", "len 0", "get empty", "len 1", "get a"},
		},
		{
			name:  "first in first out",
			steps: func() []step { return []step{add("c"), add("b"), add("a"), get(), get(), get()} },
			want:  []string{"get c", "get b", "get a"},
		},
		{
			name: "AddAfter waits",
			steps: func() []step {
				return []step{addAfter("a", time.Second), length(), sleep(time.Second - 1), length(), sleep(1), length(), get()}
			},
			want: []string{"len 0", "len 0", "len 1", "get a"},
		},
		{
			name: "AddAfter earliest deadline wins, later call",
			steps: func() []step {
				return []step{addAfter("a", 3*time.Second), addAfter("a", time.Second), sleep(time.Second), get(), done("a"), sleep(3 * time.Second), length()}
			},
			want: []string{"get a", "len 0"},
		},
		{
			name: "AddAfter earliest deadline wins, earlier call",
			steps: func() []step {
				return []step{addAfter("a", time.Second), addAfter("a", 3*time.Second), sleep(time.Second), get(), done("a"), sleep(3 * time.Second), length()}
			},
			want: []string{"get a", "len 0"},
		},
		{
			name: "AddAfter of a key being processed",
			steps: func() []step {
				return []step{add("a"), get(), addAfter("a", time.Second), sleep(2 * time.Second), length(), done("a"), length(), get()}
			},
			want: []string{"get a", "len 0", "len 1", "get a"},
		},
		{
			name:  "AddAfter of zero or less is Add",
			steps: func() []step { return []step{addAfter("a", 0), addAfter("b", -time.Second), length()} },
			want:  []string{"len 2"},
		},
		{
			name: "AddRateLimited backs off per key until Forget",
			steps: func() []step {
				return []step{
					addRateLimited("a"), length(), sleep(5 * time.Millisecond), get(), done("a"),
					addRateLimited("a"), sleep(5 * time.Millisecond), length(), sleep(5 * time.Millisecond), get(), done("a"),
					requeues("a"), forget("a"), requeues("a"),
				}
			},
			want: []string{"len 0", "get a", "len 0", "get a", "requeues a 2", "requeues a 0"},
		},
		{
			name: "ShutDown ignores adds and drains Get",
			steps: func() []step {
				return []step{add("a"), add("b"), shutDown(), add("c"), addAfter("d", 0), get(), get(), get()}
			},
			want: []string{"get a", "get b", "get shutdown"},
		},
		{
			name: "ShutDown keeps a key re-added during processing",
			steps: func() []step {
				return []step{add("a"), get(), add("a"), shutDown(), done("a"), get(), done("a"), get()}
			},
			want: []string{"get a", "get a", "get shutdown"},
		},
		{
			name:  "Done of a key never added",
			steps: func() []step { return []step{done("ghost"), length(), add("a"), get()} },
			want:  []string{"len 0", "get a"},
		},
		{
			// Deliberate: Done of a key that is queued but not handed out.
			name:     "Done of a queued key is a no-op",
			steps:    func() []step { return []step{add("a"), done("a"), length()} },
			want:     []string{"len 1"},
			clientGo: []string{"len 2"},
		},
		{
			// Deliberate: Add drops a pending delay.
			name: "Add makes a delayed key ready now and drops its delay",
			steps: func() []step {
				return []step{addAfter("a", time.Second), add("a"), length(), get(), done("a"), sleep(time.Second), length()}
			},
			want:     []string{"len 1", "get a", "len 0"},
			clientGo: []string{"len 1", "get a", "len 1"},
		},
		{
			// Deliberate: a ready key is not delayed a second time.
			name: "AddAfter of a ready key changes nothing",
			steps: func() []step {
				return []step{add("a"), addAfter("a", time.Second), get(), done("a"), sleep(time.Second), length()}
			},
			want:     []string{"get a", "len 0"},
			clientGo: []string{"get a", "len 1"},
		},
		{
			// Deliberate: ShutDownWithDrain waits for queued keys too.
			name: "ShutDownWithDrain waits for queued keys",
			steps: func() []step {
				ch := make(chan struct{})
				return []step{add("a"), add("b"), get(), drainAsync(ch), drained(ch), done("a"), drained(ch), get(), drained(ch), done("b"), drained(ch)}
			},
			want:     []string{"get a", "draining", "draining", "get b", "draining", "drained"},
			clientGo: []string{"get a", "draining", "drained", "get b", "drained", "drained"},
		},
	}

	queues := []struct {
		name string
		new  func(t *testing.T) conformer
	}{
		{"tend", func(t *testing.T) conformer {
			q, err := workqueue.New(workqueue.Config[string]{})
			if err != nil {
				t.Fatal(err)
			}
			return tendQueue{q}
		}},
		{"clientgo", func(*testing.T) conformer {
			return clientGoQueue{cgworkqueue.NewTypedRateLimitingQueue(cgworkqueue.DefaultTypedControllerRateLimiter[string]())}
		}},
	}
	for _, sc := range scenarios {
		t.Run(strings.ReplaceAll(sc.name, " ", "_"), func(t *testing.T) {
			for _, qq := range queues {
				want := sc.want
				if qq.name == "clientgo" && sc.clientGo != nil {
					want = sc.clientGo
				}
				synctest.Test(t, func(t *testing.T) {
					q := qq.new(t)
					var log []string
					for _, s := range sc.steps() {
						s(t, q, &log)
					}
					q.ShutDown()
					for q.Len() > 0 { // let ShutDownWithDrain callers finish
						k, _ := q.Get()
						q.Done(k)
					}
					if !slices.Equal(log, want) {
						t.Errorf("%s logged %q, want %q", qq.name, log, want)
					}
				})
			}
		})
	}
}
