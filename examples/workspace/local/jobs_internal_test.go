package local

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tendhq/tend/examples/workspace/dataplane"
	"github.com/tendhq/tend/examples/workspace/storagejob"
)

// A job ends on its own when its runner dies (the runner's end of the pipe
// it watches closes with the runner's process): it cancels its work and
// exits with storagejob.ExitRetry, rather than running on unwatched.
func TestJobExitsWhenItsRunnerDies(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never answers
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := t.TempDir()
	jobs, err := NewJobs(JobsConfig{Dir: filepath.Join(dir, "jobs"), Volume: func(string) string { return dir },
		Credentials: storagejob.Credentials{Endpoint: "http://" + ln.Addr().String()}})
	if err != nil {
		t.Fatal(err)
	}
	defer jobs.Close()
	job := dataplane.Job{Name: "ws-w1-archive-0123456789", Command: storagejob.Archive, WorkspaceID: "w1",
		ArchiveURL: "s3://bucket/w1/op1/home.tar.zst"}
	if err := jobs.Start(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	jobs.mu.Lock()
	p := jobs.procs[job.Name]
	jobs.mu.Unlock()
	_ = p.pipe.Close()
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		t.Fatal("the job runs on a minute after its runner's end of the pipe closed")
	}
	b, err := os.ReadFile(filepath.Join(dir, "jobs", job.Name, "exit"))
	if err != nil || strings.TrimSpace(string(b)) != "1" {
		t.Fatalf("exit code %q (%v), want 1: the job exits, it is not killed", b, err)
	}
}
