package docker

import (
	"context"
	"errors"
	"fmt"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/examples/workspace/archive"
	"github.com/tendhq/tend/examples/workspace/dataplane"
	"github.com/tendhq/tend/examples/workspace/local"
	"github.com/tendhq/tend/examples/workspace/objstore"
	"github.com/tendhq/tend/examples/workspace/storagejob"
)

// StorageConfig configures [NewStorage].
type StorageConfig struct {
	// Client talks to the Docker engine. Required.
	Client *client.Client
	// Objects is the object storage archives go to. Required.
	Objects objstore.Addressable
	// JobImage is the storage jobs' image (see [ImportJobImage]).
	// Required.
	JobImage string
	// Credentials reach Objects from a storage job's container, when it is
	// an S3 bucket.
	Credentials storagejob.Credentials
}

// Storage is the Docker dataplane.StorageProvider: volume ws-{id}-home is a
// Docker volume of the local driver. Archive and restore run as storage
// jobs, containers of the job image ([Jobs]) that mount the volume; this
// process never reads or writes a volume's files.
//
// Docker volume labels cannot change after creation, so the restore marker
// is a volume of its own, ws-{id}-home-restored, created empty after a
// restore completes with the archive key in its [LabelRestoredFrom] label.
type Storage struct {
	*dataplane.StorageJobs // Archive, Restore, ArchiveReady
	cli                    *client.Client
}

var _ dataplane.StorageProvider = (*Storage)(nil)

// NewStorage returns the storage of cfg. It contacts nothing.
func NewStorage(cfg StorageConfig) (*Storage, error) {
	if cfg.Client == nil || cfg.Objects == nil || cfg.JobImage == "" {
		return nil, errors.New("docker: NewStorage needs Client, Objects and JobImage")
	}
	jobs, err := NewJobs(JobsConfig{Client: cfg.Client, Image: cfg.JobImage, Credentials: cfg.Credentials})
	if err != nil {
		return nil, err
	}
	s := &Storage{cli: cfg.Client}
	s.StorageJobs, err = dataplane.NewStorageJobs(dataplane.StorageJobsConfig{Runner: jobs, Objects: cfg.Objects,
		VolumeExists: s.VolumeExists, Marker: s.RestoreMarker, Mark: s.mark})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// MarkerName returns the name of the volume holding workspace id's restore
// marker: ws-{id}-home-restored. It never equals a home volume's name,
// which ends in -home.
func MarkerName(id string) string { return local.VolumeName(id) + "-restored" }

// Mountpoint returns the host directory holding workspace id's volume, or
// "" when the volume does not exist.
func (s *Storage) Mountpoint(ctx context.Context, id string) (string, error) {
	res, err := s.cli.VolumeInspect(ctx, local.VolumeName(id), client.VolumeInspectOptions{})
	if cerrdefs.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("docker: inspect %s: %w", local.VolumeName(id), err)
	}
	return res.Volume.Mountpoint, nil
}

// Provision implements dataplane.StorageProvider. Creating a volume that
// exists returns it as it is.
func (s *Storage) Provision(ctx context.Context, id string) error {
	if err := archive.ValidateID(id); err != nil {
		return controller.Terminal(err)
	}
	_, err := s.cli.VolumeCreate(ctx, client.VolumeCreateOptions{
		Name:   local.VolumeName(id),
		Labels: map[string]string{LabelWorkspace: id},
	})
	if err != nil {
		return fmt.Errorf("docker: provision %s: %w", local.VolumeName(id), err)
	}
	return nil
}

// VolumeExists implements dataplane.StorageProvider.
func (s *Storage) VolumeExists(ctx context.Context, id string) (bool, error) {
	mp, err := s.Mountpoint(ctx, id)
	return mp != "", err
}

// removeVolume removes volume name; a missing volume is no error. A volume
// still mounted by a container fails with a conflict, which is retried.
func (s *Storage) removeVolume(ctx context.Context, name string) error {
	if _, err := s.cli.VolumeRemove(ctx, name, client.VolumeRemoveOptions{}); err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("docker: delete %s: %w", name, err)
	}
	return nil
}

// DeleteVolume implements dataplane.StorageProvider: the marker first, then
// the volume.
func (s *Storage) DeleteVolume(ctx context.Context, id string) error {
	if err := s.removeVolume(ctx, MarkerName(id)); err != nil {
		return err
	}
	return s.removeVolume(ctx, local.VolumeName(id))
}

// mark keeps the restore marker of workspace id, for
// dataplane.StorageJobs: "" removes the marker volume; a key creates it
// with the key in its label.
func (s *Storage) mark(ctx context.Context, id, key string) error {
	if key == "" {
		return s.removeVolume(ctx, MarkerName(id))
	}
	res, err := s.cli.VolumeCreate(ctx, client.VolumeCreateOptions{
		Name:   MarkerName(id),
		Labels: map[string]string{LabelWorkspace: id, LabelRestoredFrom: key},
	})
	if err != nil {
		return fmt.Errorf("docker: mark %s: %w", local.VolumeName(id), err)
	}
	if got := res.Volume.Labels[LabelRestoredFrom]; got != key { // a concurrent restore won
		return fmt.Errorf("docker: %s marks %q, not %q", MarkerName(id), got, key)
	}
	return nil
}

// RestoreMarker implements dataplane.StorageProvider: the label of the
// marker volume.
func (s *Storage) RestoreMarker(ctx context.Context, id string) (string, error) {
	res, err := s.cli.VolumeInspect(ctx, MarkerName(id), client.VolumeInspectOptions{})
	if cerrdefs.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("docker: inspect %s: %w", MarkerName(id), err)
	}
	return res.Volume.Labels[LabelRestoredFrom], nil
}
