package workqueue

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
)

// ErrInvalidConfig is returned, wrapped with the reason, by [New] and by the
// rate limiter constructors when a configuration value is out of range.
var ErrInvalidConfig = errors.New("workqueue: invalid config")

// Priorities outside [MinPriority, MaxPriority] are clamped to that range.
const (
	MinPriority = math.MinInt16
	MaxPriority = math.MaxInt16
)

// DefaultPriorityAging is the aging step used when [Config.PriorityAging] is zero.
const DefaultPriorityAging = 1024

// maxPriorityAging bounds Config.PriorityAging so that the widest possible
// overtaking distance, (MaxPriority-MinPriority) × aging, stays below 2³⁰.
const maxPriorityAging = 1 << 14

// Config configures a [Queue]. The zero value is valid: an unnamed queue without
// metrics that uses [DefaultControllerRateLimiter].
type Config[K comparable] struct {
	// Name identifies the queue: it is the value of the "name" label of every
	// metric. It is required when Metrics is set.
	Name string

	// RateLimiter decides how long [Queue.AddRateLimited] waits and backs
	// [Queue.Forget] and [Queue.NumRequeues]. Nil means
	// [DefaultControllerRateLimiter].
	RateLimiter RateLimiter[K]

	// Metrics exposes the queue's metrics (its depth, adds, retries, how
	// long keys wait and are worked on): see [MetricsProvider], and package
	// workqueue/queueprom for Prometheus. Nil means no metrics. [New] has
	// the provider track the queue; [Queue.ShutDown] stops it, so a queue of
	// the same name can be created again afterwards.
	Metrics MetricsProvider

	// PriorityAging is how many later arrivals one unit of priority lets a key
	// overtake: a key is served before a key of priority lower by d that
	// arrived at most d × PriorityAging arrivals before it, and after any that
	// arrived earlier. Zero means [DefaultPriorityAging]; the maximum is 16384.
	PriorityAging int

	// MaxTriggers bounds the distinct triggers ([Queue.AddWithTrigger]) kept
	// for one turn of a key; further ones are counted in [Turn.Dropped].
	// Zero means [DefaultMaxTriggers].
	MaxTriggers int

	// Group, when set, names the group of a key (its tenant, say), and ready
	// keys are served fairly across groups: in turn, each group up to its
	// weight in a row, priorities and aging applying within each group. A
	// group of 100,000 ready keys thus delays a key of another group by at
	// most the other groups' weights, not by its backlog. Group is called
	// with the queue's lock held, once when a key enters the queue, and must
	// not call the queue. Nil means one group: plain priority order.
	Group func(K) string

	// GroupWeight gives the weight of a group: how many of its keys are
	// served in a row when its turn comes. It is called once when a group
	// gets its first key, with the lock held. Results are clamped to
	// [1, 65536]. Nil means every group weighs 1. It needs Group.
	GroupWeight func(group string) int

	// MaxInFlightPerGroup caps how many keys of one group are processed at
	// once: a group at its cap is skipped until one of its keys is Done.
	// Zero means no cap. It needs Group.
	MaxInFlightPerGroup int
}

// AddOptions are the options of [Queue.AddWithOptions]. The zero value is a
// plain [Queue.Add].
type AddOptions struct {
	// Priority orders ready keys: higher first, first in first out within a
	// level, with aging as [Config.PriorityAging] describes. Zero is the
	// priority of Add, AddAfter and AddRateLimited.
	Priority int

	// After delays the key like [Queue.AddAfter]; zero or negative means now.
	After time.Duration

	// RateLimited delays the key by the rate limiter's verdict like
	// [Queue.AddRateLimited]. With After also set, the shorter delay wins.
	RateLimited bool
}

