package manager

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/tendhq/tend/internal/wait"
	"github.com/tendhq/tend/registry"
	"github.com/tendhq/tend/store"
)

// registrant is a reconciler that drives a machine: its [Manager] checks
// its machine, records its registration and holds its presence lease (see
// [Manager.Run]).
type registrant interface {
	Registration() registry.Entry
	Store() store.Backend
	CheckCarried(ctx context.Context) error
}

// present checks the machine of the driver reg against the one recorded
// for its kind and the documents its store holds (see admit), then lets
// the kind's controllers run through g, or holds them; it records the
// registration and holds the presence lease, in the driver's own store
// (where operators read both), until ctx ends or a newer machine is
// registered for the kind, when the kind stands down. It then releases
// the lease. A store not configured with registry.Kind records nothing,
// which is logged once.
func (m *Manager) present(ctx context.Context, reg registrant, g *kindGate) {
	b := reg.Store()
	r := reg.Registration()
	r.Presence = registry.PresencePrefix(m.prefix, r.Kind)
	r.Replica = m.identity
	log := m.log.With(zap.String("kind", r.Kind))
	name := r.Presence + m.identity
	for {
		err := m.admit(ctx, reg, r, log)
		var held *heldError
		if errors.As(err, &held) {
			log.Error("the kind's controllers do not run", zap.Error(held.err))
			g.hold(held.err)
			return
		}
		if err == nil {
			break
		}
		if ctx.Err() == nil {
			log.Warn("checking the machine", zap.Error(err))
		}
		if wait.Sleep(ctx, m.renew) != nil {
			return
		}
	}
	recorded := false
	var (
		lease *store.Lease
		seen  int64 // the revision of the registry entry last decoded
	)
	for first := true; ; first = false {
		switch {
		case !recorded:
			r.RecordedAt = time.Now()
			wrote, err := registry.Put(ctx, b, r)
			switch {
			case errors.Is(err, registry.ErrSuperseded):
				if first {
					log.Error("the kind's controllers do not run", zap.Error(err))
					g.hold(err)
				} else {
					log.Warn("standing down: a newer machine is registered", zap.Error(err))
					g.standDown(err)
				}
			case errors.Is(err, store.ErrUnknownKind):
				log.Debug("machine not recorded: the store has no kind " + registry.Kind)
				recorded = true
			case err != nil:
				if ctx.Err() == nil {
					log.Warn("recording the machine", zap.Error(err))
				}
			default:
				recorded = true
				if wrote {
					log.Info("machine recorded", zap.String("machine", r.Machine.Name), zap.Int("version", r.Machine.Version))
				}
			}
		case !first:
			if newer, ok := m.newerEntry(ctx, b, r, &seen); ok {
				err := superseded(newer, r)
				log.Warn("standing down: a newer machine is registered", zap.Error(err))
				g.standDown(err)
			}
		}
		if first && g.down.Err() == nil {
			g.run()
		}
		if g.down.Err() != nil {
			break
		}
		lease = m.keepPresence(ctx, b, name, lease, log)
		if wait.Sleep(ctx, m.renew) != nil {
			break
		}
	}
	if lease != nil {
		release, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.renew)
		defer cancel()
		if err := b.ReleaseLease(release, *lease); err != nil {
			log.Warn("releasing the presence lease", zap.String("lease", name), zap.Error(err))
		}
	}
}

// newerEntry reads the registry entry of r's kind and reports whether it
// records a newer machine than r's: another digest, of a version at least
// r's. It decodes the entry only when its revision moved past *seen (a
// replica looks once a renew period, for as long as it runs).
func (m *Manager) newerEntry(ctx context.Context, b store.Backend, r registry.Entry, seen *int64) (registry.Entry, bool) {
	d, err := b.Get(ctx, registry.Kind, r.Kind)
	if err != nil || d.Meta.Revision == *seen {
		return registry.Entry{}, false
	}
	*seen = d.Meta.Revision
	newer, err := registry.Decode(d)
	return newer, err == nil && newer.Digest != r.Digest && newer.Machine.Version >= r.Machine.Version
}

// keepPresence takes the presence lease called name, or renews l, and
// returns the lease held (nil when none is).
func (m *Manager) keepPresence(ctx context.Context, b store.Backend, name string, l *store.Lease, log *zap.Logger) *store.Lease {
	var (
		next store.Lease
		err  error
	)
	if l != nil {
		if next, err = b.RenewLease(ctx, *l); err == nil {
			return &next
		}
		if !errors.Is(err, store.ErrLeaseLost) {
			if ctx.Err() == nil {
				log.Warn("renewing the presence lease", zap.String("lease", name), zap.Error(err))
			}
			return l
		}
	}
	if next, err = b.AcquireLease(ctx, name, m.identity, m.ttl); err != nil {
		if ctx.Err() == nil {
			log.Warn("taking the presence lease", zap.String("lease", name), zap.Error(err))
		}
		return nil
	}
	return &next
}
