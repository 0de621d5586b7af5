package cascade

import (
	"context"
	"errors"
	"slices"

	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/finalizer"
	"github.com/tendhq/tend/store"
)

// process does what the document doc needs: it orphans or deletes the
// dependents of an owner held by this package's finalizers, or collects a
// document whose owners are gone or waiting. Every write is decided on
// fresh reads of the store (see pass) and is conditional on them, so a
// lagging event or another replica can only cause a conflict, which is
// retried.
func (r *pass) process(ctx context.Context, doc store.Document) error {
	m := &doc.Meta
	switch {
	case m.Terminating() && m.HasFinalizer(OrphanFinalizer):
		return r.orphan(ctx, doc)
	case m.Terminating() && m.HasFinalizer(ForegroundFinalizer):
		return r.foreground(ctx, doc)
	case m.Terminating() || len(m.Owners) == 0:
		return nil
	}
	return r.collect(ctx, doc)
}

// gone collects the live dependents of the owner uid, which the store no
// longer holds.
func (r *pass) gone(ctx context.Context, uid string) error {
	deps, err := r.dependents(ctx, uid)
	if err != nil {
		return err
	}
	_, err = r.collectAll(ctx, deps)
	return err
}

// collectAll collects the live documents among deps, up to r.workers at
// once, and reports whether there was any. It returns the first error, once
// every collection has ended.
func (r *pass) collectAll(ctx context.Context, deps []store.Document) (bool, error) {
	var g errgroup.Group
	g.SetLimit(r.workers)
	live := false
	for _, d := range deps {
		if !d.Meta.Terminating() {
			live = true
			g.Go(func() error { return r.collect(ctx, d) })
		}
	}
	return live, g.Wait()
}

// dependents returns the documents of the watched kinds that refer to the
// owner uid.
func (r *pass) dependents(ctx context.Context, uid string) ([]store.Document, error) {
	var out []store.Document
	for _, k := range r.kinds {
		items, err := r.list(ctx, k, store.ListOptions{OwnerUID: uid})
		if err != nil {
			return nil, err
		}
		out = append(out, items...)
	}
	return out, nil
}

// orphan removes the references to owner from its dependents, then the
// orphan finalizer from owner.
func (r *pass) orphan(ctx context.Context, owner store.Document) error {
	deps, err := r.dependents(ctx, owner.Meta.UID)
	if err != nil {
		return err
	}
	for _, d := range deps {
		if d.Meta.UID == owner.Meta.UID {
			continue // a self-reference goes with the owner
		}
		if err := r.dropOwners(ctx, d, []string{owner.Meta.UID}); err != nil {
			return err
		}
	}
	return r.release(ctx, owner, OrphanFinalizer)
}

// foreground moves the deletion of a foreground-deleted owner on: it
// collects the live dependents and removes the foreground finalizer once no
// dependent blocks the owner. A cycle of foreground deletions waiting on
// each other is broken by unblocking one reference.
func (r *pass) foreground(ctx context.Context, owner store.Document) error {
	uid := owner.Meta.UID
	deps, err := r.dependents(ctx, uid)
	if err != nil {
		return err
	}
	// collect removes the reference of each live dependent if it has
	// another owner, or deletes it.
	collected, err := r.collectAll(ctx, deps)
	if err != nil {
		return err
	}
	if collected {
		// Read again what the collection left: a dependent deleted
		// outright or whose reference was removed no longer blocks, and
		// no later change of it would name this owner.
		if deps, err = r.dependents(ctx, uid); err != nil {
			return err
		}
	}
	var blockers []store.Document
	for _, d := range deps {
		if blocks(&d.Meta, uid) {
			blockers = append(blockers, d)
		}
	}
	if len(blockers) == 0 {
		return r.release(ctx, owner, ForegroundFinalizer)
	}
	b, ok, err := r.cycle(ctx, owner, blockers)
	if err != nil || !ok {
		return err
	}
	// b waits, through a chain of foreground deletions, for owner, which
	// waits for b: neither could ever go. Let owner stop waiting for b; b is
	// Terminating and goes on its own.
	if err := r.mayWrite(); err != nil {
		return err
	}
	b.Meta.Owners = slices.Clone(b.Meta.Owners)
	for i := range b.Meta.Owners {
		if b.Meta.Owners[i].UID == uid {
			b.Meta.Owners[i].BlockOwnerDeletion = false
		}
	}
	if _, err := r.b.UpdateSpec(ctx, b); err != nil {
		return err
	}
	r.metrics.cyclesBroken.Inc()
	controller.LoggerFrom(ctx).Info("broke a cycle of foreground deletions",
		zap.String("kind", owner.Meta.Kind), zap.String("key", owner.Meta.Key),
		zap.String("dependentKind", b.Meta.Kind), zap.String("dependentKey", b.Meta.Key))
	return nil
}

