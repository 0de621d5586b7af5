package operator

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/tendhq/tend/store"
)

// ErrNoMemberConfig is returned, wrapped, by [MemberConfig.InitialCluster]
// when no configuration is recorded for the cluster asked about: none at
// all, or only one left by an earlier cluster of the same key.
var ErrNoMemberConfig = errors.New("operator: no member configuration")

// ClusterRef names the cluster a member configuration belongs to: the key of
// its Cluster document and that document's uid, which tells it from an
// earlier cluster of the same key.
type ClusterRef struct {
	Key string
	UID string
}

// MemberConfig keeps each cluster's member configuration where its members
// read it, as a Kubernetes operator for a Raft store keeps it in a
// ConfigMap: the initial cluster (etcd's --initial-cluster, the name=peerURL
// pairs of the membership) a member is started with.
//
// The cluster controller writes it before the membership changes: Create at
// bootstrap, Update to the new membership before MemberAdd and right after it
// chooses the member to remove. The member controller reads it with
// InitialCluster each time it starts a member's process. etcd reads the
// initial cluster only when the member's data directory is empty, so it
// matters to a member starting for the first time, or again without its
// data.
//
// Implementations: [DocumentMemberConfig] (a document in any store, such as
// the memory or PostgreSQL backend) and, on Kubernetes, a ConfigMap named
// after the cluster (package
// github.com/tendhq/tend/examples/raftcluster/configmap). Every method is
// idempotent and safe for concurrent use.
type MemberConfig interface {
	// Create records the first membership of cluster c. A configuration
	// already recorded for c is success and is left as it is; one left by
	// an earlier cluster of the same key is replaced.
	Create(ctx context.Context, c ClusterRef, initialCluster string) error
	// Update records the membership c is changing to, creating the
	// configuration if it is missing (deleted by hand, say). Writing what
	// is recorded already changes nothing.
	Update(ctx context.Context, c ClusterRef, initialCluster string) error
	// InitialCluster returns the initial cluster recorded for c, or an
	// error matching ErrNoMemberConfig when there is none for c.
	InitialCluster(ctx context.Context, c ClusterRef) (string, error)
}

// KindMemberConfig is the kind of the documents a [DocumentMemberConfig]
// keeps.
const KindMemberConfig = "MemberConfig"

// MemberConfigSpec is the content of a member configuration document.
type MemberConfigSpec struct {
	// InitialCluster is etcd's --initial-cluster for the cluster's members.
	InitialCluster string `json:"initialCluster"`
}

// DocumentMemberConfig is the [MemberConfig] of stores without ConfigMaps:
// one [KindMemberConfig] document per cluster, under the cluster's key,
// owned by the Cluster document (controlling owner reference) so that
// cascading deletion removes it with its cluster. Create it with
// [NewDocumentMemberConfig].
type DocumentMemberConfig struct {
	docs *store.Collection[MemberConfigSpec, struct{}]
}

var _ MemberConfig = (*DocumentMemberConfig)(nil)

// NewDocumentMemberConfig returns the member configurations kept in b, which
// must hold the kind [KindMemberConfig].
func NewDocumentMemberConfig(b store.Backend) (*DocumentMemberConfig, error) {
	docs, err := store.NewCollection[MemberConfigSpec, struct{}](b, KindMemberConfig, store.CollectionConfig{})
	if err != nil {
		return nil, err
	}
	return &DocumentMemberConfig{docs: docs}, nil
}

// Create records the first membership of c; see [MemberConfig].
func (d *DocumentMemberConfig) Create(ctx context.Context, c ClusterRef, initialCluster string) error {
	return d.put(ctx, c, initialCluster, false)
}

// Update records the membership c is changing to; see [MemberConfig].
func (d *DocumentMemberConfig) Update(ctx context.Context, c ClusterRef, initialCluster string) error {
	return d.put(ctx, c, initialCluster, true)
}

// put creates c's document, or finds it and rewrites it when it belongs to
// another cluster, or when update is set and it holds another membership.
func (d *DocumentMemberConfig) put(ctx context.Context, c ClusterRef, initialCluster string, update bool) error {
	owners := []store.OwnerRef{{Kind: KindCluster, Key: c.Key, UID: c.UID, Controller: true}}
	o, err := d.docs.Get(ctx, c.Key)
	if errors.Is(err, store.ErrNotFound) {
		_, err = d.docs.Create(ctx, &store.Object[MemberConfigSpec, struct{}]{
			Meta: store.Meta{Key: c.Key, Owners: owners},
			Spec: MemberConfigSpec{InitialCluster: initialCluster},
		})
		if errors.Is(err, store.ErrAlreadyExists) {
			// Created since the read: write again, from a new read.
			return fmt.Errorf("operator: member configuration of %s: %w", c.Key, store.ErrConflict)
		}
		return err
	}
	if err != nil {
		return err
	}
	mine := ownedBy(o.Owners, c.UID)
	if mine && (!update || o.Spec.InitialCluster == initialCluster) {
		return nil
	}
	o.Owners = owners
	o.Spec.InitialCluster = initialCluster
	_, err = d.docs.UpdateSpec(ctx, o)
	return err
}

// InitialCluster returns the initial cluster recorded for c; see
// [MemberConfig].
func (d *DocumentMemberConfig) InitialCluster(ctx context.Context, c ClusterRef) (string, error) {
	o, err := d.docs.Get(ctx, c.Key)
	if errors.Is(err, store.ErrNotFound) {
		return "", fmt.Errorf("%w for cluster %s", ErrNoMemberConfig, c.Key)
	}
	if err != nil {
		return "", err
	}
	if !ownedBy(o.Owners, c.UID) {
		return "", fmt.Errorf("%w for cluster %s (uid %s): the one recorded belongs to an earlier cluster", ErrNoMemberConfig, c.Key, c.UID)
	}
	return o.Spec.InitialCluster, nil
}

// ownedBy reports whether owners name a Cluster with uid.
func ownedBy(owners []store.OwnerRef, uid string) bool {
	return slices.ContainsFunc(owners, func(r store.OwnerRef) bool { return r.Kind == KindCluster && r.UID == uid })
}