// Entry states. A key in the index is in exactly one of: ready, delayed,
// processing, processing|dirty, processing|delayed. A key that is done and
// not pending again leaves the index, and its entry goes to the free list
// with state zero.
const (
	stReady      uint8 = 1 << iota // in a ready level; pos is the sequence of its live slot
	stDelayed                      // in the delay heap; pos is its heap index
	stProcessing                   // handed out by Get, Done not yet called
	stDirty                        // processing and added again: requeued by Done
)

// entry is the state of one key known to the queue. Entries live in a slab
// indexed by int32 so that the ready levels and the delay heap hold small
// indices, and freed entries are reused through a free list threaded via pos.
type entry[K comparable] struct {
	key   K
	pos   uint32
	prio  int16
	state uint8
}

// stamp holds the times metrics need, in nanoseconds since Queue.base.
type stamp struct {
	queued  int64 // when the key last became pending (for queue duration)
	started int64 // when Get handed it out (for work duration)
}

const noEntry = -1

// Queue is a keyed work queue. Keys added while pending collapse into one; a
// key is handed to one worker at a time; a key added while it is processed is
// handed out again once after [Queue.Done]. Keys may be delayed
// ([Queue.AddAfter], [Queue.AddRateLimited]) and prioritised
// ([Queue.AddWithOptions]). All methods are safe for concurrent use.
type Queue[K comparable] struct {
	limiter RateLimiter[K]
	aging   int64
	maxTrig int
	base    time.Time // origin of the queue's int64 clock
	tracked bool      // a MetricsProvider reads the queue's metrics
	untrack func()    // stops it; nil when metrics are off

	mu sync.Mutex // guards every field below

	// The fields that Add, Get and Done use come first, close to mu, so that
	// a worker taking the lock after another core held it fetches few cache
	// lines.
	shutdown   bool
	draining   bool
	seq        uint32
	processing int      // keys handed out and not yet Done
	waiting    int      // workers waiting in Get
	ready      ready[K] // ready keys in serving order
	index      index[K] // key -> slab index, for every key the queue holds
	entries    slab[entry[K]]
	free       int32 // head of the free list of entries, noEntry if none
	delays     delayHeap[K]
	groups     *groups[K] // nil when Config.Group is nil
	counts     counts     // metric counters, kept even when metrics are off (cheap)

	cond       sync.Cond        // signalled when a key becomes ready or on shutdown; Get waits on it
	drained    sync.Cond        // broadcast when a draining queue becomes empty or a drain context ends
	stamps     slab[stamp]      // parallel to entries; empty when metrics are off
	tracing    bool             // a trigger has been added: triggers is in use
	triggers   slab[triggerSet] // parallel to entries; empty until the first trigger
	timer      *time.Timer      // fires at the earliest delay; created on first use
	timerArmed bool
	timerAt    int64
}

// New returns a queue configured by cfg. The key type is inferred from cfg.
// It starts no goroutine: the one timer that serves delayed keys is created
// by the first delayed add.
func New[K comparable](cfg Config[K]) (*Queue[K], error) {
	if cfg.PriorityAging < 0 || cfg.PriorityAging > maxPriorityAging {
		return nil, fmt.Errorf("%w: PriorityAging %d is outside [0, %d]", ErrInvalidConfig, cfg.PriorityAging, maxPriorityAging)
	}
	if cfg.Metrics != nil && cfg.Name == "" {
		return nil, fmt.Errorf("%w: Name is required when Metrics is set", ErrInvalidConfig)
	}
	if cfg.MaxTriggers < 0 {
		return nil, fmt.Errorf("%w: MaxTriggers %d is negative", ErrInvalidConfig, cfg.MaxTriggers)
	}
	if cfg.MaxInFlightPerGroup < 0 {
		return nil, fmt.Errorf("%w: MaxInFlightPerGroup %d is negative", ErrInvalidConfig, cfg.MaxInFlightPerGroup)
	}
	if cfg.Group == nil && (cfg.GroupWeight != nil || cfg.MaxInFlightPerGroup != 0) {
		return nil, fmt.Errorf("%w: GroupWeight and MaxInFlightPerGroup need Group", ErrInvalidConfig)
	}
	q := &Queue[K]{
		limiter: cfg.RateLimiter,
		aging:   int64(cfg.PriorityAging),
		maxTrig: cfg.MaxTriggers,
		base:    time.Now(),
		index:   newIndex[K](),
		free:    noEntry,
		tracked: cfg.Metrics != nil,
	}
	if q.limiter == nil {
		q.limiter = DefaultControllerRateLimiter[K]()
	}
	if q.aging == 0 {
		q.aging = DefaultPriorityAging
	}
	if q.maxTrig == 0 {
		q.maxTrig = DefaultMaxTriggers
	}
	if cfg.Group != nil {
		q.groups = newGroups(&cfg)
	}
	q.cond.L = &q.mu
	q.drained.L = &q.mu
	if cfg.Metrics != nil {
		untrack, err := cfg.Metrics.Track(cfg.Name, q.stats)
		if err != nil {
			return nil, fmt.Errorf("workqueue: metrics of %q: %w", cfg.Name, err)
		}
		q.untrack = untrack
	}
	return q, nil
}

