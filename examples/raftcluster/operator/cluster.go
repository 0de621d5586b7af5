package operator

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"time"

	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/expectations"
	"github.com/tendhq/tend/store"
)

// clusterReconciler turns a Cluster's replicas into Raft members, one
// recorded step at a time.
type clusterReconciler struct {
	clusters *store.Collection[ClusterSpec, ClusterStatus]
	members  *store.Collection[MemberSpec, MemberStatus]
	cache    *memberCache
	exp      *expectations.Names[string, int]
	ms       Membership
	config   MemberConfig
	dataDir  string
	poll     time.Duration
}

// Reconcile runs the cluster's recorded plan if it has one, and plans the
// next step otherwise. A reconcile either writes the plan (before acting),
// acts on it idempotently, or clears it once the world shows it done.
func (r *clusterReconciler) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	wait := controller.Result{RequeueAfter: r.poll}
	if !r.cache.Synced() {
		return wait, nil
	}
	c, err := r.clusters.Get(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		r.exp.DeleteExpectations(key)
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	// The cache may not show the members this controller created or
	// deleted a moment ago: acting on it now would create them again.
	if !r.exp.SatisfiedExpectations(key) {
		return wait, nil
	}
	docs := r.cache.owned(c.UID)
	if c.Status.Plan == nil {
		if c, err = r.plan(ctx, c, docs); err != nil || c == nil {
			return controller.Result{}, err
		}
	}
	done, err := r.step(ctx, c, docs)
	if err != nil {
		return controller.Result{}, err
	}
	if !done {
		return wait, nil
	}
	// The step is done: clear the plan. The write queues the cluster again,
	// and the next reconcile plans the next step.
	if p := c.Status.Plan; p.Op == Remove {
		c.Status.Members = slices.DeleteFunc(c.Status.Members, func(m MemberRef) bool { return m.ID == p.Members[0].ID })
	}
	c.Status.Plan = nil
	_, err = r.clusters.UpdateStatus(ctx, c)
	return controller.Result{}, err
}

// plan decides the next step and records it in the status before anything
// acts on it. It returns the cluster as written, or nil when there is
// nothing to do.
func (r *clusterReconciler) plan(ctx context.Context, c *store.Object[ClusterSpec, ClusterStatus], docs map[int]*memberObject) (*store.Object[ClusterSpec, ClusterStatus], error) {
	o := Observed{Replicas: c.Spec.Replicas, NextID: c.Status.NextID, Members: c.Status.IDs()}
	for id, d := range docs {
		if !d.Terminating() {
			o.Documents = append(o.Documents, id)
		}
	}
	if len(o.Members) > max(o.Replicas, 1) {
		o.Leader = r.leader(ctx, c)
	}
	d, ok := Next(o)
	if !ok {
		// Settled. A member configuration deleted or edited by hand is
		// written again, so that a member starting later finds it.
		if len(c.Status.Members) > 0 {
			if err := r.config.Update(ctx, clusterRef(c), InitialCluster(c.Status.Members)); err != nil {
				return nil, err
			}
		}
		if c.Status.Phase != Running || c.Status.ObservedGeneration != c.Generation {
			c.Status.Phase, c.Status.ObservedGeneration = Running, c.Generation
			_, err := r.clusters.UpdateStatus(ctx, c)
			return nil, err
		}
		return nil, nil
	}
	p := &Plan{Op: d.Op}
	// Addresses in use or already given in this plan: a port the system
	// hands out twice in a row must not go to two members.
	taken := map[string]bool{}
	for _, m := range c.Status.Members {
		taken[m.PeerURL], taken[m.ClientURL] = true, true
	}
	for _, d := range docs {
		taken[d.Spec.PeerURL], taken[d.Spec.ClientURL] = true, true
	}
	for _, id := range d.IDs {
		ref, err := r.ref(c, docs, d.Op, id, taken)
		if err != nil {
			return nil, err
		}
		p.Members = append(p.Members, ref)
	}
	c.Status.Plan, c.Status.NextID = p, d.NextID
	switch d.Op {
	case Bootstrap:
		c.Status.Phase = Initializing
		c.Status.Members = slices.Clone(p.Members)
	case Add:
		c.Status.Phase = ScalingOut
		c.Status.Members = append(c.Status.Members, p.Members...)
	case Remove:
		c.Status.Phase = ScalingIn
	}
	return r.clusters.UpdateStatus(ctx, c)
}

// ref names member id for a plan: a new member gets fresh loopback ports,
// none of them in taken (which it extends); a leaving one keeps those it has.
func (r *clusterReconciler) ref(c *store.Object[ClusterSpec, ClusterStatus], docs map[int]*memberObject, op Op, id int, taken map[string]bool) (MemberRef, error) {
	if op != Remove {
		peer, err := freeURL(taken)
		if err != nil {
			return MemberRef{}, err
		}
		client, err := freeURL(taken)
		if err != nil {
			return MemberRef{}, err
		}
		return MemberRef{ID: id, PeerURL: peer, ClientURL: client}, nil
	}
	if i := slices.IndexFunc(c.Status.Members, func(m MemberRef) bool { return m.ID == id }); i >= 0 {
		return c.Status.Members[i], nil
	}
	d := docs[id]
	return MemberRef{ID: id, PeerURL: d.Spec.PeerURL, ClientURL: d.Spec.ClientURL}, nil
}

// leader returns the operator's id of the Raft leader, 0 when unknown.
func (r *clusterReconciler) leader(ctx context.Context, c *store.Object[ClusterSpec, ClusterStatus]) int {
	v, err := r.ms.View(ctx, c.Status.Endpoints())
	if err != nil {
		return 0
	}
	for _, m := range c.Status.Members {
		if rm, ok := v.ByPeerURL(m.PeerURL); ok && rm.ID == v.Leader {
			return m.ID
		}
	}
	return 0
}

