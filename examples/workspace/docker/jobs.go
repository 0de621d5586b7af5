package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/tendhq/tend/examples/workspace/dataplane"
	"github.com/tendhq/tend/examples/workspace/local"
	"github.com/tendhq/tend/examples/workspace/storagejob"
)

// Labels of a storage job's container, besides [LabelWorkspace].
const (
	// LabelJob holds a job container's command (archive or restore).
	LabelJob = "tend.workspace.job"
)

// JobScratchDir is where a job container's scratch space, an anonymous
// volume removed with the container, is mounted: its TMPDIR.
const JobScratchDir = "/tmp"

// ErrVolumeInUse: a storage job was asked to start on a volume that a
// container uses. Transient: the data plane stops the workspace's container
// before it archives, and never starts it while a job runs.
var ErrVolumeInUse = errors.New("docker: volume in use")

// JobsConfig configures [NewJobs].
type JobsConfig struct {
	// Client talks to the Docker engine. Required.
	Client *client.Client
	// Image is the job image: a static build of the storage job's program
	// as entrypoint (see [ImportJobImage]). It must be present in the
	// engine; nothing is pulled. Required.
	Image string
	// Credentials reach the object storage of s3:// archive URLs; they are
	// the job container's only secrets.
	Credentials storagejob.Credentials
}

// Jobs is the Docker dataplane.JobRunner: each storage job a container of
// the job image, named after the job, with the workspace's volume at
// storagejob.DataDir, an anonymous volume as its scratch space at
// [JobScratchDir], and nothing in its environment but the archive's URL,
// the object storage's credentials and TMPDIR. It runs on the host network
// to reach the object storage. A job starts only on a volume no other
// container mounts, and Status reads its state and exit code from the
// engine: nothing is kept in memory.
type Jobs struct {
	cfg JobsConfig
}

var _ dataplane.JobRunner = (*Jobs)(nil)

// NewJobs returns the job runner of cfg. It contacts nothing.
func NewJobs(cfg JobsConfig) (*Jobs, error) {
	if cfg.Client == nil || cfg.Image == "" {
		return nil, errors.New("docker: NewJobs needs Client and Image")
	}
	return &Jobs{cfg: cfg}, nil
}

// volumeFree returns an error matching [ErrVolumeInUse] when a container,
// running or not, mounts volume: the volume has one user at a time, a
// storage job or the workspace's container, and who waits says so.
func volumeFree(ctx context.Context, cli *client.Client, volume, who string) error {
	users, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: client.Filters{}.Add("volume", volume)})
	if err != nil {
		return fmt.Errorf("docker: containers using %s: %w", volume, err)
	}
	if len(users.Items) == 0 {
		return nil
	}
	names := make([]string, 0, len(users.Items))
	for _, u := range users.Items {
		names = append(names, strings.TrimPrefix(strings.Join(u.Names, ","), "/"))
	}
	return fmt.Errorf("%w: %s is mounted by %s; %s waits", ErrVolumeInUse, volume, strings.Join(names, " "), who)
}

// inspect returns the container called name, or nil.
func (j *Jobs) inspect(ctx context.Context, name string) (*container.InspectResponse, error) {
	res, err := j.cfg.Client.ContainerInspect(ctx, name, client.ContainerInspectOptions{})
	if cerrdefs.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("docker: inspect job %s: %w", name, err)
	}
	return &res.Container, nil
}

// Start implements dataplane.JobRunner.
func (j *Jobs) Start(ctx context.Context, job dataplane.Job) error {
	c, err := j.inspect(ctx, job.Name)
	if err != nil {
		return err
	}
	if c == nil {
		volume := local.VolumeName(job.WorkspaceID)
		if err := volumeFree(ctx, j.cfg.Client, volume, "job "+job.Name); err != nil {
			return err
		}
		env := append(storagejob.Env(job.ArchiveURL, j.cfg.Credentials), "TMPDIR="+JobScratchDir)
		_, err = j.cfg.Client.ContainerCreate(ctx, client.ContainerCreateOptions{
			Name: job.Name,
			Config: &container.Config{
				Image:  j.cfg.Image,
				Cmd:    []string{job.Command},
				Env:    env,
				Labels: map[string]string{LabelWorkspace: job.WorkspaceID, LabelJob: job.Command},
			},
			HostConfig: &container.HostConfig{
				NetworkMode: "host",
				Mounts: []mount.Mount{
					{Type: mount.TypeVolume, Source: volume, Target: storagejob.DataDir},
					{Type: mount.TypeVolume, Target: JobScratchDir},
				},
			},
		})
		if cerrdefs.IsConflict(err) {
			return nil // another Start created it first
		}
		if err != nil {
			return fmt.Errorf("docker: create job %s from image %q: %w", job.Name, j.cfg.Image, err)
		}
	} else if c.State == nil || c.State.Status != container.StateCreated {
		return nil // started already
	}
	if _, err := j.cfg.Client.ContainerStart(ctx, job.Name, client.ContainerStartOptions{}); err != nil {
		return fmt.Errorf("docker: start job %s: %w", job.Name, err)
	}
	return nil
}

// Status implements dataplane.JobRunner: the engine's state of the
// container, and for a failed job its exit code and last line of output.
func (j *Jobs) Status(ctx context.Context, name string) (dataplane.JobStatus, error) {
	c, err := j.inspect(ctx, name)
	if err != nil || c == nil {
		return dataplane.JobStatus{State: dataplane.JobAbsent}, err
	}
	switch st := c.State; {
	case st == nil || st.Status == container.StateCreated:
		return dataplane.JobStatus{State: dataplane.JobPending}, nil
	case st.Status == container.StateExited || st.Status == container.StateDead:
		if st.ExitCode == 0 && st.Status == container.StateExited {
			return dataplane.JobStatus{State: dataplane.JobSucceeded}, nil
		}
		msg := st.Error
		if msg == "" {
			msg = j.lastLine(ctx, name)
		}
		return dataplane.JobStatus{State: dataplane.JobFailed, ExitCode: st.ExitCode, Message: msg}, nil
	}
	return dataplane.JobStatus{State: dataplane.JobRunning}, nil
}

// lastLine returns the last line container name wrote, or "".
func (j *Jobs) lastLine(ctx context.Context, name string) string {
	logs, err := j.cfg.Client.ContainerLogs(ctx, name, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Tail: "1"})
	if err != nil {
		return ""
	}
	defer logs.Close()
	var out strings.Builder
	if _, err := stdcopy.StdCopy(&out, &out, io.LimitReader(logs, 64<<10)); err != nil {
		return ""
	}
	return strings.TrimSpace(out.String())
}

// Remove implements dataplane.JobRunner: the container goes with its
// scratch volume; a running one is killed.
func (j *Jobs) Remove(ctx context.Context, name string) error {
	_, err := j.cfg.Client.ContainerRemove(ctx, name, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("docker: remove job %s: %w", name, err)
	}
	return nil
}
