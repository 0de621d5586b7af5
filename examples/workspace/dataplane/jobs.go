package dataplane

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/examples/workspace/archive"
	"github.com/tendhq/tend/examples/workspace/objstore"
	"github.com/tendhq/tend/examples/workspace/storagejob"
)

// ErrNoVolume: a workspace's volume does not exist where an operation needs
// it (a restore, a start). Transient: the controller provisions volumes
// before it restores or starts.
var ErrNoVolume = errors.New("dataplane: volume missing")

// ErrJobRunning: the storage job of an archive or a restore has not exited
// yet. The step that meets it is Pending and looks again later: a job's
// completion is judged from its observed exit, never from a call returning.
var ErrJobRunning = errors.New("dataplane: storage job running")

// ErrJobFailed: a storage job exited with a failure. It is terminal when the
// job's exit code says so (storagejob.ExitTerminal); the next attempt of any
// other runs the job again from the start.
var ErrJobFailed = errors.New("dataplane: storage job failed")

// Job is one run of the storage job (package storagejob) on a workspace's
// volume.
type Job struct {
	// Name names the job, and whatever runs it (a process, a container, a
	// Kubernetes Job): see [JobName].
	Name string
	// Command is storagejob.Archive or storagejob.Restore.
	Command string
	// WorkspaceID is the workspace whose volume the job mounts at its data
	// directory, and alone uses while it runs.
	WorkspaceID string
	// ArchiveURL is the archive's full URL, the job's only parameter
	// besides the object storage's credentials, which the runner holds.
	ArchiveURL string
}

// JobState is what a runner observes of a job.
type JobState int

const (
	// JobAbsent: no job of that name exists.
	JobAbsent JobState = iota
	// JobPending: the job exists but has not started; Start starts it.
	JobPending
	// JobRunning: the job runs.
	JobRunning
	// JobSucceeded: the job exited 0.
	JobSucceeded
	// JobFailed: the job exited with a failure, or died.
	JobFailed
)

var jobStates = [...]string{"absent", "pending", "running", "succeeded", "failed"}

// String returns "absent", "pending", "running", "succeeded" or "failed".
func (s JobState) String() string {
	if s >= 0 && int(s) < len(jobStates) {
		return jobStates[s]
	}
	return fmt.Sprintf("JobState(%d)", int(s))
}

// JobStatus is a job's observed state.
type JobStatus struct {
	State JobState
	// ExitCode is the exit code of a failed job; storagejob.ExitTerminal
	// marks a failure no run fixes. A job that died without one (killed,
	// lost with its runner) has -1.
	ExitCode int
	// Message says why a job failed, when the runner knows: the last line
	// the job wrote.
	Message string
}

// JobRunner starts storage jobs in isolation and reports what it observes
// of them. It never waits for a job. Every method is idempotent and safe for
// concurrent use on different jobs.
type JobRunner interface {
	// Start starts job unless a job of its name exists: a pending one is
	// started, any other is left as it is. It refuses, with a transient
	// error, to start a job on a volume something else uses.
	Start(ctx context.Context, job Job) error
	// Status returns the observed state of the job called name.
	Status(ctx context.Context, name string) (JobStatus, error)
	// Remove removes the job called name, killing it if it runs, with its
	// scratch space. A missing job is no error.
	Remove(ctx context.Context, name string) error
}

// JobName returns the name of the storage job running command on the
// archive under key for workspace id: ws-{id}-{command}-{10 hex digits of
// the key's SHA-256}. It is the same for every attempt of one operation, so
// a restarted controller finds the job its predecessor started, and short
// and lowercase enough to name a container or a Kubernetes Job.
func JobName(id, command, key string) string {
	sum := sha256.Sum256([]byte(key))
	return "ws-" + id + "-" + command + "-" + hex.EncodeToString(sum[:5])
}

// StorageJobsConfig configures [NewStorageJobs].
type StorageJobsConfig struct {
	// Runner runs the jobs. Required.
	Runner JobRunner
	// Objects is the object storage the archives go to: the HEAD check
	// reads it, and its URLs are the jobs' parameter. Required.
	Objects objstore.Addressable
	// VolumeExists reports whether workspace id's volume exists. Required.
	VolumeExists func(ctx context.Context, id string) (bool, error)
	// Marker returns the key of the archive workspace id's volume was last
	// restored from, or "". Required.
	Marker func(ctx context.Context, id string) (string, error)
	// Mark records on workspace id's volume the key of the archive it holds
	// (the restore marker); "" removes the mark. Required.
	Mark func(ctx context.Context, id, key string) error
}

// StorageJobs is the archive side of a [StorageProvider]: its Archive,
// Restore and ArchiveReady start storage jobs through a [JobRunner] and
// judge them by their observed exit. A backend embeds it and supplies the
// runner and how each volume's restore marker is kept.
//
// Each call looks at the operation's job first. A job that succeeded is
// removed and the operation's result returned; one that failed is removed
// and its failure returned ([ErrJobFailed], terminal when its exit code
// says so), so the next attempt runs it afresh; one that runs returns
// [ErrJobRunning]. With no job, the call returns the result if the world
// already shows it (the archive complete, the volume marked restored from
// the archive: a controller that crashed after removing a finished job
// loses nothing), and starts the job otherwise.
type StorageJobs struct {
	cfg StorageJobsConfig
}

