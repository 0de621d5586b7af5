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
	"github.com/tendhq/tend/examples/workspace/storagejob"
)

// VolumeName returns the name of workspace id's home volume: ws-{id}-home.
func VolumeName(id string) string { return "ws-" + id + "-home" }

// ContainerName returns the name of workspace id's container: ws-{id}.
func ContainerName(id string) string { return "ws-" + id }

// StorageConfig configures [NewStorage].
type StorageConfig struct {
	// Dir holds the volumes (Dir/volumes) and the storage jobs (Dir/jobs).
	// Required.
	Dir string
	// Objects is the object storage archives go to. Required.
	Objects objstore.Addressable
	// Credentials reach Objects from a storage job, when it is an S3
	// bucket.
	Credentials storagejob.Credentials
	// Executable is the program the storage jobs run (see
	// JobsConfig.Executable). Empty means the running program.
	Executable string
	// Runner runs the storage jobs. Nil means a [Jobs] on Dir/jobs: each
	// job a child process.
	Runner dataplane.JobRunner
}

// Storage is the embedded dataplane.StorageProvider. Archive and restore run
// as storage jobs, child processes of [Jobs] unless StorageConfig.Runner
// says otherwise; Close kills those that run.
type Storage struct {
	*dataplane.StorageJobs // Archive, Restore, ArchiveReady
	volumes                string
	jobs                   *Jobs
}

var _ dataplane.StorageProvider = (*Storage)(nil)

// NewStorage returns the storage of cfg, creating its directories. It
// starts nothing.
func NewStorage(cfg StorageConfig) (*Storage, error) {
	if cfg.Dir == "" || cfg.Objects == nil {
		return nil, errors.New("local: NewStorage needs Dir and Objects")
	}
	s := &Storage{volumes: filepath.Join(cfg.Dir, "volumes")}
	if err := os.MkdirAll(s.volumes, 0o755); err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	runner := cfg.Runner
	if runner == nil {
		jobs, err := NewJobs(JobsConfig{Dir: filepath.Join(cfg.Dir, "jobs"), Volume: s.VolumeDir,
			Credentials: cfg.Credentials, Executable: cfg.Executable})
		if err != nil {
			return nil, err
		}
		s.jobs, runner = jobs, jobs
	}
	var err error
	s.StorageJobs, err = dataplane.NewStorageJobs(dataplane.StorageJobsConfig{Runner: runner, Objects: cfg.Objects,
		VolumeExists: s.VolumeExists, Marker: s.RestoreMarker, Mark: s.mark})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Close kills the storage jobs of its own runner that run and waits for
// them.
func (s *Storage) Close() error {
	if s.jobs == nil {
		return nil
	}
	return s.jobs.Close()
}

// VolumeDir returns the directory of workspace id's volume.
func (s *Storage) VolumeDir(id string) string { return filepath.Join(s.volumes, VolumeName(id)) }

func (s *Storage) markerFile(id string) string { return s.VolumeDir(id) + ".restored" }

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

// mark keeps the restore marker of workspace id in a file beside its
// volume: "" removes it; a key is written whole or not at all.
func (s *Storage) mark(_ context.Context, id, key string) error {
	if key == "" {
		if err := os.Remove(s.markerFile(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("local: %w", err)
		}
		return nil
	}
	tmp := s.markerFile(id) + ".tmp"
	if err := os.WriteFile(tmp, []byte(key), 0o644); err != nil {
		return fmt.Errorf("local: %w", err)
	}
	if err := os.Rename(tmp, s.markerFile(id)); err != nil {
		return fmt.Errorf("local: %w", err)
	}
	return nil
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
