package shard

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

	"github.com/tendhq/tend/manager/internal/lease"
	"github.com/tendhq/tend/store"
)

// Of returns the shard, in [0, shards), that key belongs to: the FNV-1a
// hash of the key modulo shards. Every replica computes the same shard for a
// key. It returns 0 when shards is not positive.
func Of(key string, shards int) int {
	if shards <= 0 {
		return 0
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	return int(h.Sum64() % uint64(shards))
}

// Config configures a [Sharder].
type Config struct {
	// Leases takes, renews and releases the member and shard leases.
	// Required.
	Leases *lease.Keeper
	// Shards is the number of shards of the key space; positive.
	Shards int
	// Prefix begins the names of the leases: Prefix+"member/"+Identity
	// and Prefix+"shard/"+i.
	Prefix string
	// Identity is this replica's name, as the Keeper holds leases under.
	Identity string
	// Log receives what the Sharder takes, gives up and fails at. Required.
	Log *zap.Logger
	// OnChange, when not nil, is called each time the shards held and not
	// being given up may have changed. It must not block; it may be called
	// with the Sharder's lock held.
	OnChange func()
}

// errShardGivenUp is the cause of a shard context ended because this replica
// gave the shard to another one.
var errShardGivenUp = errors.New("controller: shard given up")

// Sharder holds this replica's shard leases and admits the keys of the
// shards it holds: it is the controller.Gate of the controllers of a Sharded
// manager. Its methods may be called from any goroutine.
type Sharder struct {
	cfg  Config
	live []atomic.Bool // per shard: held and not being given up; read by Owns without the lock; set by setLive
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
	h *lease.Held
	// work is the parent of the shard's reconciles: it ends when the lease
	// is lost or when the shard is given up.
	work     context.Context
	stopWork context.CancelCauseFunc
	inflight int  // reconciles admitted and not done
	leaving  bool // being given up: still renewed, released once inflight is zero
}

// New returns a Sharder configured by cfg. It starts nothing: see
// [Sharder.Run].
func New(cfg Config) *Sharder {
	s := &Sharder{
		cfg:    cfg,
		live:   make([]atomic.Bool, cfg.Shards),
		wake:   make(chan struct{}, 1),
		shards: make([]*shard, cfg.Shards),
		subs:   make(map[chan struct{}]struct{}),
	}
	s.target.Store(-1)
	return s
}

// setLive records whether shard i is held and not being given up, and tells
// OnChange when that changed.
func (s *Sharder) setLive(i int, live bool) {
	if s.live[i].Swap(live) != live && s.cfg.OnChange != nil {
		s.cfg.OnChange()
	}
}

// Owned returns the shards held and not being given up, sorted; nil if
// none.
func (s *Sharder) Owned() []int {
	var out []int
	for i := range s.live {
		if s.live[i].Load() {
			out = append(out, i)
		}
	}
	return out
}

// ShareMissing returns why this replica does not hold its share of the
// shards, as it computed it when it last balanced them, or "" when it does.
func (s *Sharder) ShareMissing() string {
	target := s.target.Load()
	if target < 0 {
		return "the shards have not been balanced yet"
	}
	if n := len(s.Owned()); int64(n) < target {
		return fmt.Sprintf("holds %d of its share of %d shards", n, target)
	}
	return ""
}

func (s *Sharder) shardName(i int) string { return s.cfg.Prefix + "shard/" + strconv.Itoa(i) }

func (s *Sharder) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Owns reports whether key belongs to a shard held and not being given up.
func (s *Sharder) Owns(key string) bool { return s.live[Of(key, len(s.live))].Load() }

// Admit admits a reconcile of key when its shard is held and not being
// given up: the returned context derives from parent, carries the shard
// lease's fence and ends when the shard is lost or given up; done must be
// called when the reconcile ends. It reports false, with nil context and
// done, when the key's shard is not admitted.
func (s *Sharder) Admit(parent context.Context, key string) (context.Context, func(), bool) {
	i := Of(key, len(s.live))
	s.mu.Lock()
	sh := s.shards[i]
	if sh == nil || sh.leaving || sh.work.Err() != nil {
		s.mu.Unlock()
		return nil, nil, false
	}
	sh.inflight++
	s.mu.Unlock()
	ctx, cancel := context.WithCancelCause(s.cfg.Leases.Fenced(parent, sh.h.Current()))
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

// Gained returns a channel that receives when this replica took a shard,
// and a func that stops it receiving.
func (s *Sharder) Gained() (<-chan struct{}, func()) {
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

// Run keeps the shards balanced until stop ends, keeps renewing those it
// holds (each renew period of the Keeper) until life ends, then gives them
// all up and returns.
func (s *Sharder) Run(stop, life context.Context) {
	t := time.NewTicker(s.cfg.Leases.RenewPeriod())
	defer t.Stop()
	var member *store.Lease
	stopped := stop.Done()
	for {
		if stop.Err() == nil {
			if l, err := s.cfg.Leases.Leaser().AcquireLease(life, s.cfg.Prefix+"member/"+s.cfg.Identity, s.cfg.Identity, s.cfg.Leases.Duration()); err == nil {
				member = &l
			} else if life.Err() == nil {
				s.cfg.Log.Warn("announcing membership", zap.Error(err))
			}
		}
		s.round(life, stop.Err() == nil)
		select {
		case <-life.Done():
			s.giveUpAll(life)
			if member != nil {
				s.cfg.Leases.Release(life, *member)
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
func (s *Sharder) round(ctx context.Context, balance bool) {
	for i := range s.shards {
		s.mu.Lock()
		sh := s.shards[i]
		s.mu.Unlock()
		if sh == nil {
			continue
		}
		if !sh.h.Lost() {
			s.cfg.Leases.Keep(ctx, sh.h)
		}
		s.mu.Lock()
		lost, idle := sh.h.Lost(), sh.inflight == 0
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
			s.cfg.Log.Warn("lost shard", zap.Int("shard", i), zap.Error(context.Cause(sh.h.Context())))
		default:
			sh.h.End(errShardGivenUp)
			s.cfg.Leases.Release(ctx, sh.h.Current())
			s.cfg.Log.Info("gave up shard", zap.Int("shard", i))
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
func (s *Sharder) balance(ctx context.Context) {
	members, err := s.cfg.Leases.Leaser().ListLeases(ctx, s.cfg.Prefix+"member/")
	if err != nil {
		if ctx.Err() == nil {
			s.cfg.Log.Warn("listing members", zap.Error(err))
		}
		return
	}
	ids := make([]string, 0, len(members)+1)
	for _, l := range members {
		ids = append(ids, l.Holder)
	}
	if !slices.Contains(ids, s.cfg.Identity) {
		ids = append(ids, s.cfg.Identity)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	me := slices.Index(ids, s.cfg.Identity)
	n := len(s.shards)
	target := n / len(ids)
	if me < n%len(ids) {
		target++
	}
	s.target.Store(int64(target))

	s.mu.Lock()
	var mine []int
	for i, sh := range s.shards {
		if sh != nil && !sh.leaving && !sh.h.Lost() {
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

	leases, err := s.cfg.Leases.Leaser().ListLeases(ctx, s.cfg.Prefix+"shard/")
	if err != nil {
		if ctx.Err() == nil {
			s.cfg.Log.Warn("listing shards", zap.Error(err))
		}
		return
	}
	taken := make([]bool, n)
	for _, l := range leases {
		i, err := strconv.Atoi(strings.TrimPrefix(l.Name, s.cfg.Prefix+"shard/"))
		if err == nil && i >= 0 && i < n && l.Holder != s.cfg.Identity {
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
		h, err := s.cfg.Leases.Acquire(ctx, context.WithoutCancel(ctx), s.shardName(i))
		if err != nil {
			if !errors.Is(err, store.ErrLeaseHeld) && ctx.Err() == nil {
				s.cfg.Log.Warn("taking shard", zap.Int("shard", i), zap.Error(err))
			}
			continue
		}
		work, stopWork := context.WithCancelCause(h.Context())
		s.mu.Lock()
		s.shards[i] = &shard{h: h, work: work, stopWork: stopWork}
		s.setLive(i, true)
		s.mu.Unlock()
		context.AfterFunc(h.Context(), func() { s.setLive(i, false); s.poke() })
		need--
		gained = true
		s.cfg.Log.Info("took shard", zap.Int("shard", i), zap.Int64("fence", h.Current().Fence))
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
func (s *Sharder) giveUpAll(ctx context.Context) {
	for i := range s.shards {
		s.mu.Lock()
		sh := s.shards[i]
		s.shards[i] = nil
		s.setLive(i, false)
		s.mu.Unlock()
		if sh == nil {
			continue
		}
		lost := sh.h.Lost()
		sh.stopWork(lease.ErrGivenUp)
		sh.h.End(lease.ErrGivenUp)
		if !lost {
			s.cfg.Leases.Release(ctx, sh.h.Current())
		}
	}
}
