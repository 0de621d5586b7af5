package dataplane

import (
	"context"
	"errors"
	"fmt"

	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/examples/workspace/archive"
)

// ErrNoVolume: a workspace's volume does not exist where an operation needs
// it (a restore, a start). Transient: the controller provisions volumes
// before it restores or starts.
var ErrNoVolume = errors.New("dataplane: volume missing")

// HostVolumesConfig configures [NewHostVolumes].
type HostVolumesConfig struct {
	// Jobs runs the archive and restore jobs. Required.
	Jobs *archive.Jobs
	// Dir returns the directory on this host that holds workspace id's
	// volume, or "" when the volume does not exist. Required.
	Dir func(ctx context.Context, id string) (string, error)
	// Mark records on workspace id's volume the key of the archive it holds
	// (the restore marker); "" removes the mark. Required.
	Mark func(ctx context.Context, id, key string) error
}

// HostVolumes is the archive side of a [StorageProvider] whose volumes are
// directories on this host (a Docker volume's mountpoint, a Kubernetes
// volume's host path): its Archive, Restore and ArchiveReady run the storage
// jobs of package archive in this process. A backend embeds it and supplies
// where each volume is and how its restore marker is kept.
type HostVolumes struct {
	cfg HostVolumesConfig
}

// NewHostVolumes returns the archive side of a storage provider.
func NewHostVolumes(cfg HostVolumesConfig) (*HostVolumes, error) {
	if cfg.Jobs == nil || cfg.Dir == nil || cfg.Mark == nil {
		return nil, fmt.Errorf("%w: NewHostVolumes needs Jobs, Dir and Mark", ErrInvalid)
	}
	return &HostVolumes{cfg: cfg}, nil
}

// terminal marks the archive jobs' terminal errors for the controller.
func terminal(err error) error {
	if archive.Terminal(err) {
		return controller.Terminal(err)
	}
	return err
}

// Archive implements [StorageProvider] with the archive job. A missing
// volume fails with archive.ErrNoSource, terminal.
func (h *HostVolumes) Archive(ctx context.Context, id, opID string) (string, error) {
	if err := errors.Join(archive.ValidateID(id), archive.ValidateID(opID)); err != nil {
		return "", controller.Terminal(err)
	}
	key := archive.Key(id, opID)
	dir, err := h.cfg.Dir(ctx, id)
	if err != nil {
		return "", err
	}
	if dir == "" {
		return "", controller.Terminal(fmt.Errorf("%w: the volume of workspace %s", archive.ErrNoSource, id))
	}
	if _, err := h.cfg.Jobs.Archive(ctx, key, dir); err != nil {
		return "", terminal(err)
	}
	return key, nil
}

// Restore implements [StorageProvider] with the restore job. The mark is
// removed first and set only once the volume holds the whole archive, so a
// crash in between leaves no mark and the restore runs again. A missing
// volume fails with [ErrNoVolume].
func (h *HostVolumes) Restore(ctx context.Context, id, key string) (string, error) {
	if err := h.cfg.Mark(ctx, id, ""); err != nil {
		return "", err
	}
	dir, err := h.cfg.Dir(ctx, id)
	if err != nil {
		return "", err
	}
	if dir == "" {
		return "", fmt.Errorf("%w: the volume of workspace %s", ErrNoVolume, id)
	}
	if err := h.cfg.Jobs.Restore(ctx, key, dir); err != nil {
		return "", terminal(err)
	}
	if err := h.cfg.Mark(ctx, id, key); err != nil {
		return "", err
	}
	return key, nil
}

// ArchiveReady implements [StorageProvider] (the HEAD check).
func (h *HostVolumes) ArchiveReady(ctx context.Context, key string) (bool, error) {
	return h.cfg.Jobs.Complete(ctx, key)
}