// Add marks key as needing processing. It is ignored after shutdown. A key
// already waiting collapses with it; a delayed key becomes ready now and its
// pending delay is dropped; a key being processed is handed out again after
// [Queue.Done].
func (q *Queue[K]) Add(key K) { q.add(key, 0, false, nil) }

// AddAfter adds key once d has passed. If the key is already delayed, the
// earlier deadline wins whatever the call order; if it is already ready,
// nothing changes. AddAfter with d <= 0 is [Queue.Add].
func (q *Queue[K]) AddAfter(key K, d time.Duration) {
	if d <= 0 {
		q.add(key, 0, false, nil)
		return
	}
	q.addAfter(key, 0, d, false, nil)
}

// AddRateLimited adds key after the delay the rate limiter returns for it.
func (q *Queue[K]) AddRateLimited(key K) {
	q.AddWithOptions(key, AddOptions{RateLimited: true})
}

// AddWithOptions adds key with a priority, a delay, or a rate-limited delay.
// A key that is already pending keeps the higher of its priorities and the
// earlier of its deadlines.
func (q *Queue[K]) AddWithOptions(key K, opts AddOptions) { q.addWithOptions(key, opts, nil) }

// AddWithTrigger is [Queue.AddWithOptions] that says why the key is added:
// the trigger joins the set of the key's next turn, which [Queue.GetTurn]
// hands to the worker. That is the turn that serves this add: the next one
// to start if the key is waiting or in flight, the one its deadline starts
// if the add is delayed, or an earlier one that an Add starts by making the
// delayed key ready now. A zero trigger records nothing, like AddWithOptions.
func (q *Queue[K]) AddWithTrigger(key K, t Trigger, opts AddOptions) {
	if t == (Trigger{}) {
		q.addWithOptions(key, opts, nil)
		return
	}
	q.addWithOptions(key, opts, &t)
}

func (q *Queue[K]) addWithOptions(key K, opts AddOptions, t *Trigger) {
	prio := clampPriority(opts.Priority)
	d := opts.After
	if opts.RateLimited {
		if r := q.limiter.When(key); d <= 0 || r < d {
			d = r
		}
	}
	if d <= 0 {
		q.add(key, prio, opts.RateLimited, t)
		return
	}
	q.addAfter(key, prio, d, opts.RateLimited, t)
}

func clampPriority(p int) int16 {
	return int16(min(max(p, MinPriority), MaxPriority))
}

