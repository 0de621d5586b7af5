package cascade

import (
	"context"
	"errors"
	"slices"

	"go.uber.org/zap"

	"github.com/tendhq/tend/finalizer"
	"github.com/tendhq/tend/store"
)

// process reads the document d from the store and does what it needs: it
// orphans or deletes the dependents of an owner held by this package's
// finalizers, or collects a document whose owners are gone or waiting.
// Every decision is taken on fresh reads and every write is conditional on
// them, so a stale graph or another collector can only cause a conflict,
// which is retried.
func (r *run) process(ctx context.Context, d ref) error {
	doc, err := r.b.Get(ctx, d.kind, d.key)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
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

// dependents returns the documents of the watched kinds that refer to the
// owner uid, read from the store.
func (r *run) dependents(ctx context.Context, uid string) ([]store.Document, error) {
	var out []store.Document
	for _, k := range r.kinds {
		res, err := r.b.List(ctx, k, store.ListOptions{OwnerUID: uid})
		if err != nil {
			return nil, err
		}
		out = append(out, res.Items...)
	}
	return out, nil
}

// orphan removes the references to owner from its dependents, then the
// orphan finalizer from owner.
func (r *run) orphan(ctx context.Context, owner store.Document) error {
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

// foreground moves the deletion of a foreground-deleted owner on: it asks the
// dependents to be collected and removes the foreground finalizer once no
// dependent blocks the owner. A cycle of foreground deletions waiting on each
// other is broken by unblocking one reference.
func (r *run) foreground(ctx context.Context, owner store.Document) error {
	uid := owner.Meta.UID
	deps, err := r.dependents(ctx, uid)
	if err != nil {
		return err
	}
	var blockers []store.Document
	for _, d := range deps {
		if blocks(&d.Meta, uid) {
			blockers = append(blockers, d)
		}
		if !d.Meta.Terminating() {
			// collect removes the reference if d has another owner, or
			// deletes d.
			r.queue.Add(ref{d.Meta.Kind, d.Meta.Key})
		}
	}
	if len(blockers) == 0 {
		return r.release(ctx, owner, ForegroundFinalizer)
	}
	// A cycle is looked for in the graph first, which costs no reads, and
	// confirmed on fresh reads before anything is written.
	first, ok := r.graph.cycle(ref{owner.Meta.Kind, owner.Meta.Key}, uid)
	if !ok {
		return nil
	}
	i := slices.IndexFunc(blockers, func(b store.Document) bool { return b.Meta.Kind == first.kind && b.Meta.Key == first.key })
	if i < 0 {
		return nil
	}
	b := blockers[i]
	cyclic, err := r.reaches(ctx, b, uid)
	if err != nil || !cyclic {
		return err
	}
	// b waits, through a chain of foreground deletions, for owner, which
	// waits for b: neither could ever go. Let owner stop waiting for b; b is
	// Terminating and goes on its own.
	for i := range b.Meta.Owners {
		if b.Meta.Owners[i].UID == uid {
			b.Meta.Owners[i].BlockOwnerDeletion = false
		}
	}
	if _, err := r.b.UpdateSpec(ctx, b); err != nil {
		return err
	}
	r.metrics.cyclesBroken.Inc()
	r.log.Info("broke a cycle of foreground deletions",
		zap.String("kind", owner.Meta.Kind), zap.String("key", owner.Meta.Key),
		zap.String("dependentKind", b.Meta.Kind), zap.String("dependentKey", b.Meta.Key))
	return nil
}

// reaches reports whether the document target is reachable from d by
// following blocking references from owners held by foreground deletion to
// their dependents: whether d's deletion waits, directly or not, for target.
func (r *run) reaches(ctx context.Context, d store.Document, target string) (bool, error) {
	seen := make(map[string]bool)
	next := []store.Document{d}
	for len(next) > 0 {
		x := next[len(next)-1]
		next = next[:len(next)-1]
		m := &x.Meta
		if m.UID == target {
			return true, nil
		}
		if seen[m.UID] || !waitsForDependents(m) {
			continue
		}
		seen[m.UID] = true
		deps, err := r.dependents(ctx, m.UID)
		if err != nil {
			return false, err
		}
		for _, dd := range deps {
			if blocks(&dd.Meta, m.UID) {
				next = append(next, dd)
			}
		}
	}
	return false, nil
}

// collect handles a live document with owners, following Kubernetes' garbage
// collector. Each owner is read from the store and is either solid (present),
// dangling (missing, or replaced by another document under its key) or
// waiting (held by foreground deletion). With a solid owner, the references
// to dangling and waiting owners are removed and the document stays.
// Otherwise it is deleted: in the foreground if an owner waits and the
// document has dependents itself (so they go first), else under the policy
// its finalizers already select.
func (r *run) collect(ctx context.Context, doc store.Document) error {
	var solid bool
	var drop []string
	var waiting bool
	for _, o := range doc.Meta.Owners {
		owner, err := r.b.Get(ctx, o.Kind, o.Key)
		switch {
		case errors.Is(err, store.ErrNotFound):
			drop = append(drop, o.UID)
		case errors.Is(err, store.ErrUnknownKind):
			// The owner cannot be checked, so it is not proved gone.
			r.log.Warn("owner of a kind the store does not know; keeping the reference",
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
	err := deleteDocument(ctx, r.b, doc, policy)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err == nil {
		r.metrics.deleted.Inc()
		r.log.Debug("deleted a dependent", zap.String("kind", doc.Meta.Kind), zap.String("key", doc.Meta.Key),
			zap.Stringer("policy", policy))
	}
	return err
}

// dropOwners removes the references to the owners uids from doc.
func (r *run) dropOwners(ctx context.Context, doc store.Document, uids []string) error {
	before := len(doc.Meta.Owners)
	doc.Meta.Owners = slices.DeleteFunc(slices.Clone(doc.Meta.Owners), func(o store.OwnerRef) bool {
		return slices.Contains(uids, o.UID)
	})
	removed := before - len(doc.Meta.Owners)
	if removed == 0 {
		return nil
	}
	_, err := r.b.UpdateSpec(ctx, doc)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err == nil {
		r.metrics.refsRemoved.Add(float64(removed))
		r.log.Debug("removed owner references", zap.String("kind", doc.Meta.Kind), zap.String("key", doc.Meta.Key),
			zap.Strings("ownerUIDs", uids))
	}
	return err
}

// release removes the finalizer name from owner, which the store then
// removes unless other finalizers hold it.
func (r *run) release(ctx context.Context, owner store.Document, name string) error {
	if err := finalizer.Remove(ctx, finalizer.NewDocument(r.b, owner), name); err != nil {
		return err
	}
	r.metrics.released.WithLabelValues(name).Inc()
	r.log.Debug("released", zap.String("kind", owner.Meta.Kind), zap.String("key", owner.Meta.Key),
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
