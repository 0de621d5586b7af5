package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tendhq/tend/backends/memory"
	sm "github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// writeCauses counts store writes per document by what each records. A
// status write counts once, under the first of its causes in this order:
// a step's checkpoint, an operation's begin, an operation's completion,
// observations, anything else.
type writeCauses struct {
	Checkpoint, Begin, Completion, Observation, Other float64
}

func (w writeCauses) total() float64 {
	return w.Checkpoint + w.Begin + w.Completion + w.Observation + w.Other
}

// writesBefore are the store writes per document of a gateway going from
// Creating to Started before the driver combined its writes, measured with
// BenchmarkConvergeWrites on the driver that wrote a status after every
// decision that changed it (1,000 documents, 2 workers):
//
//	BenchmarkConvergeWrites/docs-1000/workers-2-2  1  1431691944 ns/op
//	  2.000 begin-writes/doc  0 carried-begins/doc  0 carried-completions/doc
//	  6.000 checkpoint-writes/doc  2.000 completion-writes/doc  0 cut-%
//	  0 observation-writes/doc  0 other-writes/doc  1.000 writes-vs-before
//	  10.00 writes/doc
//
// Each operation's begin (Creating's and Starting's) was a write of its own,
// before its first step, and so was each completion, with the observations
// it was judged from.
var writesBefore = writeCauses{Checkpoint: 6, Begin: 2, Completion: 2}

// causeBackend counts the writes made through it by cause. It reads the
// stored document before each status write to see what the write changes,
// so it is for counting, not for timing.
type causeBackend struct {
	store.Backend
	m *sm.Machine[string, string]

	mu     sync.Mutex // guards counts
	counts writeCauses
	// carried counts the begins and completions that rode on a write
	// counted under another cause.
	carriedBegins, carriedCompletions float64
}

func (c *causeBackend) add(f func(w *writeCauses)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f(&c.counts)
}

func (c *causeBackend) UpdateSpec(ctx context.Context, d store.Document) (store.Document, error) {
	c.add(func(w *writeCauses) { w.Other++ })
	return c.Backend.UpdateSpec(ctx, d)
}

func (c *causeBackend) Delete(ctx context.Context, kind, key string, opts store.DeleteOptions) error {
	c.add(func(w *writeCauses) { w.Other++ })
	return c.Backend.Delete(ctx, kind, key, opts)
}

func (c *causeBackend) UpdateStatus(ctx context.Context, d store.Document) (store.Document, error) {
	cur, err := c.Backend.Get(ctx, d.Meta.Kind, d.Meta.Key)
	if err != nil {
		return store.Document{}, err
	}
	var prev, next gwStatus
	if len(cur.Status) > 0 {
		if err := json.Unmarshal(cur.Status, &prev); err != nil {
			return store.Document{}, err
		}
	} else {
		prev.Status = c.m.NewStatus()
	}
	if err := json.Unmarshal(d.Status, &next); err != nil {
		return store.Document{}, err
	}
	p, n := prev.Status, next.Status
	var steps int // checkpoints this write stores
	ended := p.Operation != nil && (n.Operation == nil || n.Operation.ID != p.Operation.ID)
	switch {
	case ended:
		// The operation completed: its steps not stored yet were done.
		ps, _ := c.m.Spec(p.Operation.Phase)
		for _, s := range ps.Steps {
			if !slices.Contains(p.Operation.Done, s) {
				steps++
			}
		}
	case n.Operation != nil && p.Operation != nil:
		steps = len(n.Operation.Done) - len(p.Operation.Done)
	case n.Operation != nil:
		steps = len(n.Operation.Done)
	}
	begin := n.Operation != nil && (p.Operation == nil || p.Operation.ID != n.Operation.ID)
	observed := !slices.Equal(p.Conditions, n.Conditions)
	c.mu.Lock()
	switch {
	case steps > 0:
		c.counts.Checkpoint++
		c.carriedBegins += float64(btoi(begin))
		c.carriedCompletions += float64(btoi(ended))
	case begin:
		c.counts.Begin++
		c.carriedCompletions += float64(btoi(ended))
	case ended:
		c.counts.Completion++
	case observed:
		c.counts.Observation++
	default:
		c.counts.Other++
	}
	c.mu.Unlock()
	return c.Backend.UpdateStatus(ctx, d)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// writesDocs is how many documents BenchmarkConvergeWrites drives.
const writesDocs = 1000

// BenchmarkConvergeWrites drives 1,000 ApiGateway documents from Creating to
// Started on the memory store, as BenchmarkConverge does, and counts the
// store writes per document by cause (see writeCauses) with a wrapping
// store.Backend. It reports each cause per document (checkpoint-writes/doc,
// begin-writes/doc, completion-writes/doc, observation-writes/doc,
// other-writes/doc) and their sum (writes/doc); the begins and completions
// that rode on a checkpoint's write (carried-begins/doc,
// carried-completions/doc); and the comparison with the writes before the
// driver combined them ([writesBefore]): writes-vs-before, the ratio of the
// writes per document now to then, and cut-%, the share of writes removed.
//
//	cd bench && go test -run '^$' -bench 'ConvergeWrites' -benchtime 1x -count 1 .
func BenchmarkConvergeWrites(b *testing.B) {
	b.Run(fmt.Sprintf("docs-%d/workers-2", writesDocs), func(b *testing.B) {
		var counts writeCauses
		var carriedBegins, carriedCompletions float64
		for range b.N {
			cb := convergeCounted(b, writesDocs, 2)
			counts.Checkpoint += cb.counts.Checkpoint
			counts.Begin += cb.counts.Begin
			counts.Completion += cb.counts.Completion
			counts.Observation += cb.counts.Observation
			counts.Other += cb.counts.Other
			carriedBegins += cb.carriedBegins
			carriedCompletions += cb.carriedCompletions
		}
		docs := float64(b.N * writesDocs)
		b.ReportMetric(counts.Checkpoint/docs, "checkpoint-writes/doc")
		b.ReportMetric(counts.Begin/docs, "begin-writes/doc")
		b.ReportMetric(counts.Completion/docs, "completion-writes/doc")
		b.ReportMetric(counts.Observation/docs, "observation-writes/doc")
		b.ReportMetric(counts.Other/docs, "other-writes/doc")
		b.ReportMetric(carriedBegins/docs, "carried-begins/doc")
		b.ReportMetric(carriedCompletions/docs, "carried-completions/doc")
		perDoc := counts.total() / docs
		b.ReportMetric(perDoc, "writes/doc")
		b.ReportMetric(perDoc/writesBefore.total(), "writes-vs-before")
		b.ReportMetric(100*(1-perDoc/writesBefore.total()), "cut-%")
	})
}

// convergeCounted drives docs documents to Started with workers workers
// through a causeBackend over a memory store, and returns it.
func convergeCounted(b *testing.B, docs, workers int) *causeBackend {
	b.StopTimer()
	defer b.StartTimer()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mem, err := memory.New(memory.Config{Kinds: []string{"ApiGateway"}, History: 10 * docs})
	if err != nil {
		b.Fatal(err)
	}
	cb := &causeBackend{Backend: mem, m: convergeMachine(b)}
	gws, c, reg := gatewayController(b, cb, workers)
	createGateways(ctx, b, gws, docs)
	b.StartTimer()
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := c.Run(ctx); err != nil {
			b.Error(err)
		}
	})
	for started(b, reg) < docs {
		time.Sleep(5 * time.Millisecond)
	}
	b.StopTimer()
	cancel()
	wg.Wait()
	return cb
}
