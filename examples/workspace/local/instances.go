package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/tendhq/tend/examples/workspace/archive"
	"github.com/tendhq/tend/examples/workspace/dataplane"
)

// Environment of a container process.
const (
	envName = "TEND_WORKSPACE_CONTAINER" // the container's name; set only in container mode
	envHome = "TEND_WORKSPACE_HOME"      // the volume it serves
	envAddr = "TEND_WORKSPACE_ADDR_FILE" // where it writes its address once listening
)

// HealthPath is the health check of a container: GET answers with the
// container's name.
const HealthPath = "/.well-known/container"

// DefaultStartTimeout bounds how long Start waits for a container to answer
// when InstancesConfig.StartTimeout is zero.
const DefaultStartTimeout = 15 * time.Second

// ErrNoVolume: Start was asked for a container whose volume does not exist.
var ErrNoVolume = errors.New("local: volume missing; a container is never started without it")

// InstancesConfig configures [NewInstances].
type InstancesConfig struct {
	// Dir holds the containers' runtime files. Required.
	Dir string
	// Volume returns the directory of workspace id's volume
	// (Storage.VolumeDir). Required.
	Volume func(id string) string
	// Executable is the program to run in container mode: a program whose
	// main (or TestMain) calls [ServeIfContainer] first. Empty means the
	// running program (os.Executable).
	Executable string
	// StartTimeout bounds how long Start waits for a container to answer.
	// Zero means [DefaultStartTimeout].
	StartTimeout time.Duration
}

// Instances is the embedded dataplane.InstanceController: each container a
// child process serving its volume over HTTP.
type Instances struct {
	cfg    InstancesConfig
	client *http.Client

	mu    sync.Mutex            // guards procs
	procs map[string]*container // by workspace id
}

var _ dataplane.InstanceController = (*Instances)(nil)

// container is a started child process.
type container struct {
	cmd  *exec.Cmd
	pipe *os.File // the parent's end of the pipe the child watches
	addr string   // host:port, once known
}

// NewInstances returns the instance controller of cfg.
func NewInstances(cfg InstancesConfig) (*Instances, error) {
	if cfg.Dir == "" || cfg.Volume == nil {
		return nil, errors.New("local: NewInstances needs Dir and Volume")
	}
	if cfg.Executable == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("local: %w", err)
		}
		cfg.Executable = exe
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = DefaultStartTimeout
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	return &Instances{
		cfg:    cfg,
		client: &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}},
		procs:  map[string]*container{},
	}, nil
}

// Addr returns the address container ws-{id} serves on, or "" when it was
// not started by in.
func (in *Instances) Addr(id string) string {
	in.mu.Lock()
	defer in.mu.Unlock()
	if c := in.procs[id]; c != nil {
		return c.addr
	}
	return ""
}

// IsRunning implements dataplane.InstanceController: the container answers
// its health check with its own name.
func (in *Instances) IsRunning(ctx context.Context, id string) (bool, error) {
	addr := in.Addr(id)
	if addr == "" {
		return false, nil
	}
	return in.answers(ctx, id, addr), nil
}

func (in *Instances) answers(ctx context.Context, id, addr string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+HealthPath, nil)
	if err != nil {
		return false
	}
	resp, err := in.client.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
	return resp.StatusCode == http.StatusOK && string(b) == ContainerName(id)
}

// Start implements dataplane.InstanceController. The image names what the
// container runs on real backends; here every container runs the same file
// server.
func (in *Instances) Start(ctx context.Context, id, image string) error {
	if err := archive.ValidateID(id); err != nil {
		return err
	}
	if running, _ := in.IsRunning(ctx, id); running {
		return nil
	}
	if err := in.Delete(ctx, id); err != nil { // a container that is not running: clean up
		return err
	}
	home := in.cfg.Volume(id)
	if fi, err := os.Stat(home); err != nil || !fi.IsDir() {
		return fmt.Errorf("%w: %s", ErrNoVolume, VolumeName(id))
	}
	addrFile := filepath.Join(in.cfg.Dir, ContainerName(id)+".addr")
	if err := os.Remove(addrFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("local: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("local: %w", err)
	}
	cmd := exec.Command(in.cfg.Executable)
	cmd.Env = append(os.Environ(), envName+"="+ContainerName(id), envHome+"="+home, envAddr+"="+addrFile)
	cmd.Stdin = r
	err = cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		return fmt.Errorf("local: start %s: %w", ContainerName(id), err)
	}
	c := &container{cmd: cmd, pipe: w}
	in.mu.Lock()
	in.procs[id] = c
	in.mu.Unlock()

	// Ready when it answers: start returns only then.
	ctx, cancel := context.WithTimeout(ctx, in.cfg.StartTimeout)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if b, err := os.ReadFile(addrFile); err == nil && c.addr == "" {
			in.mu.Lock()
			c.addr = strings.TrimSpace(string(b))
			in.mu.Unlock()
		}
		if c.addr != "" && in.answers(ctx, id, c.addr) {
			return nil
		}
		select {
		case <-ctx.Done():
			_ = in.Delete(context.Background(), id)
			return fmt.Errorf("local: %s did not answer: %w", ContainerName(id), ctx.Err())
		case <-tick.C:
		}
	}
}

// Delete implements dataplane.InstanceController: SIGKILL, then reap.
func (in *Instances) Delete(ctx context.Context, id string) error {
	in.mu.Lock()
	c := in.procs[id]
	delete(in.procs, id)
	in.mu.Unlock()
	if c == nil {
		return nil
	}
	_ = c.cmd.Process.Kill()
	_ = c.cmd.Wait()
	return c.pipe.Close()
}

// Close kills every container in started.
func (in *Instances) Close() error {
	in.mu.Lock()
	ids := make([]string, 0, len(in.procs))
	for id := range in.procs {
		ids = append(ids, id)
	}
	in.mu.Unlock()
	var errs []error
	for _, id := range ids {
		errs = append(errs, in.Delete(context.Background(), id))
	}
	return errors.Join(errs...)
}

// Kill kills container ws-{id} without removing it, as a crash would: it
// stops answering, and the next Start cleans up and starts it again.
func (in *Instances) Kill(id string) error {
	in.mu.Lock()
	c := in.procs[id]
	in.mu.Unlock()
	if c == nil {
		return nil
	}
	if err := c.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}
