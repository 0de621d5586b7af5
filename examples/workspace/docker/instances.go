package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/tendhq/tend/examples/workspace/archive"
	"github.com/tendhq/tend/examples/workspace/dataplane"
	"github.com/tendhq/tend/examples/workspace/local"
)

// Labels the backend puts on what it creates.
const (
	// LabelWorkspace holds the workspace id of a container or volume.
	LabelWorkspace = "tend.workspace.id"
	// LabelAddr holds the host address a container serves on.
	LabelAddr = "tend.workspace.addr"
	// LabelRestoredFrom holds, on a restore marker volume, the archive key
	// the home volume was restored from.
	LabelRestoredFrom = "tend.workspace.restored-from"
)

// HomeDir is where a container mounts its home volume.
const HomeDir = "/home/workspace"

// DefaultStartTimeout bounds how long Start waits for a container to answer
// when InstancesConfig.StartTimeout is zero.
const DefaultStartTimeout = 30 * time.Second

// ErrNoVolume: Start was asked for a container whose volume does not exist.
var ErrNoVolume = errors.New("docker: volume missing; a container is never started without it")

// ErrExited: a container exited while Start waited for it to answer.
var ErrExited = errors.New("docker: container exited before it answered")

// InstancesConfig configures [NewInstances].
type InstancesConfig struct {
	// Client talks to the Docker engine. Required. The engine runs on this
	// host: containers use the host network and Start picks a free loopback
	// port for each.
	Client *client.Client
	// StartTimeout bounds how long Start waits for a container to answer.
	// Zero means [DefaultStartTimeout].
	StartTimeout time.Duration
}

// Instances is the Docker dataplane.InstanceController: container ws-{id}
// runs the workspace image on the host network, serving its home volume
// ws-{id}-home (mounted at [HomeDir]) on the loopback address in its
// [LabelAddr] label. It keeps no state: everything it knows it reads from
// the engine, so a restarted controller finds its containers again.
type Instances struct {
	cfg  InstancesConfig
	http *http.Client
}

var _ dataplane.InstanceController = (*Instances)(nil)

// NewInstances returns the instance controller of cfg.
func NewInstances(cfg InstancesConfig) (*Instances, error) {
	if cfg.Client == nil {
		return nil, errors.New("docker: NewInstances needs a Client")
	}
	if cfg.StartTimeout < 0 {
		return nil, errors.New("docker: negative StartTimeout")
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = DefaultStartTimeout
	}
	return &Instances{
		cfg:  cfg,
		http: &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}},
	}, nil
}

// Addr returns the address container ws-{id} serves on, or "" when it does
// not exist.
func (in *Instances) Addr(ctx context.Context, id string) (string, error) {
	c, err := in.inspect(ctx, id)
	if c == nil || c.Config == nil || err != nil {
		return "", err
	}
	return c.Config.Labels[LabelAddr], nil
}

// inspect returns container ws-{id}, or nil when it does not exist.
func (in *Instances) inspect(ctx context.Context, id string) (*container.InspectResponse, error) {
	res, err := in.cfg.Client.ContainerInspect(ctx, local.ContainerName(id), client.ContainerInspectOptions{})
	if cerrdefs.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("docker: inspect %s: %w", local.ContainerName(id), err)
	}
	return &res.Container, nil
}

// IsRunning implements dataplane.InstanceController: the container is
// running and answers its health check with its own name.
func (in *Instances) IsRunning(ctx context.Context, id string) (bool, error) {
	c, err := in.inspect(ctx, id)
	if c == nil || err != nil {
		return false, err
	}
	return running(c) && in.answers(ctx, id, c.Config.Labels[LabelAddr]), nil
}

func running(c *container.InspectResponse) bool {
	return c.State != nil && c.State.Running && c.Config != nil
}

