package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/tendhq/tend/internal/wait"
	"github.com/tendhq/tend/operator"
	"github.com/tendhq/tend/store"
)

// registrationAttempts is how many times recording a registration reads
// the stored one again after a write conflicted with another replica's.
const registrationAttempts = 3

// registrant is a reconciler that drives a machine: its [Manager] records
// its registration and holds its presence lease (see [Manager.Run]).
type registrant interface {
	Registration() operator.Registration
	backend() store.Backend
}

// Registration returns what the driver's [Manager] records of it, in a
// document of kind operator.MachinesKind keyed by the driver's kind: the
// kind, its machine as a statemachine.Descriptor, and the finalizer the
// driver owns (none when its machine has no final pair). The Manager adds
// Presence, Replica and RecordedAt.
func (d *Driver[Spec, Status]) Registration() operator.Registration { return d.impl.registration() }

func (d *Driver[Spec, Status]) backend() store.Backend { return d.coll.Backend() }

func (d *phaseDriver[Spec, Status, S, P]) registration() operator.Registration {
	r := operator.Registration{Kind: d.c.Kind(), Machine: d.m.Descriptor()}
	if d.final != nil {
		r.Finalizers = []string{d.finalizer}
	}
	return r
}

// PresencePrefix returns the prefix of the presence leases of the
// controllers of kind under a [Manager] whose lease names begin with
// leasePrefix (ManagerConfig.LeasePrefix): each replica running a driver of
// kind holds "<leasePrefix>presence/<kind>/<identity>" while it runs.
func PresencePrefix(leasePrefix, kind string) string {
	return leasePrefix + "presence/" + kind + "/"
}

// record writes r in b unless b holds it already, as far as it describes
// the machine (the kind, the machine, the finalizers and the presence
// prefix: not who recorded it, nor when). It reports whether it wrote.
func record(ctx context.Context, b store.Backend, r operator.Registration) (bool, error) {
	spec, err := json.Marshal(r)
	if err != nil {
		return false, err
	}
	want := machinePart(r)
	for attempt := 1; ; attempt++ {
		doc, err := b.Get(ctx, operator.MachinesKind, r.Kind)
		switch {
		case errors.Is(err, store.ErrNotFound):
			_, err = b.Create(ctx, store.Document{Meta: store.Meta{Kind: operator.MachinesKind, Key: r.Kind}, Spec: spec})
		case err != nil:
			return false, err
		default:
			var stored operator.Registration
			if json.Unmarshal(doc.Spec, &stored) == nil && bytes.Equal(machinePart(stored), want) {
				return false, nil
			}
			doc.Spec = spec
			_, err = b.UpdateSpec(ctx, doc)
		}
		if (errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrAlreadyExists)) && attempt < registrationAttempts {
			continue
		}
		return err == nil, err
	}
}

// machinePart returns the part of r that says what the machine is, encoded.
func machinePart(r operator.Registration) []byte {
	r.Replica, r.RecordedAt = "", time.Time{}
	out, _ := json.Marshal(r)
	return out
}

// present records the registration of the driver reg and holds its
// presence lease, in the driver's own store (where operators read both),
// until ctx ends; it then releases the lease. A store not configured with
// operator.MachinesKind records nothing, which is logged once.
func (m *Manager) present(ctx context.Context, reg registrant) {
	b := reg.backend()
	r := reg.Registration()
	r.Presence = PresencePrefix(m.prefix, r.Kind)
	r.Replica = m.identity
	log := m.log.With(zap.String("kind", r.Kind))
	name := r.Presence + m.identity
	recorded := false
	var lease *store.Lease
	for {
		if !recorded {
			r.RecordedAt = time.Now()
			wrote, err := record(ctx, b, r)
			switch {
			case errors.Is(err, store.ErrUnknownKind):
				log.Debug("machine not recorded: the store has no kind " + operator.MachinesKind)
				recorded = true
			case err != nil:
				if ctx.Err() == nil {
					log.Warn("recording the machine", zap.Error(err))
				}
			default:
				recorded = true
				if wrote {
					log.Info("machine recorded", zap.String("machine", r.Machine.Name))
				}
			}
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