// add adds key now; t, when not nil, is the trigger of the add.
func (q *Queue[K]) add(key K, prio int16, retry bool, t *Trigger) {
	q.mu.Lock()
	if q.shutdown {
		q.mu.Unlock()
		return
	}
	if retry {
		q.counts.retries++
	}
	idx, h, at := q.index.find(&q.entries, key)
	if idx == noEntry {
		idx = q.alloc(key, prio)
		q.index.insert(idx, h, at)
		if t != nil {
			q.noteTrigger(idx, t)
		}
		q.noteAdd(idx)
		wake := q.waiters(q.pushReady(idx))
		q.mu.Unlock()
		q.wake(wake)
		return
	}
	if t != nil {
		q.noteTrigger(idx, t)
	}
	e := q.entries.at(idx)
	wake := 0
	switch {
	case e.state&stReady != 0:
		q.raise(idx, prio)
	case e.state&stDirty != 0:
		e.prio = max(e.prio, prio)
	case e.state&stDelayed != 0:
		e.prio = max(e.prio, prio)
		q.delays.remove(&q.entries, int(e.pos))
		e.state &^= stDelayed
		q.noteAdd(idx)
		if e.state&stProcessing != 0 {
			e.state |= stDirty
		} else {
			wake = q.waiters(q.pushReady(idx))
		}
	default: // processing
		e.prio = max(e.prio, prio)
		e.state |= stDirty
		q.noteAdd(idx)
	}
	q.mu.Unlock()
	q.wake(wake)
}

// addAfter adds key once d has passed; t, when not nil, is the trigger of
// the add.
func (q *Queue[K]) addAfter(key K, prio int16, d time.Duration, retry bool, t *Trigger) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.shutdown {
		return
	}
	if retry {
		q.counts.retries++
	}
	deadline := q.now() + int64(d)
	idx, h, at := q.index.find(&q.entries, key)
	if idx == noEntry {
		idx = q.alloc(key, prio)
		q.index.insert(idx, h, at)
	}
	if t != nil {
		q.noteTrigger(idx, t)
	}
	e := q.entries.at(idx)
	if e.state == 0 { // new
		q.delay(idx, deadline)
		return
	}
	switch {
	case e.state&stReady != 0:
		q.raise(idx, prio)
	case e.state&stDirty != 0:
		e.prio = max(e.prio, prio)
	case e.state&stDelayed != 0:
		e.prio = max(e.prio, prio)
		if i := int(e.pos); deadline < q.delays[i].at {
			q.delays[i].at = deadline
			q.delays.fix(&q.entries, i)
			q.arm()
		}
	default: // processing
		e.prio = max(e.prio, prio)
		q.delay(idx, deadline)
	}
}

// Get blocks until a key is ready and hands it out; the caller must call
// [Queue.Done] with it when finished. With [Config.MaxInFlightPerGroup], a
// key whose group is at its cap is not ready until one of the group's keys
// is Done. After shutdown, Get still returns the keys that are ready (waiting
// for a cap if need be), then returns shutdown true. The triggers of the turn,
// if any, are dropped: [Queue.GetTurn] returns them.
func (q *Queue[K]) Get() (key K, shutdown bool) {
	var t Turn[K]
	if !q.get(&t, false) {
		return key, true
	}
	return t.Key, false
}

// GetTurn is [Queue.Get] that also says why the key was queued: the turn's
// triggers are appended to buf (which may be nil) and returned in
// [Turn.Triggers]. A worker that passes the previous turn's Triggers[:0]
// as buf allocates nothing once the buffer is large enough.
func (q *Queue[K]) GetTurn(buf []Trigger) (t Turn[K], shutdown bool) {
	t.Triggers = buf
	return t, !q.get(&t, true)
}

