package local_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/examples/workspace/archive"
	"github.com/tendhq/tend/examples/workspace/dataplane"
	"github.com/tendhq/tend/examples/workspace/dataplane/dataplanetest"
	"github.com/tendhq/tend/examples/workspace/local"
	"github.com/tendhq/tend/examples/workspace/storagejob"
)

// hangingS3 returns the address of a server that accepts connections and
// never answers: a storage job on an s3:// archive it serves runs until it
// is killed.
func hangingS3(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var conns []net.Conn
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + ln.Addr().String()
}

// newJobs returns a runner of jobs in dir on volumes under dir/volumes,
// closed when the test ends.
func newJobs(t *testing.T, dir string, creds storagejob.Credentials) *local.Jobs {
	t.Helper()
	jobs, err := local.NewJobs(local.JobsConfig{Dir: filepath.Join(dir, "jobs"), Credentials: creds,
		Volume: func(id string) string { return filepath.Join(dir, "volumes", id) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { jobs.Close() })
	return jobs
}

// status returns the status of job name, failing the test on an error.
func status(t *testing.T, jobs *local.Jobs, name string) dataplane.JobStatus {
	t.Helper()
	st, err := jobs.Status(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// environ returns the environment of the running process whose TMPDIR is
// scratch, read from /proc.
func environ(t *testing.T, scratch string) []string {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		procs, _ := filepath.Glob("/proc/[0-9]*/environ")
		for _, p := range procs {
			b, err := os.ReadFile(p)
			if err != nil {
				continue
			}
			env := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
			if slices.Contains(env, "TMPDIR="+scratch) {
				return env
			}
		}
	}
	t.Fatalf("no process has TMPDIR=%s", scratch)
	return nil
}

// TestJobIsolated: a storage job is a process whose environment holds the
// job's variables and nothing of its runner's (no store address, no
// credentials but the object storage's), with its own scratch directory; a
// job runs once however often it is started, and Remove kills it.
func TestJobIsolated(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads a process's environment from /proc")
	}
	t.Setenv("TEND_STORE_DSN", "postgres://controller:secret@db/tend") // the runner's own
	dir := t.TempDir()
	creds := storagejob.Credentials{Endpoint: hangingS3(t), AccessKey: "job", SecretKey: "job-secret"}
	jobs := newJobs(t, dir, creds)
	ctx := context.Background()
	if err := os.MkdirAll(filepath.Join(dir, "volumes", "w1"), 0o755); err != nil {
		t.Fatal(err)
	}
	key := archive.Key("w1", "op1")
	job := dataplane.Job{Name: dataplane.JobName("w1", storagejob.Archive, key), Command: storagejob.Archive,
		WorkspaceID: "w1", ArchiveURL: "s3://bucket/" + key}
	for range 2 {
		if err := jobs.Start(ctx, job); err != nil {
			t.Fatal(err)
		}
	}
	if st := status(t, jobs, job.Name); st.State != dataplane.JobRunning {
		t.Fatalf("status %+v, want running", st)
	}
	scratch := filepath.Join(dir, "jobs", job.Name, "scratch")
	env := environ(t, scratch)
	var names []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		names = append(names, name)
	}
	slices.Sort(names)
	want := []string{storagejob.EnvEndpoint, storagejob.EnvAccessKey, storagejob.EnvSecretKey, storagejob.EnvArchiveURL,
		"TEND_WORKSPACE_JOB", "TEND_WORKSPACE_JOB_DATA", "TMPDIR"}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("the job's environment holds %v, want %v", names, want)
	}
	if !slices.Contains(env, storagejob.EnvArchiveURL+"="+job.ArchiveURL) ||
		!slices.Contains(env, "TEND_WORKSPACE_JOB_DATA="+filepath.Join(dir, "volumes", "w1")) {
		t.Errorf("the job's environment %v lacks its archive or its volume", env)
	}
	if err := jobs.Remove(ctx, job.Name); err != nil {
		t.Fatal(err)
	}
	if st := status(t, jobs, job.Name); st.State != dataplane.JobAbsent {
		t.Fatalf("status after Remove %+v, want absent", st)
	}
	if _, err := os.Stat(filepath.Join(dir, "jobs", job.Name)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Remove left the job's directory: %v", err)
	}
}

