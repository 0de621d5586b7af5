package docker_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/tendhq/tend/examples/workspace/dataplane/dataplanetest"
	"github.com/tendhq/tend/examples/workspace/docker"
	"github.com/tendhq/tend/examples/workspace/local"
	"github.com/tendhq/tend/examples/workspace/objstore"
)

// testImage is the workspace image the tests import.
const testImage = "tend-workspace:test"

// engine returns a client of the engine at TEND_DOCKER_HOST, which make test
// starts. Without it the test fails under CI and is skipped otherwise.
func engine(t *testing.T) *client.Client {
	t.Helper()
	host := dataplanetest.ServerEnv(t, "TEND_DOCKER_HOST",
		"TEND_DOCKER_HOST is unset under CI: scripts/servers/docker.sh did not start a Docker engine",
		"TEND_DOCKER_HOST is unset: run make test, which starts a Docker engine")
	cli, err := client.New(client.WithHost(host))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

var (
	serverOnce sync.Once
	serverDir  string
	serverErr  error
)

// image imports the workspace image once per test binary, from a static
// build of package server.
func image(t *testing.T, cli *client.Client) string {
	t.Helper()
	serverOnce.Do(func() {
		serverDir, serverErr = os.MkdirTemp("", "tend-workspace-server")
		if serverErr != nil {
			return
		}
		bin := filepath.Join(serverDir, "server")
		cmd := exec.Command("go", "build", "-o", bin, "./server")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			serverErr = fmt.Errorf("build the server: %v\n%s", err, out)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		serverErr = docker.ImportImage(ctx, cli, testImage, bin)
	})
	if serverErr != nil {
		t.Fatal(serverErr)
	}
	return testImage
}

func removeServer() {
	if serverDir != "" {
		os.RemoveAll(serverDir)
	}
}

// newBackends returns Docker backends on cli that remove what workspace id
// left behind when the test ends.
func newBackends(t *testing.T, cli *client.Client, id string) (*docker.Storage, *docker.Instances, objstore.Store) {
	t.Helper()
	dir := t.TempDir()
	objects, err := objstore.NewDir(filepath.Join(dir, "objects"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := docker.NewStorage(docker.StorageConfig{Client: cli, Objects: objects, Scratch: filepath.Join(dir, "jobs")})
	if err != nil {
		t.Fatal(err)
	}
	in, err := docker.NewInstances(docker.InstancesConfig{Client: cli})
	if err != nil {
		t.Fatal(err)
	}
	dataplanetest.Cleanup(t, id, in, st)
	return st, in, objects
}

// volumeFile returns the path of name in workspace id's volume on the host.
func volumeFile(t *testing.T, st *docker.Storage, id, name string) string {
	t.Helper()
	mp, err := st.Mountpoint(context.Background(), id)
	if err != nil || mp == "" {
		t.Fatalf("mountpoint of %s: %q %v", local.VolumeName(id), mp, err)
	}
	return filepath.Join(mp, name)
}
