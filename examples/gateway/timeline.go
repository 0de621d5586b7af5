package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tendhq/tend/examples/gateway/platform"
	sm "github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// timeline records where a run's time goes, from watches on the gateways and
// the runtime domains: every operation, and in it every step (how long it
// ran, how many of its attempts failed, how long it waited in backoff) and
// the wait for the operation's completion. It reads only the statuses the
// controllers write, so it sees what an operator would.
type timeline struct {
	mu   sync.Mutex // guards ops and open
	ops  []*opSpan
	open map[string]*opSpan // by kind and key: the operation in flight
}

// opSpan is one operation of one document.
type opSpan struct {
	Kind, Key, Phase, ID string
	Start, End           time.Time
	// Steps are the spans of its steps, in the order they ran; the wait for
	// the completion, once every step is done, is the span named "".
	Steps []*stepSpan
	// attempts and retryAt are the operation's failure count and retry time
	// last seen, to tell a new failure from a write that only repeats it.
	attempts int
	retryAt  time.Time
}

// stepSpan is one step of an operation, or the wait for its completion.
type stepSpan struct {
	Name       string // "" for the wait for the completion
	Start, End time.Time
	// Failed counts its failed attempts, and InARow the most in a row (the
	// backoff grows with those).
	Failed, InARow int
	// Backoff is how long its failed attempts were scheduled to wait before
	// their retry: the backoff, as the driver recorded it in status.
	Backoff time.Duration
	// LastError is the error of its last failed attempt.
	LastError string
}

func (s *stepSpan) label() string {
	if s.Name == "" {
		return "completion"
	}
	return s.Name
}

func newTimeline() *timeline { return &timeline{open: map[string]*opSpan{}} }

// watchTimeline follows c's documents, governed by m, into tl until ctx
// ends.
func watchTimeline[Spec any, Status any, PS interface {
	*Status
	MachineStatus() *sm.Status[S, P]
}, S, P comparable](ctx context.Context, tl *timeline, c *store.Collection[Spec, Status], m *sm.Machine[S, P]) error {
	w, err := c.Watch(ctx, 0)
	if err != nil {
		return err
	}
	defer w.Close()
	for {
		e, err := w.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("watching %s: %w", c.Kind(), err)
		}
		now := time.Now()
		if e.Type == store.Deleted {
			tl.record(c.Kind(), e.Object.Key, nil, "", now)
			continue
		}
		st := PS(&e.Object.Status).MachineStatus()
		var step string
		if op := st.Operation; op != nil {
			ps, _ := m.Spec(op.Phase)
			for _, s := range ps.Steps {
				if !slices.Contains(op.Done, s) {
					step = s
					break
				}
			}
		}
		tl.record(c.Kind(), e.Object.Key, opView(st.Operation), step, now)
	}
}

// opSeen is what the timeline reads of an operation in a status.
type opSeen struct {
	ID, Phase string
	Attempts  int
	RetryAt   time.Time
	LastError string
}

func opView[P comparable](op *sm.Operation[P]) *opSeen {
	if op == nil {
		return nil
	}
	return &opSeen{ID: op.ID, Phase: fmt.Sprint(op.Phase), Attempts: op.Attempts, RetryAt: op.RetryAt, LastError: op.LastError}
}

// record takes in a status write of the document kind/key, seen at now: op
// is its operation in flight (nil when none) and step its next step ("" once
// every step is done).
func (tl *timeline) record(kind, key string, op *opSeen, step string, now time.Time) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	doc := kind + "/" + key
	cur := tl.open[doc]
	if cur != nil && (op == nil || op.ID != cur.ID || op.Phase != cur.Phase) {
		cur.close(now)
		delete(tl.open, doc)
		cur = nil
	}
	if op == nil {
		return
	}
	if cur == nil {
		cur = &opSpan{Kind: kind, Key: key, Phase: op.Phase, ID: op.ID, Start: now}
		tl.open[doc] = cur
		tl.ops = append(tl.ops, cur)
	}
	last := cur.last()
	if last == nil || last.Name != step {
		if last != nil {
			last.End = now
		}
		last = &stepSpan{Name: step, Start: now}
		cur.Steps = append(cur.Steps, last)
		cur.attempts, cur.retryAt = 0, time.Time{}
	}
	if op.Attempts > 0 && (op.Attempts != cur.attempts || !op.RetryAt.Equal(cur.retryAt)) {
		last.Failed++
		last.InARow = max(last.InARow, op.Attempts)
		last.Backoff += max(op.RetryAt.Sub(now), 0)
		last.LastError = op.LastError
	}
	cur.attempts, cur.retryAt = op.Attempts, op.RetryAt
}