// TestJobLostWithItsRunner: a job whose runner stopped while it ran is
// reported failed, without an exit code, by the runner that follows on the
// same directory, which does not start it again until it is removed.
func TestJobLostWithItsRunner(t *testing.T) {
	dir := t.TempDir()
	creds := storagejob.Credentials{Endpoint: hangingS3(t)}
	ctx := context.Background()
	if err := os.MkdirAll(filepath.Join(dir, "volumes", "w1"), 0o755); err != nil {
		t.Fatal(err)
	}
	job := dataplane.Job{Name: "ws-w1-archive-0123456789", Command: storagejob.Archive, WorkspaceID: "w1",
		ArchiveURL: "s3://bucket/" + archive.Key("w1", "op1")}
	first := newJobs(t, dir, creds)
	if err := first.Start(ctx, job); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	second := newJobs(t, dir, creds)
	st := status(t, second, job.Name)
	if st.State != dataplane.JobFailed || st.ExitCode != -1 {
		t.Fatalf("status of a lost job %+v, want failed with exit code -1", st)
	}
	if err := second.Start(ctx, job); err != nil {
		t.Fatal(err)
	}
	if st := status(t, second, job.Name); st.State != dataplane.JobFailed {
		t.Fatalf("status after Start of a lost job %+v, want still failed, until removed", st)
	}
	if err := second.Remove(ctx, job.Name); err != nil {
		t.Fatal(err)
	}
	if err := second.Start(ctx, job); err != nil {
		t.Fatal(err)
	}
	if st := status(t, second, job.Name); st.State != dataplane.JobRunning {
		t.Fatalf("status after Remove and Start %+v, want running", st)
	}
}

// TestJobFailures: a job's exit code and last line of output are reported;
// a restore from a missing archive fails for good (exit code 2), and the
// storage provider says so with a terminal error.
func TestJobFailures(t *testing.T) {
	ctx := context.Background()
	st, _ := newBackends(t)
	if err := st.Provision(ctx, "w1"); err != nil {
		t.Fatal(err)
	}
	key := archive.Key("w1", "gone")
	_, err := dataplanetest.Exited(t, func() (string, error) { return st.Restore(ctx, "w1", key) })
	if !errors.Is(err, dataplane.ErrJobFailed) || !errors.Is(err, controller.ErrTerminal) ||
		!strings.Contains(err.Error(), "exited with 2") || !strings.Contains(err.Error(), key) {
		t.Fatalf("Restore of a missing archive: %v, want a terminal ErrJobFailed, exit code 2, naming the archive", err)
	}

	dir := t.TempDir()
	jobs := newJobs(t, dir, storagejob.Credentials{})
	bad := dataplane.Job{Name: "bad", Command: "unpack", WorkspaceID: "w1", ArchiveURL: "file:///x/w1/op1/" + archive.Name}
	if err := jobs.Start(ctx, bad); err != nil {
		t.Fatal(err)
	}
	var s dataplane.JobStatus
	for s = status(t, jobs, bad.Name); s.State == dataplane.JobRunning; s = status(t, jobs, bad.Name) {
		time.Sleep(10 * time.Millisecond)
	}
	if s.State != dataplane.JobFailed || s.ExitCode != storagejob.ExitTerminal || !strings.Contains(s.Message, `"unpack"`) {
		t.Fatalf("status of a job with an unknown command %+v, want failed with exit code 2 naming the command", s)
	}
	log, _ := os.ReadFile(filepath.Join(dir, "jobs", bad.Name, "log"))
	if !bytes.Contains(log, []byte("unpack")) {
		t.Errorf("the job's log %q does not say why it failed", log)
	}
}
