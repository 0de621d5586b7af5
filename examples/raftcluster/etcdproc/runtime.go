package etcdproc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"
)

// EnvMember is the environment variable that carries a child's [Member]
// configuration, as JSON.
const EnvMember = "TEND_RAFTCLUSTER_MEMBER"

// Errors returned by a Runtime.
var (
	// ErrInvalidConfig is returned, wrapped with the reason, by [New] and by
	// [Runtime.Start] for a member it cannot run.
	ErrInvalidConfig = errors.New("etcdproc: invalid config")
	// ErrClosed is returned by [Runtime.Start] after [Runtime.Close].
	ErrClosed = errors.New("etcdproc: runtime closed")
)

// Member is what one etcd member needs to run: the flags etcd is started
// with.
type Member struct {
	// Name is the member's name in the cluster ("m3"). Required.
	Name string `json:"name"`
	// DataDir holds the member's write-ahead log and snapshots; it survives
	// restarts. Required.
	DataDir string `json:"dataDir"`
	// PeerURL and ClientURL are the loopback URLs the member listens and
	// advertises on ("http://127.0.0.1:23801"). Required.
	PeerURL   string `json:"peerURL"`
	ClientURL string `json:"clientURL"`
	// InitialCluster is etcd's --initial-cluster: name=peerURL pairs of every
	// member of the cluster the member first joins, itself included. It is
	// read only when DataDir is empty. Required.
	InitialCluster string `json:"initialCluster"`
	// ClusterState is "new" for a member of the first membership and
	// "existing" for one that joins a running cluster.
	ClusterState string `json:"clusterState"`
	// Token is etcd's --initial-cluster-token.
	Token string `json:"token,omitempty"`
	// TickMs and ElectionMs are etcd's heartbeat interval and election
	// timeout. Zero means 100 and 1000, suited to loopback.
	TickMs     uint `json:"tickMs,omitempty"`
	ElectionMs uint `json:"electionMs,omitempty"`
}

func (m *Member) validate() error {
	switch {
	case m.Name == "", m.DataDir == "", m.PeerURL == "", m.ClientURL == "", m.InitialCluster == "":
		return fmt.Errorf("%w: member needs a name, a data directory, peer and client URLs and an initial cluster", ErrInvalidConfig)
	case m.ClusterState != "new" && m.ClusterState != "existing":
		return fmt.Errorf("%w: cluster state %q is neither new nor existing", ErrInvalidConfig, m.ClusterState)
	}
	return nil
}

// Config configures a Runtime.
type Config struct {
	// Executable is the program started as a child. Empty means the current
	// executable (os.Executable), which must call [RunChildIfRequested].
	Executable string
	// LogDir receives one log file per member, named after the member's key
	// with slashes replaced by underscores. Empty means the children's output
	// is discarded.
	LogDir string
	// StopTimeout is how long Stop waits after SIGTERM before it sends
	// SIGKILL. Zero means 10 seconds.
	StopTimeout time.Duration
	// Logger receives the runtime's logs. Nil means no logs.
	Logger *zap.Logger
}

// Runtime runs etcd members as child processes, each under a key chosen by
// the caller. It is safe for concurrent use.
type Runtime struct {
	exe         string
	logDir      string
	stopTimeout time.Duration
	log         *zap.Logger
	exited      chan string
	wg          sync.WaitGroup // the goroutines waiting on children

	mu     sync.Mutex // guards procs, closed and starts
	procs  map[string]*proc
	closed bool
	starts map[string]int
}

// proc is one running child.
type proc struct {
	cmd      *exec.Cmd
	done     chan struct{} // closed when the child has exited
	stopping bool          // set by Stop, so the exit is not reported
}

// New returns a runtime configured by cfg. It starts nothing.
func New(cfg Config) (*Runtime, error) {
	exe := cfg.Executable
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
		}
	}
	if cfg.StopTimeout < 0 {
		return nil, fmt.Errorf("%w: negative stop timeout", ErrInvalidConfig)
	}
	r := &Runtime{
		exe:         exe,
		logDir:      cfg.LogDir,
		stopTimeout: cfg.StopTimeout,
		log:         cfg.Logger,
		exited:      make(chan string, 64),
		procs:       map[string]*proc{},
		starts:      map[string]int{},
	}
	if r.stopTimeout == 0 {
		r.stopTimeout = 10 * time.Second
	}
	if r.log == nil {
		r.log = zap.NewNop()
	}
	return r, nil
}

