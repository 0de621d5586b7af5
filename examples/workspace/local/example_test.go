package local_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/tendhq/tend/examples/workspace/dataplane"
	"github.com/tendhq/tend/examples/workspace/local"
	"github.com/tendhq/tend/examples/workspace/objstore"
)

// ExampleStorage provisions a volume, archives it, deletes it and restores
// it into a new one. Archive and Restore start a storage job, a child
// process, and report dataplane.ErrJobRunning until it has exited; the
// controller calls them again later, as exited does here. A job is the
// running program started again in job mode, so its main, here the test
// binary's TestMain, calls local.ServeIfContainer first.
func ExampleStorage() {
	dir, _ := os.MkdirTemp("", "storage")
	defer os.RemoveAll(dir)
	objects, _ := objstore.NewDir(filepath.Join(dir, "objects"))
	storage, err := local.NewStorage(local.StorageConfig{Dir: dir, Objects: objects})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer storage.Close() // kills the jobs that still run
	ctx := context.Background()
	exited := func(call func() (string, error)) (string, error) {
		for {
			key, err := call()
			if !errors.Is(err, dataplane.ErrJobRunning) {
				return key, err
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	_ = storage.Provision(ctx, "w1")
	_ = os.WriteFile(filepath.Join(storage.VolumeDir("w1"), "notes.txt"), []byte("hello"), 0o644)
	key, err := exited(func() (string, error) { return storage.Archive(ctx, "w1", "op1") })
	ready, _ := storage.ArchiveReady(ctx, key)
	fmt.Println(key, ready, err)
	_ = storage.DeleteVolume(ctx, "w1")
	exists, _ := storage.VolumeExists(ctx, "w1")
	fmt.Println("volume exists:", exists)
	_ = storage.Provision(ctx, "w1")
	marker, err := exited(func() (string, error) { return storage.Restore(ctx, "w1", key) })
	fmt.Println("restored from", marker, err)
	b, _ := os.ReadFile(filepath.Join(storage.VolumeDir("w1"), "notes.txt"))
	fmt.Println(string(b))
	// Output:
	// w1/op1/home.tar.zst true <nil>
	// volume exists: false
	// restored from w1/op1/home.tar.zst <nil>
	// hello
}