// get waits until a key can be served, marks it processing and fills in t:
// its key and, with triggers true, its triggers, appended to t.Triggers.
// It reports false when the queue is shut down and holds nothing ready.
func (q *Queue[K]) get(t *Turn[K], triggers bool) bool {
	q.mu.Lock()
	woken := 0
	for {
		if len(q.delays) > 0 {
			// Take due keys now rather than wait for the timer's
			// goroutine to be scheduled: busy workers keep delayed keys
			// on time.
			woken += q.promoteDue()
		}
		if q.servable() {
			break
		}
		if q.shutdown && q.ready.live == 0 {
			q.mu.Unlock()
			return false
		}
		q.waiting++
		q.cond.Wait()
		q.waiting--
	}
	var idx int32
	if q.groups == nil {
		idx = q.ready.pop(&q.entries, q.aging)
	} else {
		q.ready.live--
		idx = q.groups.pop(&q.entries, q.aging)
	}
	e := q.entries.at(idx)
	// A key added again while processed gets the priority of those adds.
	e.state, e.prio = stProcessing, MinPriority
	q.processing++
	if q.tracked {
		now := q.now()
		s := q.stamps.at(idx)
		q.counts.queueDur.observe(now - s.queued)
		s.started = now
	}
	if q.tracing {
		s := q.triggers.at(idx)
		if triggers {
			t.Triggers, t.Dropped = append(t.Triggers, s.list...), s.dropped
		}
		s.reset()
	}
	t.Key = e.key
	wake := q.waiters(woken - 1) // this worker took one; wake others for the rest
	q.mu.Unlock()
	q.wake(wake)
	return true
}

// servable reports whether Get can hand out a key now: one is ready and, with
// groups, its group is under its in-flight cap.
func (q *Queue[K]) servable() bool {
	if q.groups == nil {
		return q.ready.live > 0
	}
	return q.groups.ring.n > 0
}

// Done marks the end of processing key. A key added again meanwhile becomes
// ready; a key delayed meanwhile stays delayed. Done of a key that is not
// being processed is a no-op.
func (q *Queue[K]) Done(key K) {
	q.mu.Lock()
	idx, _, at := q.index.find(&q.entries, key)
	if idx == noEntry {
		q.mu.Unlock()
		return
	}
	e := q.entries.at(idx)
	if e.state&stProcessing == 0 {
		q.mu.Unlock()
		return
	}
	q.processing--
	if q.tracked {
		q.counts.workDur.observe(q.now() - q.stamps.at(idx).started)
	}
	ready := 0
	if q.groups != nil && q.groups.done(idx) {
		ready++ // its group was at the cap
	}
	switch {
	case e.state&stDirty != 0:
		e.state = 0
		ready += q.pushReady(idx)
	case e.state&stDelayed != 0:
		e.state = stDelayed
	default:
		q.index.delete(at)
		if q.tracing || q.groups != nil {
			q.releaseExtras(idx)
		}
		q.release(idx)
	}
	if q.draining && q.processing == 0 && q.ready.live == 0 {
		q.drained.Broadcast()
	}
	wake := q.waiters(ready)
	q.mu.Unlock()
	q.wake(wake)
}

// Forget tells the rate limiter that key succeeded: its backoff starts over.
func (q *Queue[K]) Forget(key K) { q.limiter.Forget(key) }

// NumRequeues returns how many times the rate limiter has delayed key since
// it was last forgotten.
func (q *Queue[K]) NumRequeues(key K) int { return q.limiter.NumRequeues(key) }

// Len returns the number of ready keys, including those whose group is at
// its cap: delayed keys and keys being processed are not counted.
func (q *Queue[K]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.ready.live
}

// ShuttingDown reports whether ShutDown or ShutDownWithDrain has been called.
func (q *Queue[K]) ShuttingDown() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.shutdown
}

// ShutDown stops the queue: later adds are ignored, delayed keys are dropped,
// and Get returns the keys still ready and then reports shutdown. Keys being
// processed and added again before the shutdown are still handed out after
// their Done. ShutDown does not wait; calling it again is a no-op.
func (q *Queue[K]) ShutDown() {
	q.mu.Lock()
	q.shutDownLocked()
	q.mu.Unlock()
}