func (o *opSpan) last() *stepSpan {
	if len(o.Steps) == 0 {
		return nil
	}
	return o.Steps[len(o.Steps)-1]
}

func (o *opSpan) close(now time.Time) {
	o.End = now
	if s := o.last(); s != nil && s.End.IsZero() {
		s.End = now
	}
}

// breakdown is what a timeline found, at the end of a run.
type breakdown struct {
	// Slowest is the operation that took longest (nil when none ran).
	Slowest *opSpan
	// Streak is the step with the most failed attempts in a row, and
	// StreakOf the operation it belongs to.
	Streak   *stepSpan
	StreakOf *opSpan
	// Failed counts the failed step attempts, and Backoff sums their
	// backoff (the documents wait side by side, so this is not wall time).
	Failed  int
	Backoff time.Duration
}

// breakdown closes the operations still open at now and sums up.
func (tl *timeline) breakdown(now time.Time) breakdown {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	var b breakdown
	for _, op := range tl.ops {
		if op.End.IsZero() {
			op = op.cloneClosed(now)
		}
		if b.Slowest == nil || op.End.Sub(op.Start) > b.Slowest.End.Sub(b.Slowest.Start) {
			b.Slowest = op
		}
		for _, s := range op.Steps {
			b.Failed += s.Failed
			b.Backoff += s.Backoff
			if s.InARow > 0 && (b.Streak == nil || s.InARow > b.Streak.InARow ||
				s.InARow == b.Streak.InARow && s.Backoff > b.Streak.Backoff) {
				b.Streak, b.StreakOf = s, op
			}
		}
	}
	return b
}

// cloneClosed returns a copy of o closed at now, o left open.
func (o *opSpan) cloneClosed(now time.Time) *opSpan {
	c := *o
	c.Steps = make([]*stepSpan, len(o.Steps))
	for i, s := range o.Steps {
		cs := *s
		c.Steps[i] = &cs
	}
	c.close(now)
	return &c
}

// String describes the operation and its steps, the slowest first:
// "ApiGateway gw-05 Deleting 17.2s: delete_stages 16.7s (16 failed, 16 in a
// row, 16.6s backoff), completion 0.3s, 6 more steps 0.2s".
func (o *opSpan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s %s", o.Kind, o.Key, o.Phase, seconds(o.End.Sub(o.Start)))
	steps := slices.Clone(o.Steps)
	slices.SortStableFunc(steps, func(x, y *stepSpan) int { return cmp.Compare(y.End.Sub(y.Start), x.End.Sub(x.Start)) })
	const shown = 2
	for i, s := range steps[:min(len(steps), shown)] {
		sep := ", "
		if i == 0 {
			sep = ": "
		}
		b.WriteString(sep + s.String())
	}
	if rest := steps[min(len(steps), shown):]; len(rest) > 0 {
		var d time.Duration
		for _, s := range rest {
			d += s.End.Sub(s.Start)
		}
		fmt.Fprintf(&b, ", %d more %s", len(rest), seconds(d))
	}
	return b.String()
}

// String describes the step: "delete_stages 16.7s (16 failed, 16 in a row,
// 16.6s backoff)".
func (s *stepSpan) String() string {
	out := s.label() + " " + seconds(s.End.Sub(s.Start))
	if s.Failed > 0 {
		out += fmt.Sprintf(" (%d failed, %d in a row, %s backoff)", s.Failed, s.InARow, seconds(s.Backoff))
	}
	return out
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }

// watch follows the platform's gateways and runtime domains until ctx ends.
func (tl *timeline) watch(ctx context.Context, p *platform.Platform, gm *sm.Machine[platform.GatewayState, platform.GatewayPhase],
	dm *sm.Machine[platform.DomainState, platform.DomainPhase]) error {
	var wg sync.WaitGroup
	var gErr, dErr error
	wg.Go(func() { gErr = watchTimeline(ctx, tl, p.Collections().Gateways, gm) })
	wg.Go(func() { dErr = watchTimeline(ctx, tl, p.Collections().Domains, dm) })
	wg.Wait()
	return errors.Join(gErr, dErr)
}
