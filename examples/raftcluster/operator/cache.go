package operator

import (
	"context"
	"sync"
	"time"

	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/expectations"
	"github.com/tendhq/tend/store"
)

// memberObject is a decoded Member document.
type memberObject = store.Object[MemberSpec, MemberStatus]

// memberCache is the cluster controller's view of the Member documents,
// fed by a watch: a Lister, in Kubernetes' terms. It lags the store, so a cluster
// reconcile that just created or deleted a member may not see it yet;
// expectations (one name per member id) tell the reconcile to wait.
//
// It is also the controller's source of owner keys: each change of a Member
// queues the key of its cluster.
type memberCache struct {
	members *store.Collection[MemberSpec, MemberStatus]
	exp     *expectations.Names[string, int]
	synced  chan struct{} // closed after the first list

	mu   sync.Mutex // guards objs
	objs map[string]*memberObject
}

func newMemberCache(members *store.Collection[MemberSpec, MemberStatus], exp *expectations.Names[string, int]) *memberCache {
	return &memberCache{members: members, exp: exp, synced: make(chan struct{}), objs: map[string]*memberObject{}}
}

// Synced reports whether the cache has listed the store once. A reconcile
// that read an empty cache before then would think every member gone.
func (c *memberCache) Synced() bool {
	select {
	case <-c.synced:
		return true
	default:
		return false
	}
}

// owned returns the members of the cluster with the given UID, by id.
func (c *memberCache) owned(clusterUID string) map[int]*memberObject {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[int]*memberObject{}
	for _, o := range c.objs {
		for _, ref := range o.Owners {
			if ref.Controller && ref.Kind == KindCluster && ref.UID == clusterUID {
				out[o.Spec.ID] = o
			}
		}
	}
	return out
}

// Start lists the members, then follows their changes, updating the cache,
// recording observed creations and deletions, and queueing the owners. It
// lists again after any watch failure.
func (c *memberCache) Start(ctx context.Context, e controller.Enqueuer) error {
	for ctx.Err() == nil {
		objs, rev, err := c.members.List(ctx, store.ListOptions{})
		if err != nil {
			if !sleep(ctx, 200*time.Millisecond) {
				break
			}
			continue
		}
		c.replace(objs, e)
		w, err := c.members.Watch(ctx, rev)
		if err != nil {
			sleep(ctx, 200*time.Millisecond)
			continue
		}
		for {
			ev, err := w.Next(ctx)
			if err != nil {
				break
			}
			c.apply(ev.Type, ev.Object, e)
		}
		_ = w.Close()
	}
	return nil
}

// replace sets the cache to a fresh list.
func (c *memberCache) replace(objs []*memberObject, e controller.Enqueuer) {
	c.mu.Lock()
	old := c.objs
	c.objs = make(map[string]*memberObject, len(objs))
	for _, o := range objs {
		c.objs[o.Key] = o
	}
	c.mu.Unlock()
	for _, o := range objs {
		c.observed(store.Added, o, e)
	}
	for k, o := range old {
		if _, ok := c.objs[k]; !ok {
			c.observed(store.Deleted, o, e)
		}
	}
	select {
	case <-c.synced:
	default:
		close(c.synced)
	}
}

// apply records one watched change.
func (c *memberCache) apply(t store.EventType, o *memberObject, e controller.Enqueuer) {
	c.mu.Lock()
	if t == store.Deleted {
		delete(c.objs, o.Key)
	} else {
		c.objs[o.Key] = o
	}
	c.mu.Unlock()
	c.observed(t, o, e)
}

// observed settles the expectation the change meets and queues the owner.
func (c *memberCache) observed(t store.EventType, o *memberObject, e controller.Enqueuer) {
	owner := o.Spec.Cluster
	if t == store.Deleted {
		c.exp.DeletionObserved(owner, o.Spec.ID)
	} else {
		c.exp.CreationObserved(owner, o.Spec.ID)
	}
	e.Enqueue(owner, "member "+t.String())
}

// sleep waits d or until ctx ends, and reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