// step acts on the recorded plan. Every action is idempotent (a member
// already added, a document already created or already gone, a member
// configuration already written is success), so a step interrupted anywhere
// is simply run again. It reports whether the world shows the step done.
//
// The member configuration is written first, before the membership
// changes: created at bootstrap, updated to the new membership before
// MemberAdd, and without the leaving member as soon as it is chosen.
func (r *clusterReconciler) step(ctx context.Context, c *store.Object[ClusterSpec, ClusterStatus], docs map[int]*memberObject) (bool, error) {
	p := c.Status.Plan
	eps := c.Status.Endpoints()
	initial := InitialCluster(c.Status.Configured())
	switch p.Op {
	case Bootstrap:
		if err := r.config.Create(ctx, clusterRef(c), initial); err != nil {
			return false, err
		}
		for _, m := range p.Members {
			if err := r.ensureMember(ctx, c, docs, m, "new"); err != nil {
				return false, err
			}
		}
		v, err := r.ms.View(ctx, eps)
		if err != nil {
			return false, nil // no quorum yet: the members are starting
		}
		for _, m := range p.Members {
			if rm, ok := v.ByPeerURL(m.PeerURL); !ok || rm.Name == "" {
				return false, nil
			}
		}
		return true, nil

	case Add:
		// Join: MemberAdd first, then start the member with the membership
		// that includes it. The other order would start a member the
		// cluster refuses to talk to.
		m := p.Members[0]
		if err := r.config.Update(ctx, clusterRef(c), initial); err != nil {
			return false, err
		}
		v, err := r.ms.View(ctx, eps)
		if err != nil {
			return false, err
		}
		rm, added := v.ByPeerURL(m.PeerURL)
		if !added {
			if err := r.ms.Add(ctx, eps, m.PeerURL); err != nil {
				return false, err
			}
		}
		if err := r.ensureMember(ctx, c, docs, m, "existing"); err != nil {
			return false, err
		}
		return added && rm.Name != "", nil

	case Remove:
		// Leave: stop the member (delete its document; its finalizer stops
		// the process), then MemberRemove. A two-member cluster cannot commit
		// a removal with one member stopped, so there the order is reversed.
		m := p.Members[0]
		if err := r.config.Update(ctx, clusterRef(c), initial); err != nil {
			return false, err
		}
		if len(c.Status.Members) <= 2 {
			if err := r.leave(ctx, eps, m); err != nil {
				return false, err
			}
		}
		if d, ok := docs[m.ID]; ok {
			if !d.Terminating() {
				r.exp.ExpectDeletions(c.Key, m.ID)
				err := r.members.Delete(ctx, d.Key, store.DeleteOptions{UID: d.UID})
				if err != nil && !errors.Is(err, store.ErrNotFound) {
					r.exp.DeletionObserved(c.Key, m.ID)
					return false, err
				}
			}
			return false, nil // wait until its process is stopped and the document gone
		}
		return true, r.leave(ctx, eps, m)
	}
	return false, controller.Terminal(fmt.Errorf("operator: unknown plan op %q", p.Op))
}

// leave removes m from the Raft membership unless it is already out.
func (r *clusterReconciler) leave(ctx context.Context, eps []string, m MemberRef) error {
	v, err := r.ms.View(ctx, eps)
	if err != nil {
		return err
	}
	if rm, ok := v.ByPeerURL(m.PeerURL); ok {
		return r.ms.Remove(ctx, eps, rm.ID)
	}
	return nil
}

// ensureMember creates the Member document of m unless it exists, expecting
// to observe its creation by id. The member starts with cluster state state
// and the initial cluster of the member configuration.
func (r *clusterReconciler) ensureMember(ctx context.Context, c *store.Object[ClusterSpec, ClusterStatus], docs map[int]*memberObject, m MemberRef, state string) error {
	if _, ok := docs[m.ID]; ok {
		return nil
	}
	obj := &memberObject{
		Meta: store.Meta{
			Key:        MemberKey(c.Key, m.ID),
			Finalizers: []string{MemberFinalizer},
			Owners:     []store.OwnerRef{{Kind: KindCluster, Key: c.Key, UID: c.UID, Controller: true, BlockOwnerDeletion: true}},
		},
		Spec: MemberSpec{
			Cluster:      c.Key,
			ID:           m.ID,
			Name:         m.Name(),
			DataDir:      filepath.Join(r.dataDir, filepath.FromSlash(c.Key), m.Name()),
			PeerURL:      m.PeerURL,
			ClientURL:    m.ClientURL,
			ClusterState: state,
			Token:        c.UID,
		},
	}
	r.exp.ExpectCreations(c.Key, m.ID)
	_, err := r.members.Create(ctx, obj)
	switch {
	case errors.Is(err, store.ErrAlreadyExists):
		// Created by an earlier reconcile; the store has it, so there is
		// nothing to wait for.
		r.exp.CreationObserved(c.Key, m.ID)
		return nil
	case err != nil:
		r.exp.CreationObserved(c.Key, m.ID)
		return err
	}
	return nil
}

// clusterRef names c for its member configuration.
func clusterRef(c *store.Object[ClusterSpec, ClusterStatus]) ClusterRef {
	return ClusterRef{Key: c.Key, UID: c.UID}
}

// freeURL returns an http URL of a loopback port that was free a moment ago
// and is not in taken, and adds it to taken.
func freeURL(taken map[string]bool) (string, error) {
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		u := "http://" + l.Addr().String()
		l.Close()
		if !taken[u] {
			taken[u] = true
			return u, nil
		}
	}
}