func (in *Instances) answers(ctx context.Context, id, addr string) bool {
	if addr == "" {
		return false
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+local.HealthPath, nil)
	if err != nil {
		return false
	}
	resp, err := in.http.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
	return resp.StatusCode == http.StatusOK && string(b) == local.ContainerName(id)
}

// Start implements dataplane.InstanceController. image must be present in
// the engine (see [ImportImage]); nothing is pulled.
func (in *Instances) Start(ctx context.Context, id, image string) error {
	if err := archive.ValidateID(id); err != nil {
		return err
	}
	if ok, err := in.IsRunning(ctx, id); ok || err != nil {
		return err
	}
	if err := in.Delete(ctx, id); err != nil { // a container that is not running: clean up
		return err
	}
	if _, err := in.cfg.Client.VolumeInspect(ctx, local.VolumeName(id), client.VolumeInspectOptions{}); err != nil {
		if cerrdefs.IsNotFound(err) {
			return fmt.Errorf("%w: %s", ErrNoVolume, local.VolumeName(id))
		}
		return fmt.Errorf("docker: inspect %s: %w", local.VolumeName(id), err)
	}
	if err := volumeFree(ctx, in.cfg.Client, local.VolumeName(id), "container "+local.ContainerName(id)); err != nil {
		return err
	}
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	name := local.ContainerName(id)
	created, err := in.cfg.Client.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name: name,
		Config: &container.Config{
			Image:  image,
			Cmd:    []string{"-name", name, "-home", HomeDir, "-addr", addr},
			Labels: map[string]string{LabelWorkspace: id, LabelAddr: addr},
		},
		HostConfig: &container.HostConfig{
			NetworkMode: "host",
			Mounts:      []mount.Mount{{Type: mount.TypeVolume, Source: local.VolumeName(id), Target: HomeDir}},
		},
	})
	if err != nil {
		return fmt.Errorf("docker: create %s from image %q: %w", name, image, err)
	}
	if _, err := in.cfg.Client.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		return fmt.Errorf("docker: start %s: %w", name, err)
	}

	// Ready when it answers: Start returns only then.
	ctx, cancel := context.WithTimeout(ctx, in.cfg.StartTimeout)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if in.answers(ctx, id, addr) {
			return nil
		}
		c, err := in.inspect(ctx, id)
		if err == nil && (c == nil || !running(c)) {
			code := -1
			if c != nil && c.State != nil {
				code = c.State.ExitCode
			}
			return fmt.Errorf("%w: %s (exit code %d)", ErrExited, name, code)
		}
		select {
		case <-ctx.Done():
			_ = in.Delete(context.Background(), id)
			return fmt.Errorf("docker: %s did not answer: %w", name, ctx.Err())
		case <-tick.C:
		}
	}
}

// freeAddr returns a loopback address nothing listens on now. Another
// process may take it before the container listens: the container then
// exits and Start fails with [ErrExited], and the retry picks another.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("docker: %w", err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		return "", fmt.Errorf("docker: %w", err)
	}
	return addr, nil
}

// Delete implements dataplane.InstanceController: a forced remove, which
// kills the container with SIGKILL. The volume is kept.
func (in *Instances) Delete(ctx context.Context, id string) error {
	_, err := in.cfg.Client.ContainerRemove(ctx, local.ContainerName(id), client.ContainerRemoveOptions{Force: true})
	if err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("docker: remove %s: %w", local.ContainerName(id), err)
	}
	return nil
}

// Kill kills container ws-{id} with SIGKILL without removing it, as a crash
// would: it stops answering, and the next Start cleans up and starts it
// again. A missing container is no error.
func (in *Instances) Kill(ctx context.Context, id string) error {
	_, err := in.cfg.Client.ContainerKill(ctx, local.ContainerName(id), client.ContainerKillOptions{Signal: "KILL"})
	if err != nil && !cerrdefs.IsNotFound(err) && !cerrdefs.IsConflict(err) {
		return fmt.Errorf("docker: kill %s: %w", local.ContainerName(id), err)
	}
	return nil
}
