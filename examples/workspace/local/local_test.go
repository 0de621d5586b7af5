package local_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tendhq/tend/examples/workspace/dataplane/dataplanetest"
	"github.com/tendhq/tend/examples/workspace/local"
	"github.com/tendhq/tend/examples/workspace/objstore"
)

func newBackends(t *testing.T) (*local.Storage, *local.Instances) {
	t.Helper()
	dir := t.TempDir()
	objects, err := objstore.NewDir(filepath.Join(dir, "objects"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := local.NewStorage(local.StorageConfig{Dir: dir, Objects: objects})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	in, err := local.NewInstances(local.InstancesConfig{Dir: filepath.Join(dir, "run"), Volume: st.VolumeDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close() })
	return st, in
}

// TestInstancesIdempotent: start on a running container is a no-op, start on
// a container that is not running cleans up and recreates, delete of a
// missing container is a no-op, and no container starts without its volume.
func TestInstancesIdempotent(t *testing.T) {
	ctx := context.Background()
	st, in := newBackends(t)
	if err := in.Start(ctx, "w1", "img"); !errors.Is(err, local.ErrNoVolume) {
		t.Fatalf("Start without a volume: %v, want ErrNoVolume", err)
	}
	if err := st.Provision(ctx, "w1"); err != nil {
		t.Fatal(err)
	}
	if err := in.Start(ctx, "w1", "img"); err != nil {
		t.Fatal(err)
	}
	addr := in.Addr("w1")
	if err := in.Start(ctx, "w1", "img"); err != nil || in.Addr("w1") != addr {
		t.Fatalf("second Start: %v, address %s → %s; want a no-op", err, addr, in.Addr("w1"))
	}
	// The home is served: write through the container, read from the volume.
	req, _ := http.NewRequest(http.MethodPut, "http://"+addr+"/docs/hello.txt", strings.NewReader("hi"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("PUT: %v %v", resp, err)
	}
	resp.Body.Close()
	if b, _ := os.ReadFile(filepath.Join(st.VolumeDir("w1"), "docs", "hello.txt")); string(b) != "hi" {
		t.Fatalf("file in the volume = %q", b)
	}
	resp, err = http.Get("http://" + addr + "/docs/hello.txt")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "hi" {
		t.Fatalf("GET = %q", b)
	}
	http.DefaultClient.CloseIdleConnections()

	// Simulate a crashed container: it no longer answers; Start recreates it.
	if err := in.Kill("w1"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := in.IsRunning(ctx, "w1"); ok {
		t.Fatal("a killed container is running")
	}
	if err := in.Start(ctx, "w1", "img"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := in.IsRunning(ctx, "w1"); !ok {
		t.Fatal("restarted container not running")
	}
	for range 2 {
		if err := in.Delete(ctx, "w1"); err != nil {
			t.Fatal(err)
		}
	}
	if ok, _ := in.IsRunning(ctx, "w1"); ok {
		t.Fatal("deleted container still running")
	}
}

// TestStorageIdempotent: provision, archive, delete and restore, each
// repeated, with each archive and restore a child process.
func TestStorageIdempotent(t *testing.T) {
	ctx := context.Background()
	st, _ := newBackends(t)
	for range 2 {
		if err := st.Provision(ctx, "w1"); err != nil {
			t.Fatal(err)
		}
	}
	key := dataplanetest.ArchiveTwice(t, st, "w1", func(name string) string { return filepath.Join(st.VolumeDir("w1"), name) })
	for range 2 {
		if err := st.DeleteVolume(ctx, "w1"); err != nil {
			t.Fatal(err)
		}
	}
	if ok, _ := st.VolumeExists(ctx, "w1"); ok {
		t.Fatal("volume exists after DeleteVolume")
	}
	dataplanetest.RestoreTwice(t, st, "w1", key)
	dataplanetest.CheckRestoredThenDelete(t, st, "w1", func(name string) string { return filepath.Join(st.VolumeDir("w1"), name) })
}