// ShutDownWithDrain shuts the queue down like [Queue.ShutDown] and then waits
// until every ready key has been handed out and every handed-out key is Done.
// Unlike client-go's, which takes no context and waits only for keys already
// handed out, it honours ctx: when ctx ends first it returns ctx.Err() and the
// queue stays shut down.
func (q *Queue[K]) ShutDownWithDrain(ctx context.Context) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.draining = true
	q.shutDownLocked()
	stop := context.AfterFunc(ctx, func() {
		q.mu.Lock()
		q.drained.Broadcast()
		q.mu.Unlock()
	})
	defer stop()
	for q.processing > 0 || q.ready.live > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		q.drained.Wait()
	}
	return nil
}

func (q *Queue[K]) shutDownLocked() {
	if q.shutdown {
		return
	}
	q.shutdown = true
	for _, d := range q.delays {
		e := q.entries.at(d.idx)
		e.state &^= stDelayed
		if e.state == 0 {
			q.index.remove(e.key, d.idx)
			if q.tracing || q.groups != nil {
				q.releaseExtras(d.idx)
			}
			q.release(d.idx)
		}
	}
	q.delays = nil
	if q.timer != nil {
		q.timer.Stop()
		q.timerArmed = false
	}
	if q.untrack != nil {
		q.untrack()
		q.untrack = nil
	}
	q.cond.Broadcast()
}

// now returns the queue's clock: nanoseconds since New, monotonic.
func (q *Queue[K]) now() int64 { return int64(time.Since(q.base)) }

// alloc takes an entry from the free list or grows the slab, and the slabs
// parallel to it.
func (q *Queue[K]) alloc(key K, prio int16) int32 {
	if idx := q.free; idx != noEntry {
		e := q.entries.at(idx)
		q.free = int32(e.pos)
		*e = entry[K]{key: key, prio: prio}
		if q.groups != nil {
			q.groups.join(idx, key, false)
		}
		return idx
	}
	if q.entries.n == math.MaxInt32 {
		panic("workqueue: more than 2³¹-1 keys")
	}
	if q.tracked {
		q.stamps.push(stamp{})
	}
	if q.tracing {
		q.triggers.push(triggerSet{})
	}
	idx := q.entries.push(entry[K]{key: key, prio: prio})
	if q.groups != nil {
		q.groups.join(idx, key, true)
	}
	return idx
}

// release returns an entry, already removed from the index, to the free
// list, dropping its key so that the key's memory can be collected. The
// caller calls releaseExtras first when the queue has triggers or groups; it
// is kept out of release so that release stays inlined.
func (q *Queue[K]) release(idx int32) {
	*q.entries.at(idx) = entry[K]{pos: uint32(q.free)}
	q.free = idx
}

// releaseExtras drops what the slabs parallel to the entries hold for idx:
// its triggers, its place in its group.
func (q *Queue[K]) releaseExtras(idx int32) {
	if q.tracing {
		q.triggers.at(idx).reset()
	}
	if q.groups != nil {
		q.groups.leave(idx)
	}
}

// noteTrigger adds t to the triggers of the entry idx's next turn.
func (q *Queue[K]) noteTrigger(idx int32, t *Trigger) {
	if !q.tracing {
		// The first trigger: give every entry a trigger set.
		q.tracing = true
		for q.triggers.n < q.entries.n {
			q.triggers.push(triggerSet{})
		}
	}
	q.triggers.at(idx).add(t, q.maxTrig)
}

// noteAdd records that a key became pending, for metrics.
func (q *Queue[K]) noteAdd(idx int32) {
	q.counts.adds++
	if q.tracked {
		q.stamps.at(idx).queued = q.now()
	}
}

