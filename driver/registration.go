package driver

import (
	"github.com/tendhq/tend/registry"
	"github.com/tendhq/tend/store"
)

// Registration returns what a Manager (package manager) records of the
// driver in the store's registry (package registry): the kind, its machine
// as a statemachine.Descriptor with its digest, and the finalizer the driver owns (none when
// its machine has no final pair). The Manager adds Presence, Replica and
// RecordedAt.
func (d *Driver[Spec, Status]) Registration() registry.Entry { return d.impl.registration() }

// Store returns the store the driver's documents live in, where its
// registration is recorded.
func (d *Driver[Spec, Status]) Store() store.Backend { return d.coll.Backend() }

func (d *phaseDriver[Spec, Status, S, P]) registration() registry.Entry {
	r := registry.Entry{Kind: d.c.Kind(), Machine: d.m.Descriptor(), Digest: d.m.Digest()}
	if d.final != nil {
		r.Finalizers = []string{d.finalizer}
	}
	return r
}
