package local_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tendhq/tend/examples/workspace/local"
	"github.com/tendhq/tend/examples/workspace/objstore"
)

// ExampleStorage provisions a volume, archives it, deletes it and restores
// it into a new one.
func ExampleStorage() {
	dir, _ := os.MkdirTemp("", "storage")
	defer os.RemoveAll(dir)
	objects, _ := objstore.NewDir(filepath.Join(dir, "objects"))
	storage, err := local.NewStorage(local.StorageConfig{Dir: dir, Objects: objects})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	_ = storage.Provision(ctx, "w1")
	_ = os.WriteFile(filepath.Join(storage.VolumeDir("w1"), "notes.txt"), []byte("hello"), 0o644)
	key, _ := storage.Archive(ctx, "w1", "op1")
	ready, _ := storage.ArchiveReady(ctx, key)
	fmt.Println(key, ready)
	_ = storage.DeleteVolume(ctx, "w1")
	exists, _ := storage.VolumeExists(ctx, "w1")
	fmt.Println("volume exists:", exists)
	_ = storage.Provision(ctx, "w1")
	marker, err := storage.Restore(ctx, "w1", key)
	fmt.Println("restored from", marker, err)
	b, _ := os.ReadFile(filepath.Join(storage.VolumeDir("w1"), "notes.txt"))
	fmt.Println(string(b))
	// Output:
	// w1/op1/home.tar.zst true
	// volume exists: false
	// restored from w1/op1/home.tar.zst <nil>
	// hello
}