// Exited reports the key of each member that exited without being stopped
// (killed, crashed, or refused by its cluster). It is closed by Close.
func (r *Runtime) Exited() <-chan string { return r.exited }

// Start starts the member under key, unless it is running. It returns once
// the process has started, not once the member serves: a joining member
// serves only after it has caught up with its cluster.
func (r *Runtime) Start(key string, m Member) error {
	if err := m.validate(); err != nil {
		return err
	}
	conf, err := json.Marshal(m)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrClosed
	}
	if _, ok := r.procs[key]; ok {
		return nil
	}
	if err := os.MkdirAll(m.DataDir, 0o700); err != nil {
		return err
	}
	cmd := exec.Command(r.exe)
	cmd.Env = append(os.Environ(), EnvMember+"="+string(conf))
	cmd.SysProcAttr = sysProcAttr()
	var logFile *os.File
	if r.logDir != "" {
		name := filepath.Join(r.logDir, filepath.Base(filepath.Clean("/"+key))+".log")
		if logFile, err = os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err != nil {
			return err
		}
		cmd.Stdout, cmd.Stderr = logFile, logFile
	}
	err = cmd.Start()
	if logFile != nil {
		logFile.Close() // the child holds its own descriptor
	}
	if err != nil {
		return fmt.Errorf("etcdproc: start %s: %w", key, err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	r.procs[key] = p
	r.starts[key]++
	r.log.Info("member started", zap.String("key", key), zap.Int("pid", cmd.Process.Pid))
	r.wg.Add(1)
	go r.wait(key, p)
	return nil
}

// wait reaps the child and reports an exit nobody asked for.
func (r *Runtime) wait(key string, p *proc) {
	defer r.wg.Done()
	err := p.cmd.Wait()
	r.mu.Lock()
	if r.procs[key] == p {
		delete(r.procs, key)
	}
	report := !p.stopping && !r.closed
	r.mu.Unlock()
	close(p.done)
	if report {
		r.log.Warn("member exited", zap.String("key", key), zap.Error(err))
		select {
		case r.exited <- key:
		default: // a reader that fell 64 exits behind learns of them by polling
			r.log.Warn("member exit not reported: nobody is reading", zap.String("key", key))
		}
	}
}

// Stop stops the member under key with SIGTERM and waits until it has
// exited; if ctx ends first it sends SIGKILL and still waits. A member that
// is not running is already stopped.
func (r *Runtime) Stop(ctx context.Context, key string) error {
	r.mu.Lock()
	p, ok := r.procs[key]
	if ok {
		p.stopping = true
	}
	r.mu.Unlock()
	if !ok {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(r.stopTimeout)
	defer t.Stop()
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
	case <-t.C:
	}
	_ = p.cmd.Process.Kill()
	<-p.done
	return ctx.Err()
}

// Kill kills the member under key with SIGKILL, as a crash would, and waits
// until it has exited. The exit is reported on Exited. It returns false if
// the member was not running.
func (r *Runtime) Kill(key string) bool {
	r.mu.Lock()
	p, ok := r.procs[key]
	r.mu.Unlock()
	if !ok {
		return false
	}
	_ = p.cmd.Process.Kill()
	<-p.done
	return true
}

// Running reports whether the member under key is running.
func (r *Runtime) Running(key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.procs[key]
	return ok
}

// PID returns the process id of the member under key, or 0 if it is not
// running.
func (r *Runtime) PID(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.procs[key]; ok {
		return p.cmd.Process.Pid
	}
	return 0
}

// Starts returns how many times the member under key was started.
func (r *Runtime) Starts(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.starts[key]
}

// Close stops every member (SIGTERM, then SIGKILL after the stop timeout),
// waits for every goroutine the runtime started and closes Exited.
// Start fails with ErrClosed afterwards.
func (r *Runtime) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	keys := make([]string, 0, len(r.procs))
	for k := range r.procs {
		keys = append(keys, k)
	}
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, k := range keys {
		wg.Go(func() { _ = r.Stop(context.Background(), k) })
	}
	wg.Wait()
	r.wg.Wait()
	close(r.exited)
	return nil
}
