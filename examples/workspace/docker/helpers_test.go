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

	"github.com/tendhq/tend/examples/internal/servertest"
	"github.com/tendhq/tend/examples/workspace/dataplane/dataplanetest"
	"github.com/tendhq/tend/examples/workspace/docker"
	"github.com/tendhq/tend/examples/workspace/local"
	"github.com/tendhq/tend/examples/workspace/objstore"
	"github.com/tendhq/tend/examples/workspace/objstore/objstoretest"
)

// The images the tests import.
const (
	testImage    = "tend-workspace:test"
	testJobImage = "tend-storage-job:test"
)

// engine returns a client of the engine at TEND_DOCKER_HOST, which make test
// starts. Without it the test fails under CI and is skipped otherwise.
func engine(t *testing.T) *client.Client {
	t.Helper()
	host := servertest.Env(t, "TEND_DOCKER_HOST", "docker")
	cli, err := client.New(client.WithHost(host))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

var (
	imagesOnce sync.Once
	imagesDir  string
	imagesErr  error
)

// images imports the workspace image and the job image once per test
// binary, from static builds of package server and of cmd/storage-job. It
// returns their references.
func images(t *testing.T, cli *client.Client) (workspace, job string) {
	t.Helper()
	imagesOnce.Do(func() {
		imagesDir, imagesErr = os.MkdirTemp("", "tend-workspace-images")
		if imagesErr != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		for _, img := range []struct {
			pkg, ref string
			load     func(context.Context, *client.Client, string, string) error
		}{
			{"./server", testImage, docker.ImportImage},
			{"../cmd/storage-job", testJobImage, docker.ImportJobImage},
		} {
			bin := filepath.Join(imagesDir, filepath.Base(img.pkg))
			cmd := exec.Command("go", "build", "-o", bin, img.pkg)
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				imagesErr = fmt.Errorf("build %s: %v\n%s", img.pkg, err, out)
				return
			}
			if imagesErr = img.load(ctx, cli, img.ref, bin); imagesErr != nil {
				return
			}
		}
	})
	if imagesErr != nil {
		t.Fatal(imagesErr)
	}
	return testImage, testJobImage
}

// image returns the workspace image, importing both images first.
func image(t *testing.T, cli *client.Client) string {
	t.Helper()
	img, _ := images(t, cli)
	return img
}

func removeImages() {
	if imagesDir != "" {
		os.RemoveAll(imagesDir)
	}
}

// newBackends returns Docker backends on cli that remove what workspace id
// left behind when the test ends.
// The archives go to a bucket of the test's S3 server, which the job
// containers reach on the host network.
func newBackends(t *testing.T, cli *client.Client, id string) (*docker.Storage, *docker.Instances, objstore.Store) {
	t.Helper()
	_, jobImage := images(t, cli)
	objects := objstoretest.S3(t)
	st, err := docker.NewStorage(docker.StorageConfig{Client: cli, Objects: objects, JobImage: jobImage, Credentials: objstoretest.S3Credentials()})
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