// pushReady appends an entry to the ready level of its priority, in its
// group if there are groups, and returns how many keys that made servable: 1,
// or 0 when the key's group is at its cap.
func (q *Queue[K]) pushReady(idx int32) int {
	q.seq++
	e := q.entries.at(idx)
	e.state |= stReady
	e.pos = q.seq
	if q.groups != nil {
		return q.pushGrouped(idx, e.prio)
	}
	q.ready.push(e.prio, slot{idx: idx, seq: q.seq})
	return 1
}

// pushGrouped is pushReady's path for a queue with groups.
func (q *Queue[K]) pushGrouped(idx int32, prio int16) int {
	q.ready.live++
	if q.groups.push(idx, prio, slot{idx: idx, seq: q.seq}) {
		return 1
	}
	return 0
}

// raise lifts the priority of a ready key. The key moves to the tail of its
// new level only if that places it earlier than where it already stands;
// otherwise it keeps its place and priority. A ready key's priority is always
// that of the level holding its live slot.
func (q *Queue[K]) raise(idx int32, prio int16) {
	e := q.entries.at(idx)
	if prio <= e.prio || !before(q.seq+1, prio, e.pos, e.prio, q.aging) {
		return
	}
	// The old slot becomes stale: its seq no longer matches e.pos.
	if q.groups != nil {
		g := q.groups.at(idx)
		g.ready.markStale(e.prio)
		g.ready.live--
	} else {
		q.ready.markStale(e.prio)
	}
	q.ready.live--
	e.prio = prio
	q.pushReady(idx)
}

// delay puts an entry that is not ready into the delay heap.
func (q *Queue[K]) delay(idx int32, at int64) {
	q.entries.at(idx).state |= stDelayed
	q.delays.push(&q.entries, delayed{at: at, idx: idx})
	q.arm()
}

// arm makes sure the timer fires no later than the earliest deadline.
func (q *Queue[K]) arm() {
	if len(q.delays) == 0 {
		return
	}
	at := q.delays[0].at
	if q.timerArmed && q.timerAt <= at {
		return
	}
	d := time.Duration(at - q.now())
	if q.timer == nil {
		q.timer = time.AfterFunc(d, q.fire)
	} else {
		q.timer.Reset(d)
	}
	q.timerArmed, q.timerAt = true, at
}

// fire runs on the timer's goroutine: it moves due keys on and re-arms the
// timer for the next deadline. It moves at most promoteBatch keys, so that
// after a late wake-up with many keys due the workers start on the first ones
// at once; the timer, re-armed for a deadline that has passed, fires again
// at once for the rest.
func (q *Queue[K]) fire() {
	q.mu.Lock()
	q.timerArmed = false
	if q.shutdown {
		q.mu.Unlock()
		return
	}
	wake := q.waiters(q.promoteDue())
	q.arm()
	q.mu.Unlock()
	q.wake(wake)
}

// waiters returns how many workers waiting in Get to wake for n keys that
// became ready: n, or fewer if fewer wait. It is called with the lock held,
// and its result passed to wake once the lock is released.
func (q *Queue[K]) waiters(n int) int { return max(min(n, q.waiting), 0) }

// wake wakes n workers waiting in Get.
func (q *Queue[K]) wake(n int) {
	for ; n > 0; n-- {
		q.cond.Signal()
	}
}

// promoteBatch bounds how many due keys promoteDue moves in one call, and so
// how long it holds the lock.
const promoteBatch = 32

// promoteDue moves up to promoteBatch keys whose deadline has passed to the
// ready line, or marks them dirty if they are being processed, and returns
// how many became ready.
func (q *Queue[K]) promoteDue() int {
	now := q.now()
	woken := 0
	for n := 0; n < promoteBatch && len(q.delays) > 0 && q.delays[0].at <= now; n++ {
		idx := q.delays.pop(&q.entries)
		e := q.entries.at(idx)
		e.state &^= stDelayed
		q.noteAdd(idx)
		if e.state&stProcessing != 0 {
			e.state |= stDirty
			continue
		}
		woken += q.pushReady(idx)
	}
	return woken
}
