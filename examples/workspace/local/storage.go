package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/examples/workspace/archive"
	"github.com/tendhq/tend/examples/workspace/dataplane"
	"github.com/tendhq/tend/examples/workspace/objstore"
)

// VolumeName returns the name of workspace id's home volume: ws-{id}-home.
func VolumeName(id string) string { return "ws-" + id + "-home" }

// ContainerName returns the name of workspace id's container: ws-{id}.
func ContainerName(id string) string { return "ws-" + id }

// StorageConfig configures [NewStorage].
type StorageConfig struct {
	// Dir holds the volumes (Dir/volumes) and the jobs' scratch space
	// (Dir/jobs). Required.
	Dir string
	// Objects is the object storage archives go to. Required.
	Objects objstore.Store
	// Limits bound what one restore may extract.
	Limits archive.Limits
}

// Storage is the embedded dataplane.StorageProvider.
type Storage struct {
	volumes string
	jobs    *archive.Jobs
}

var _ dataplane.StorageProvider = (*Storage)(nil)

// NewStorage returns the storage of cfg, creating its directories.
func NewStorage(cfg StorageConfig) (*Storage, error) {
	if cfg.Dir == "" || cfg.Objects == nil {
		return nil, errors.New("local: NewStorage needs Dir and Objects")
	}
	s := &Storage{volumes: filepath.Join(cfg.Dir, "volumes")}
	if err := os.MkdirAll(s.volumes, 0o755); err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	jobs, err := archive.New(archive.Config{Objects: cfg.Objects, Scratch: filepath.Join(cfg.Dir, "jobs"), Limits: cfg.Limits})
	if err != nil {
		return nil, err
	}
	s.jobs = jobs
	return s, nil
}

// VolumeDir returns the directory of workspace id's volume.
func (s *Storage) VolumeDir(id string) string { return filepath.Join(s.volumes, VolumeName(id)) }

func (s *Storage) markerFile(id string) string { return s.VolumeDir(id) + ".restored" }

// terminal marks the archive jobs' terminal errors for the controller.
func terminal(err error) error {
	if archive.Terminal(err) {
		return controller.Terminal(err)
	}
	return err
}

// Provision implements dataplane.StorageProvider.
func (s *Storage) Provision(ctx context.Context, id string) error {
	if err := archive.ValidateID(id); err != nil {
		return controller.Terminal(err)
	}
	if err := os.Mkdir(s.VolumeDir(id), 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("local: provision %s: %w", VolumeName(id), err)
	}
	return nil
}

// VolumeExists implements dataplane.StorageProvider.
func (s *Storage) VolumeExists(ctx context.Context, id string) (bool, error) {
	fi, err := os.Stat(s.VolumeDir(id))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("local: %w", err)
	}
	return fi.IsDir(), nil
}

// DeleteVolume implements dataplane.StorageProvider. The volume is first
// renamed away (at once it no longer exists), then removed.
func (s *Storage) DeleteVolume(ctx context.Context, id string) error {
	if err := os.Remove(s.markerFile(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("local: %w", err)
	}
	trash := s.VolumeDir(id) + ".deleting"
	if err := os.Rename(s.VolumeDir(id), trash); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("local: delete %s: %w", VolumeName(id), err)
	}
	if err := os.RemoveAll(trash); err != nil {
		return fmt.Errorf("local: delete %s: %w", VolumeName(id), err)
	}
	return nil
}

// Archive implements dataplane.StorageProvider with the archive job.
func (s *Storage) Archive(ctx context.Context, id, opID string) (string, error) {
	if err := errors.Join(archive.ValidateID(id), archive.ValidateID(opID)); err != nil {
		return "", controller.Terminal(err)
	}
	key := archive.Key(id, opID)
	if _, err := s.jobs.Archive(ctx, key, s.VolumeDir(id)); err != nil {
		return "", terminal(err)
	}
	return key, nil
}

// Restore implements dataplane.StorageProvider with the restore job; the
// marker is written only once the volume holds the whole archive.
func (s *Storage) Restore(ctx context.Context, id, key string) (string, error) {
	if err := os.Remove(s.markerFile(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("local: %w", err)
	}
	if err := s.jobs.Restore(ctx, key, s.VolumeDir(id)); err != nil {
		return "", terminal(err)
	}
	tmp := s.markerFile(id) + ".tmp"
	if err := os.WriteFile(tmp, []byte(key), 0o644); err != nil {
		return "", fmt.Errorf("local: %w", err)
	}
	if err := os.Rename(tmp, s.markerFile(id)); err != nil {
		return "", fmt.Errorf("local: %w", err)
	}
	return key, nil
}

// RestoreMarker implements dataplane.StorageProvider.
func (s *Storage) RestoreMarker(ctx context.Context, id string) (string, error) {
	b, err := os.ReadFile(s.markerFile(id))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("local: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// ArchiveReady implements dataplane.StorageProvider (the HEAD check).
func (s *Storage) ArchiveReady(ctx context.Context, key string) (bool, error) {
	return s.jobs.Complete(ctx, key)
}
