package local

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/tendhq/tend/examples/workspace/dataplane"
	"github.com/tendhq/tend/examples/workspace/storagejob"
)

// Environment of a storage job process, besides storagejob.Env.
const (
	envJob     = "TEND_WORKSPACE_JOB"      // the job's command; set only in job mode
	envJobData = "TEND_WORKSPACE_JOB_DATA" // the volume's directory
)

// JobsConfig configures [NewJobs].
type JobsConfig struct {
	// Dir holds one directory per job: its scratch space, its log and,
	// once it has exited, its exit code. Required.
	Dir string
	// Volume returns the directory of workspace id's volume
	// (Storage.VolumeDir). Required.
	Volume func(id string) string
	// Credentials reach the object storage of s3:// archive URLs.
	Credentials storagejob.Credentials
	// Executable is the program to run in job mode: a program whose main
	// (or TestMain) calls [ServeIfContainer] first. Empty means the running
	// program (os.Executable).
	Executable string
}

// Jobs is the embedded dataplane.JobRunner: each storage job a child
// process, the running program re-executed in job mode, with nothing in its
// environment but the job's own variables (storagejob.Env, TMPDIR): no
// store address, no credentials of the controller's. Its directory
// Dir/{name} holds its scratch space (its TMPDIR), its output (log) and,
// once it exits, its exit code (exit), which Status reads. A job watches a
// pipe from its runner and exits when the runner dies, so a job Dir/{name}
// holds without an exit code and that this runner did not start was lost
// with its runner: Status reports it failed, and it runs again.
type Jobs struct {
	cfg JobsConfig

	mu    sync.Mutex
	procs map[string]*jobProc // by name, until removed
	wg    sync.WaitGroup      // the goroutines that reap jobs
}

var _ dataplane.JobRunner = (*Jobs)(nil)

// jobProc is a started job.
type jobProc struct {
	cmd  *exec.Cmd
	pipe *os.File      // the runner's end of the pipe the job watches
	done chan struct{} // closed once the exit code is written
}

// NewJobs returns the job runner of cfg.
func NewJobs(cfg JobsConfig) (*Jobs, error) {
	if cfg.Dir == "" || cfg.Volume == nil {
		return nil, errors.New("local: NewJobs needs Dir and Volume")
	}
	if cfg.Executable == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("local: %w", err)
		}
		cfg.Executable = exe
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	return &Jobs{cfg: cfg, procs: map[string]*jobProc{}}, nil
}

func (j *Jobs) dir(name string) (string, error) {
	if name == "" || strings.ContainsAny(name, `/\`) || name == "." || name == ".." {
		return "", fmt.Errorf("local: invalid job name %q", name)
	}
	return filepath.Join(j.cfg.Dir, name), nil
}

// Start implements dataplane.JobRunner.
func (j *Jobs) Start(ctx context.Context, job dataplane.Job) error {
	dir, err := j.dir(job.Name)
	if err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.procs[job.Name] != nil {
		return nil
	}
	if _, err := os.Stat(dir); err == nil {
		return nil // exited, or lost with the runner before this one: Status says which
	}
	scratch := filepath.Join(dir, "scratch")
	if err := os.MkdirAll(scratch, 0o700); err != nil {
		return fmt.Errorf("local: job %s: %w", job.Name, err)
	}
	log, err := os.Create(filepath.Join(dir, "log"))
	if err != nil {
		return fmt.Errorf("local: job %s: %w", job.Name, err)
	}
	defer log.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("local: job %s: %w", job.Name, err)
	}
	cmd := exec.Command(j.cfg.Executable)
	cmd.Env = append(storagejob.Env(job.ArchiveURL, j.cfg.Credentials),
		envJob+"="+job.Command, envJobData+"="+j.cfg.Volume(job.WorkspaceID), "TMPDIR="+scratch)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = r, log, log
	err = cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		return fmt.Errorf("local: start job %s: %w", job.Name, err)
	}
	p := &jobProc{cmd: cmd, pipe: w, done: make(chan struct{})}
	j.procs[job.Name] = p
	j.wg.Go(func() {
		defer close(p.done)
		code := -1
		if err := cmd.Wait(); err == nil {
			code = 0
		} else if ee, ok := errors.AsType[*exec.ExitError](err); ok && ee.Exited() {
			code = ee.ExitCode()
		}
		tmp := filepath.Join(dir, "exit.tmp")
		if os.WriteFile(tmp, []byte(strconv.Itoa(code)), 0o644) == nil {
			_ = os.Rename(tmp, filepath.Join(dir, "exit"))
		}
	})
	return nil
}

// Status implements dataplane.JobRunner.
func (j *Jobs) Status(ctx context.Context, name string) (dataplane.JobStatus, error) {
	dir, err := j.dir(name)
	if err != nil {
		return dataplane.JobStatus{}, err
	}
	j.mu.Lock()
	p := j.procs[name]
	j.mu.Unlock()
	if p != nil {
		select {
		case <-p.done:
		default:
			return dataplane.JobStatus{State: dataplane.JobRunning}, nil
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "exit"))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			return dataplane.JobStatus{State: dataplane.JobAbsent}, nil
		}
		return dataplane.JobStatus{State: dataplane.JobFailed, ExitCode: -1,
			Message: "the job's runner stopped while it ran"}, nil
	case err != nil:
		return dataplane.JobStatus{}, fmt.Errorf("local: job %s: %w", name, err)
	}
	code, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return dataplane.JobStatus{}, fmt.Errorf("local: job %s: exit code %q", name, b)
	}
	if code == 0 {
		return dataplane.JobStatus{State: dataplane.JobSucceeded}, nil
	}
	return dataplane.JobStatus{State: dataplane.JobFailed, ExitCode: code, Message: lastLine(filepath.Join(dir, "log"))}, nil
}

// lastLine returns the last non-empty line of file, or "".
func lastLine(file string) string {
	b, err := os.ReadFile(file)
	if err != nil {
		return ""
	}
	var last string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			last = l
		}
	}
	return last
}

// Remove implements dataplane.JobRunner: a running job is killed and
// reaped, then its directory removed.
func (j *Jobs) Remove(ctx context.Context, name string) error {
	dir, err := j.dir(name)
	if err != nil {
		return err
	}
	j.mu.Lock()
	p := j.procs[name]
	delete(j.procs, name)
	j.mu.Unlock()
	if p != nil {
		j.kill(p)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("local: remove job %s: %w", name, err)
	}
	return nil
}

// kill kills p and waits until it is reaped.
func (j *Jobs) kill(p *jobProc) {
	_ = p.cmd.Process.Kill()
	<-p.done
	_ = p.pipe.Close()
}

// Close kills every job that runs and waits until each is reaped. The jobs'
// directories stay: a runner on the same Dir reports them lost.
func (j *Jobs) Close() error {
	j.mu.Lock()
	procs := make([]*jobProc, 0, len(j.procs))
	for _, p := range j.procs {
		procs = append(procs, p)
	}
	j.mu.Unlock()
	for _, p := range procs {
		j.kill(p)
	}
	j.wg.Wait()
	return nil
}

// runJob runs the storage job when the process was started as one by
// [Jobs], and exits with its exit code; otherwise it returns at once.
func runJob() {
	command := os.Getenv(envJob)
	if command == "" {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin) // the runner holds the other end
		cancel()
	}()
	os.Exit(storagejob.Main(ctx, []string{command, "-data", os.Getenv(envJobData)}, os.Getenv, os.Stderr))
}
