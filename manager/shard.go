package manager

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/tendhq/tend/store"
)

// ShardOf returns the shard, in [0, shards), that key belongs to: the FNV-1a
// hash of the key modulo shards. Every replica computes the same shard for a
// key. It returns 0 when shards is not positive.
func ShardOf(key string, shards int) int {
	if shards <= 0 {
		return 0
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	return int(h.Sum64() % uint64(shards))
}

// errShardGivenUp is the cause of a shard context ended because this replica
// gave the shard to another one.
var errShardGivenUp = errors.New("controller: shard given up")

// sharder holds this replica's shard leases and admits the keys of the shards
// it holds. It is the [gate] of the controllers of a Sharded manager.
type sharder struct {
	m    *Manager
	live []atomic.Bool // per shard: held and not being given up; read by owns without the lock; set by setLive
	wake chan struct{} // capacity 1: asks the loop for a round now
	// target is how many shards this replica should hold, as the last
	// balance computed; -1 before the first.
	target atomic.Int64

	mu     sync.Mutex // guards shards and subs
	shards []*shard   // per shard; nil when not held
	subs   map[chan struct{}]struct{}
}

// shard is one held shard lease.
type shard struct {
	h *held
	// work is the parent of the shard's reconciles: it ends when the lease
	// is lost or when the shard is given up.
	work     context.Context
	stopWork context.CancelCauseFunc
	inflight int  // reconciles admitted and not done
	leaving  bool // being given up: still renewed, released once inflight is zero
}

func newSharder(m *Manager) *sharder {
	s := &sharder{
		m:      m,
		live:   make([]atomic.Bool, m.shards),
		wake:   make(chan struct{}, 1),
		shards: make([]*shard, m.shards),
		subs:   make(map[chan struct{}]struct{}),
	}
	s.target.Store(-1)
	return s
}

// setLive records whether shard i is held and not being given up, and tells
// the manager when that changed.
func (s *sharder) setLive(i int, live bool) {
	if s.live[i].Swap(live) != live {
		s.m.changed()
	}
}

// owned returns the shards held and not being given up, sorted; nil if none.
func (s *sharder) owned() []int {
	var out []int
	for i := range s.live {
		if s.live[i].Load() {
			out = append(out, i)
		}
	}
	return out
}

// shareMissing returns why this replica does not hold its share of the
// shards, or "" when it does.
func (s *sharder) shareMissing() string {
	target := s.target.Load()
	if target < 0 {
		return "the shards have not been balanced yet"
	}
	if n := len(s.owned()); int64(n) < target {
		return fmt.Sprintf("holds %d of its share of %d shards", n, target)
	}
	return ""
}

func (s *sharder) shardName(i int) string { return s.m.prefix + "shard/" + strconv.Itoa(i) }

func (s *sharder) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// owns implements [gate].
func (s *sharder) Owns(key string) bool { return s.live[ShardOf(key, len(s.live))].Load() }

// admit implements [gate].
func (s *sharder) Admit(parent context.Context, key string) (context.Context, func(), bool) {
	i := ShardOf(key, len(s.live))
	s.mu.Lock()
	sh := s.shards[i]
	if sh == nil || sh.leaving || sh.work.Err() != nil {
		s.mu.Unlock()
		return nil, nil, false
	}
	sh.inflight++
	s.mu.Unlock()
	ctx, cancel := context.WithCancelCause(s.m.fenced(parent, sh.h.current()))
	stop := context.AfterFunc(sh.work, func() { cancel(context.Cause(sh.work)) })
	return ctx, func() {
		stop()
		cancel(nil)
		s.mu.Lock()
		sh.inflight--
		idle := sh.inflight == 0 && sh.leaving
		s.mu.Unlock()
		if idle {
			s.poke()
		}
	}, true
}

// subscribe implements [gate].
func (s *sharder) Gained() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	s.mu.Lock()
	s.subs[ch] = struct{}{}
	s.mu.Unlock()
	return ch, func() {
		s.mu.Lock()
		delete(s.subs, ch)
		s.mu.Unlock()
	}
}

// run keeps the shards balanced until stop ends, keeps renewing those it
// holds until life ends, then gives them all up.
func (s *sharder) run(stop, life context.Context) {
	t := time.NewTicker(s.m.renew)
	defer t.Stop()
	var member *store.Lease
	stopped := stop.Done()
	for {
		if stop.Err() == nil {
			if l, err := s.m.leaser.AcquireLease(life, s.m.prefix+"member/"+s.m.identity, s.m.identity, s.m.ttl); err == nil {
				member = &l
			} else if life.Err() == nil {
				s.m.log.Warn("announcing membership", zap.Error(err))
			}
		}
		s.round(life, stop.Err() == nil)
		select {
		case <-life.Done():
			s.giveUpAll(life)
			if member != nil {
				s.m.release(life, *member)
			}
			return
		case <-t.C:
		case <-s.wake:
		case <-stopped:
			stopped = nil
		}
	}
}