// NewStorageJobs returns the archive side of a storage provider.
func NewStorageJobs(cfg StorageJobsConfig) (*StorageJobs, error) {
	if cfg.Runner == nil || cfg.Objects == nil || cfg.VolumeExists == nil || cfg.Marker == nil || cfg.Mark == nil {
		return nil, fmt.Errorf("%w: NewStorageJobs needs Runner, Objects, VolumeExists, Marker and Mark", ErrInvalid)
	}
	return &StorageJobs{cfg: cfg}, nil
}

// finished looks at job: it reports whether the job succeeded (the caller
// records its result, then removes it), or returns the error a running or
// failed job means (a failed job is removed). With neither, no job has
// started yet.
func (s *StorageJobs) finished(ctx context.Context, job Job) (bool, error) {
	st, err := s.cfg.Runner.Status(ctx, job.Name)
	if err != nil {
		return false, err
	}
	switch st.State {
	case JobAbsent, JobPending:
		return false, nil
	case JobRunning:
		return false, fmt.Errorf("%w: %s", ErrJobRunning, job.Name)
	case JobSucceeded:
		return true, nil
	}
	if err := s.cfg.Runner.Remove(ctx, job.Name); err != nil {
		return false, err
	}
	err = fmt.Errorf("%w: %s of workspace %s (%s) exited with %d: %s", ErrJobFailed, job.Command, job.WorkspaceID, job.Name, st.ExitCode, st.Message)
	if st.ExitCode == storagejob.ExitTerminal {
		return false, controller.Terminal(err)
	}
	return false, err
}

// start starts job on workspace id's volume, which must exist (missing is
// returned) and returns [ErrJobRunning].
func (s *StorageJobs) start(ctx context.Context, job Job, missing error) error {
	if ok, err := s.cfg.VolumeExists(ctx, job.WorkspaceID); err != nil {
		return err
	} else if !ok {
		return missing
	}
	if err := s.cfg.Runner.Start(ctx, job); err != nil {
		return err
	}
	return fmt.Errorf("%w: %s", ErrJobRunning, job.Name)
}

// Archive implements [StorageProvider] with the archive job. A missing
// volume fails with archive.ErrNoSource, terminal.
func (s *StorageJobs) Archive(ctx context.Context, id, opID string) (string, error) {
	if err := errors.Join(archive.ValidateID(id), archive.ValidateID(opID)); err != nil {
		return "", controller.Terminal(err)
	}
	key := archive.Key(id, opID)
	job := Job{Name: JobName(id, storagejob.Archive, key), Command: storagejob.Archive, WorkspaceID: id, ArchiveURL: s.cfg.Objects.URL(key)}
	done, err := s.finished(ctx, job)
	if err != nil {
		return "", err
	}
	if done {
		return key, s.cfg.Runner.Remove(ctx, job.Name)
	}
	if complete, err := archive.Complete(ctx, s.cfg.Objects, key); err != nil || complete {
		return key, err
	}
	return "", s.start(ctx, job, controller.Terminal(fmt.Errorf("%w: the volume of workspace %s", archive.ErrNoSource, id)))
}

// Restore implements [StorageProvider] with the restore job. The mark is
// removed before the job starts and set once it has succeeded, so a crash
// in between leaves no mark and the restore runs again. A missing volume
// fails with [ErrNoVolume].
func (s *StorageJobs) Restore(ctx context.Context, id, key string) (string, error) {
	if _, _, ok := archive.ParseKey(key); !ok || archive.ValidateID(id) != nil {
		return "", controller.Terminal(fmt.Errorf("%w: workspace %q, archive %q", archive.ErrInvalidKey, id, key))
	}
	job := Job{Name: JobName(id, storagejob.Restore, key), Command: storagejob.Restore, WorkspaceID: id, ArchiveURL: s.cfg.Objects.URL(key)}
	done, err := s.finished(ctx, job)
	if err != nil {
		return "", err
	}
	if done {
		if err := s.cfg.Mark(ctx, id, key); err != nil {
			return "", err
		}
		return key, s.cfg.Runner.Remove(ctx, job.Name)
	}
	if m, err := s.cfg.Marker(ctx, id); err != nil || m == key {
		return m, err
	}
	if err := s.cfg.Mark(ctx, id, ""); err != nil {
		return "", err
	}
	return "", s.start(ctx, job, fmt.Errorf("%w: the volume of workspace %s", ErrNoVolume, id))
}

// ArchiveReady implements [StorageProvider] (the HEAD check).
func (s *StorageJobs) ArchiveReady(ctx context.Context, key string) (bool, error) {
	return archive.Complete(ctx, s.cfg.Objects, key)
}
