package operator

import (
	"context"
	"time"

	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/expectations"
	"github.com/tendhq/tend/informer"
	"github.com/tendhq/tend/store"
)

// memberObject is a decoded Member document.
type memberObject = store.Object[MemberSpec, MemberStatus]

// memberCache is the cluster controller's view of the Member documents:
// the process's shared informer of the kind, decoded. It lags the store, so
// a cluster reconcile that just created or deleted a member may not see it
// yet; expectations (one name per member id) tell the reconcile to wait.
//
// It is also the controller's source of owner keys: each change of a Member
// settles the expectation it meets and queues the key of its cluster.
type memberCache struct {
	members *store.Collection[MemberSpec, MemberStatus]
	inf     *informer.Informer
	exp     *expectations.Names[string, int]
}

func newMemberCache(f *informer.Factory, members *store.Collection[MemberSpec, MemberStatus], exp *expectations.Names[string, int]) (*memberCache, error) {
	inf, err := f.For(members.Kind())
	if err != nil {
		return nil, err
	}
	return &memberCache{members: members, inf: inf, exp: exp}, nil
}

// Synced reports whether the cache has listed the store once. A reconcile
// that read an empty cache before then would think every member gone.
func (c *memberCache) Synced() bool { return c.inf.HasSynced() }

// owned returns the members of the cluster with the given UID, by id. A
// document that does not decode is left out.
func (c *memberCache) owned(clusterUID string) map[int]*memberObject {
	docs, _, _ := c.inf.List(store.ListOptions{OwnerUID: clusterUID})
	out := map[int]*memberObject{}
	for _, d := range docs {
		o, err := c.members.Decode(d.Clone())
		if err != nil {
			continue
		}
		for _, ref := range o.Owners {
			if ref.Controller && ref.Kind == KindCluster && ref.UID == clusterUID {
				out[o.Spec.ID] = o
			}
		}
	}
	return out
}

// Start follows the informer's changes of the members, each document of the
// cache first, recording observed creations and deletions and queueing the
// owners.
func (c *memberCache) Start(ctx context.Context, e controller.Enqueuer) error {
	return c.inf.Handle(ctx, informer.HandlerFunc(func(ev informer.Event) {
		if o, err := c.members.Decode(ev.Document.Clone()); err == nil {
			c.observed(ev.Type, o, e)
		}
	}))
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
