package docker_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/moby/moby/client"

	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/examples/workspace/archive"
	"github.com/tendhq/tend/examples/workspace/dataplane"
	"github.com/tendhq/tend/examples/workspace/dataplane/dataplanetest"
	"github.com/tendhq/tend/examples/workspace/docker"
	"github.com/tendhq/tend/examples/workspace/local"
	"github.com/tendhq/tend/examples/workspace/storagejob"
)

func put(t *testing.T, addr, path, body string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, "http://"+addr+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	http.DefaultClient.CloseIdleConnections()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("PUT %s: %s", path, resp.Status)
	}
}

func get(t *testing.T, addr, path string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	http.DefaultClient.CloseIdleConnections()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %v", path, resp.Status, err)
	}
	return string(b)
}

func containerID(t *testing.T, cli *client.Client, id string) string {
	t.Helper()
	res, err := cli.ContainerInspect(context.Background(), local.ContainerName(id), client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return res.Container.ID
}

// TestInstancesIdempotent: no container starts without its volume; Start on
// a running container is a no-op; the container serves its Docker volume;
// Start after a crash (SIGKILL, container left behind) removes it and starts
// a new one; Delete of a missing container is a no-op and keeps the volume.
func TestInstancesIdempotent(t *testing.T) {
	ctx := context.Background()
	cli := engine(t)
	img := image(t, cli)
	id := dataplanetest.WorkspaceID()
	st, in, _ := newBackends(t, cli, id)

	if err := in.Start(ctx, id, img); !errors.Is(err, docker.ErrNoVolume) {
		t.Fatalf("Start without a volume: %v, want ErrNoVolume", err)
	}
	if _, err := cli.ContainerInspect(ctx, local.ContainerName(id), client.ContainerInspectOptions{}); err == nil {
		t.Fatal("Start without a volume created a container")
	}
	if err := st.Provision(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := in.Start(ctx, id, img); err != nil {
		t.Fatal(err)
	}
	first := containerID(t, cli, id)
	addr, err := in.Addr(ctx, id)
	if err != nil || addr == "" {
		t.Fatalf("Addr = %q, %v", addr, err)
	}
	if err := in.Start(ctx, id, img); err != nil {
		t.Fatal(err)
	}
	if again := containerID(t, cli, id); again != first {
		t.Fatalf("second Start replaced the running container %s by %s", first, again)
	}

	// Write through the container, read on the host from the volume.
	put(t, addr, "/docs/hello.txt", "hi")
	if b, err := os.ReadFile(volumeFile(t, st, id, "docs/hello.txt")); err != nil || string(b) != "hi" {
		t.Fatalf("file in the volume = %q, %v", b, err)
	}

	// A crash: the container stays, stopped. Start replaces it.
	if err := in.Kill(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := in.Kill(ctx, id); err != nil {
		t.Fatalf("Kill of a stopped container: %v", err)
	}
	if ok, err := in.IsRunning(ctx, id); ok || err != nil {
		t.Fatalf("IsRunning after a kill = %v, %v", ok, err)
	}
	if err := in.Start(ctx, id, img); err != nil {
		t.Fatal(err)
	}
	if containerID(t, cli, id) == first {
		t.Fatal("Start after a crash kept the dead container")
	}
	addr, _ = in.Addr(ctx, id)
	if got := get(t, addr, "/docs/hello.txt"); got != "hi" {
		t.Fatalf("after the restart GET = %q", got)
	}

	for range 2 {
		if err := in.Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if ok, err := in.IsRunning(ctx, id); ok || err != nil {
		t.Fatalf("IsRunning after Delete = %v, %v", ok, err)
	}
	if ok, err := st.VolumeExists(ctx, id); !ok || err != nil {
		t.Fatalf("Delete lost the volume: %v, %v", ok, err)
	}
}

// TestStartUnknownImage: a missing image fails Start without a container
// left running.
func TestStartUnknownImage(t *testing.T) {
	ctx := context.Background()
	cli := engine(t)
	id := dataplanetest.WorkspaceID()
	st, in, _ := newBackends(t, cli, id)
	if err := st.Provision(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := in.Start(ctx, id, "tend-workspace:missing"); err == nil {
		t.Fatal("Start with a missing image succeeded")
	}
	if ok, _ := in.IsRunning(ctx, id); ok {
		t.Fatal("a container runs")
	}
}

// TestStorageIdempotent: provision, archive, delete and restore on Docker
// volumes, each repeated; the restore marker follows the restore; a missing
// volume cannot be archived.
func TestStorageIdempotent(t *testing.T) {
	ctx := context.Background()
	cli := engine(t)
	id := dataplanetest.WorkspaceID()
	st, _, _ := newBackends(t, cli, id)

	if _, err := st.Archive(ctx, id, "op1"); !errors.Is(err, controller.ErrTerminal) || !errors.Is(err, archive.ErrNoSource) {
		t.Fatalf("Archive of a missing volume: %v, want terminal ErrNoSource", err)
	}
	for range 2 {
		if err := st.Provision(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	key := dataplanetest.ArchiveTwice(t, st, id, func(name string) string { return volumeFile(t, st, id, name) })
	for range 2 {
		if err := st.DeleteVolume(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if ok, err := st.VolumeExists(ctx, id); ok || err != nil {
		t.Fatalf("VolumeExists after DeleteVolume = %v, %v", ok, err)
	}

	dataplanetest.RestoreTwice(t, st, id, key)
	dataplanetest.CheckRestoredThenDelete(t, st, id, func(name string) string { return volumeFile(t, st, id, name) })
	for _, name := range []string{local.VolumeName(id), docker.MarkerName(id)} {
		if _, err := cli.VolumeInspect(ctx, name, client.VolumeInspectOptions{}); err == nil {
			t.Fatalf("volume %s left behind", name)
		}
	}
}

// TestConfigValidation: constructors refuse incomplete configs.
func TestConfigValidation(t *testing.T) {
	cli, err := client.New(client.WithHost("unix:///nonexistent.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	tests := []struct {
		name string
		err  func() error
	}{
		{"instances without client", func() error { _, err := docker.NewInstances(docker.InstancesConfig{}); return err }},
		{"instances negative timeout", func() error {
			_, err := docker.NewInstances(docker.InstancesConfig{Client: cli, StartTimeout: -1})
			return err
		}},
		{"storage without objects", func() error {
			_, err := docker.NewStorage(docker.StorageConfig{Client: cli, JobImage: testJobImage})
			return err
		}},
		{"import of a missing binary", func() error {
			return docker.ImportImage(context.Background(), cli, "x:y", "/nonexistent/server")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.err() == nil {
				t.Fatal("no error")
			}
		})
	}
}

// TestStorageJobIsolated: an archive runs as a container of the job image
// that knows only the archive's URL and the object storage's credentials
// (nothing of the store or the controller), mounts the workspace's volume
// and a scratch volume of its own and nothing else, has the volume to
// itself (neither a second job nor the workspace's container starts on it
// while it exists), and leaves nothing behind once its exit is seen.
func TestStorageJobIsolated(t *testing.T) {
	ctx := context.Background()
	cli := engine(t)
	id := dataplanetest.WorkspaceID()
	st, in, _ := newBackends(t, cli, id)
	img := image(t, cli)
	if err := st.Provision(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(volumeFile(t, st, id, "a.txt"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Archive(ctx, id, "op1"); !errors.Is(err, dataplane.ErrJobRunning) {
		t.Fatalf("first Archive: %v, want ErrJobRunning", err)
	}
	key := archive.Key(id, "op1")
	name := dataplane.JobName(id, storagejob.Archive, key)
	res, err := cli.ContainerInspect(ctx, name, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatalf("the job's container: %v", err)
	}
	job := res.Container
	allowed := map[string]bool{storagejob.EnvArchiveURL: true, storagejob.EnvEndpoint: true, storagejob.EnvAccessKey: true,
		storagejob.EnvSecretKey: true, storagejob.EnvRegion: true, "TMPDIR": true, "PATH": true}
	for _, kv := range job.Config.Env {
		if k, _, _ := strings.Cut(kv, "="); !allowed[k] {
			t.Errorf("the job's environment holds %s", k)
		}
	}
	var scratch string
	for _, m := range job.Mounts {
		switch {
		case m.Destination == storagejob.DataDir && m.Name == local.VolumeName(id):
		case m.Destination == docker.JobScratchDir && m.Name != "" && m.Name != local.VolumeName(id):
			scratch = m.Name
		default:
			t.Errorf("the job mounts %s at %s", m.Name, m.Destination)
		}
	}
	if scratch == "" {
		t.Errorf("the job has no scratch volume: %+v", job.Mounts)
	}
	if err := in.Start(ctx, id, img); !errors.Is(err, docker.ErrVolumeInUse) {
		t.Errorf("workspace container started beside the job: %v", err)
	}
	jobs, err := docker.NewJobs(docker.JobsConfig{Client: cli, Image: testJobImage})
	if err != nil {
		t.Fatal(err)
	}
	other := dataplane.Job{Name: name + "-other", Command: storagejob.Archive, WorkspaceID: id, ArchiveURL: "s3://b/" + key}
	if err := jobs.Start(ctx, other); !errors.Is(err, docker.ErrVolumeInUse) {
		t.Errorf("second job started on the volume: %v", err)
	}

	got, err := dataplanetest.Exited(t, func() (string, error) { return st.Archive(ctx, id, "op1") })
	if err != nil || got != key {
		t.Fatalf("Archive once the job exited = %q, %v", got, err)
	}
	if _, err := cli.ContainerInspect(ctx, name, client.ContainerInspectOptions{}); err == nil {
		t.Error("the job's container is left")
	}
	if _, err := cli.VolumeInspect(ctx, scratch, client.VolumeInspectOptions{}); err == nil {
		t.Error("the job's scratch volume is left")
	}
}