// round renews the held shards, releases those given up whose reconciles
// have finished, and, when balance is set, takes or gives up shards so this
// replica holds its share.
func (s *sharder) round(ctx context.Context, balance bool) {
	for i := range s.shards {
		s.mu.Lock()
		sh := s.shards[i]
		s.mu.Unlock()
		if sh == nil {
			continue
		}
		if !sh.h.lost() {
			s.m.keep(ctx, sh.h)
		}
		s.mu.Lock()
		lost, idle := sh.h.lost(), sh.inflight == 0
		gone := lost || (sh.leaving && idle)
		if gone {
			s.shards[i] = nil
			s.setLive(i, false)
		}
		s.mu.Unlock()
		switch {
		case !gone:
		case lost:
			sh.stopWork(store.ErrLeaseLost)
			s.m.log.Warn("lost shard", zap.Int("shard", i), zap.Error(context.Cause(sh.h.ctx)))
		default:
			sh.h.end(errShardGivenUp)
			s.m.release(ctx, sh.h.current())
			s.m.log.Info("gave up shard", zap.Int("shard", i))
		}
	}
	if balance && ctx.Err() == nil {
		s.balance(ctx)
	}
}

// balance takes free shards or gives up extra ones so that this replica
// holds its share: of the members sorted by identity, the first
// shards mod members hold shards/members + 1 shards, the others
// shards/members.
func (s *sharder) balance(ctx context.Context) {
	members, err := s.m.leaser.ListLeases(ctx, s.m.prefix+"member/")
	if err != nil {
		if ctx.Err() == nil {
			s.m.log.Warn("listing members", zap.Error(err))
		}
		return
	}
	ids := make([]string, 0, len(members)+1)
	for _, l := range members {
		ids = append(ids, l.Holder)
	}
	if !slices.Contains(ids, s.m.identity) {
		ids = append(ids, s.m.identity)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	me := slices.Index(ids, s.m.identity)
	n := len(s.shards)
	target := n / len(ids)
	if me < n%len(ids) {
		target++
	}
	s.target.Store(int64(target))

	s.mu.Lock()
	var mine []int
	for i, sh := range s.shards {
		if sh != nil && !sh.leaving && !sh.h.lost() {
			mine = append(mine, i)
		}
	}
	if len(mine) > target {
		// Give up the highest shards: they are the last a newcomer tries.
		for _, i := range mine[target:] {
			sh := s.shards[i]
			sh.leaving = true
			s.setLive(i, false)
			sh.stopWork(errShardGivenUp)
		}
		s.mu.Unlock()
		s.poke()
		return
	}
	s.mu.Unlock()
	if len(mine) == target {
		return
	}

	leases, err := s.m.leaser.ListLeases(ctx, s.m.prefix+"shard/")
	if err != nil {
		if ctx.Err() == nil {
			s.m.log.Warn("listing shards", zap.Error(err))
		}
		return
	}
	taken := make([]bool, n)
	for _, l := range leases {
		i, err := strconv.Atoi(strings.TrimPrefix(l.Name, s.m.prefix+"shard/"))
		if err == nil && i >= 0 && i < n && l.Holder != s.m.identity {
			taken[i] = true
		}
	}
	need := target - len(mine)
	gained := false
	// Start where this replica's share would begin, so replicas joining
	// together try different shards first.
	first := me * n / len(ids)
	for k := 0; k < n && need > 0; k++ {
		i := (first + k) % n
		s.mu.Lock()
		busy := s.shards[i] != nil
		s.mu.Unlock()
		if busy || taken[i] {
			continue
		}
		h, err := s.m.acquire(ctx, context.WithoutCancel(ctx), s.shardName(i))
		if err != nil {
			if !errors.Is(err, store.ErrLeaseHeld) && ctx.Err() == nil {
				s.m.log.Warn("taking shard", zap.Int("shard", i), zap.Error(err))
			}
			continue
		}
		work, stopWork := context.WithCancelCause(h.ctx)
		s.mu.Lock()
		s.shards[i] = &shard{h: h, work: work, stopWork: stopWork}
		s.setLive(i, true)
		s.mu.Unlock()
		context.AfterFunc(h.ctx, func() { s.setLive(i, false); s.poke() })
		need--
		gained = true
		s.m.log.Info("took shard", zap.Int("shard", i), zap.Int64("fence", h.current().Fence))
	}
	if gained {
		s.mu.Lock()
		for ch := range s.subs {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
		s.mu.Unlock()
	}
}

// giveUpAll ends and releases every shard still held. The controllers have
// stopped, so no reconcile is in flight.
func (s *sharder) giveUpAll(ctx context.Context) {
	for i := range s.shards {
		s.mu.Lock()
		sh := s.shards[i]
		s.shards[i] = nil
		s.setLive(i, false)
		s.mu.Unlock()
		if sh == nil {
			continue
		}
		lost := sh.h.lost()
		sh.stopWork(errGivenUp)
		sh.h.end(errGivenUp)
		if !lost {
			s.m.release(ctx, sh.h.current())
		}
	}
}