// cycle returns the blocker of owner that waits, through a chain of
// foreground deletions, for owner itself. It walks up from owner, on fresh
// reads, along blocking references to owners that wait for their
// dependents: each document it reaches waits for the one it came from, so
// reaching one of owner's blockers closes a cycle. The walk reads only
// owners, so a cascade down a tree costs no reads here.
func (r *pass) cycle(ctx context.Context, owner store.Document, blockers []store.Document) (store.Document, bool, error) {
	seen := make(map[string]bool)
	next := []store.Document{owner}
	for len(next) > 0 {
		x := next[len(next)-1]
		next = next[:len(next)-1]
		m := &x.Meta
		if seen[m.UID] || !waitsForDependents(m) {
			continue
		}
		seen[m.UID] = true
		if i := slices.IndexFunc(blockers, func(b store.Document) bool { return b.Meta.UID == m.UID }); i >= 0 {
			return blockers[i], true, nil
		}
		for _, o := range m.Owners {
			if !o.BlockOwnerDeletion || seen[o.UID] {
				continue
			}
			up, err := r.get(ctx, o.Kind, o.Key)
			switch {
			case errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrUnknownKind):
				continue
			case err != nil:
				return store.Document{}, false, err
			case up.Meta.UID == o.UID:
				next = append(next, up)
			}
		}
	}
	return store.Document{}, false, nil
}

// collect handles a live document with owners, following Kubernetes' garbage
// collector. Each owner is read and is either solid (present),
// dangling (missing, or replaced by another document under its key) or
// waiting (held by foreground deletion). With a solid owner, the references
// to dangling and waiting owners are removed and the document stays.
// Otherwise it is deleted: in the foreground if an owner waits and the
// document has dependents itself (so they go first), else under the policy
// its finalizers already select.
func (r *pass) collect(ctx context.Context, doc store.Document) error {
	var solid bool
	var drop []string
	var waiting bool
	for _, o := range doc.Meta.Owners {
		owner, err := r.get(ctx, o.Kind, o.Key)
		switch {
		case errors.Is(err, store.ErrNotFound):
			drop = append(drop, o.UID)
		case errors.Is(err, store.ErrUnknownKind):
			// The owner cannot be checked, so it is not proved gone.
			controller.LoggerFrom(ctx).Warn("owner of a kind the store does not know; keeping the reference",
				zap.String("kind", doc.Meta.Kind), zap.String("key", doc.Meta.Key),
				zap.String("ownerKind", o.Kind), zap.String("ownerKey", o.Key))
			solid = true
		case err != nil:
			return err
		case owner.Meta.UID != o.UID:
			drop = append(drop, o.UID)
		case waitsForDependents(&owner.Meta):
			drop = append(drop, o.UID)
			waiting = true
		default:
			solid = true
		}
	}
	switch {
	case solid && len(drop) == 0:
		return nil
	case solid:
		return r.dropOwners(ctx, doc, drop)
	}
	policy := policyOf(&doc.Meta)
	if waiting {
		deps, err := r.dependents(ctx, doc.Meta.UID)
		if err != nil {
			return err
		}
		if len(deps) > 0 {
			policy = Foreground
		}
	}
	if err := r.mayWrite(); err != nil {
		return err
	}
	err := deleteDocument(ctx, r.b, doc, policy)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err == nil {
		r.metrics.deleted.Inc()
		controller.LoggerFrom(ctx).Debug("deleted a dependent", zap.String("kind", doc.Meta.Kind), zap.String("key", doc.Meta.Key),
			zap.Stringer("policy", policy))
	}
	return err
}

// dropOwners removes the references to the owners uids from doc.
func (r *pass) dropOwners(ctx context.Context, doc store.Document, uids []string) error {
	before := len(doc.Meta.Owners)
	doc.Meta.Owners = slices.DeleteFunc(slices.Clone(doc.Meta.Owners), func(o store.OwnerRef) bool {
		return slices.Contains(uids, o.UID)
	})
	removed := before - len(doc.Meta.Owners)
	if removed == 0 {
		return nil
	}
	if err := r.mayWrite(); err != nil {
		return err
	}
	_, err := r.b.UpdateSpec(ctx, doc)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err == nil {
		r.metrics.refsRemoved.Add(float64(removed))
		controller.LoggerFrom(ctx).Debug("removed owner references", zap.String("kind", doc.Meta.Kind), zap.String("key", doc.Meta.Key),
			zap.Strings("ownerUIDs", uids))
	}
	return err
}

// release removes the finalizer name from owner, which the store then
// removes unless other finalizers hold it.
func (r *pass) release(ctx context.Context, owner store.Document, name string) error {
	if err := r.mayWrite(); err != nil {
		return err
	}
	if err := finalizer.Remove(ctx, finalizer.NewDocument(r.b, owner), name); err != nil {
		return err
	}
	r.metrics.released.WithLabelValues(name).Inc()
	controller.LoggerFrom(ctx).Debug("released", zap.String("kind", owner.Meta.Kind), zap.String("key", owner.Meta.Key),
		zap.String("finalizer", name))
	return nil
}

// waitsForDependents reports whether m is held by foreground deletion: its
// dependents are deleted before it. (With both finalizers, orphaning comes
// first.)
func waitsForDependents(m *store.Meta) bool {
	return m.Terminating() && m.HasFinalizer(ForegroundFinalizer) && !m.HasFinalizer(OrphanFinalizer)
}

// blocks reports whether m refers to the owner uid with BlockOwnerDeletion.
func blocks(m *store.Meta, uid string) bool {
	for _, o := range m.Owners {
		if o.UID == uid && o.BlockOwnerDeletion {
			return true
		}
	}
	return false
}
