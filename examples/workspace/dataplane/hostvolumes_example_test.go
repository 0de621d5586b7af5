package dataplane_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tendhq/tend/examples/workspace/archive"
	"github.com/tendhq/tend/examples/workspace/dataplane"
	"github.com/tendhq/tend/examples/workspace/objstore"
)

// A backend whose volumes are directories on this host supplies where each
// volume is and how its restore marker is kept; HostVolumes archives and
// restores them.
func ExampleHostVolumes() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "volumes")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	objects, err := objstore.NewDir(filepath.Join(dir, "objects"))
	if err != nil {
		fmt.Println(err)
		return
	}
	jobs, err := archive.New(archive.Config{Objects: objects, Scratch: filepath.Join(dir, "jobs")})
	if err != nil {
		fmt.Println(err)
		return
	}
	home := filepath.Join(dir, "ws-w1-home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		fmt.Println(err)
		return
	}
	markers := map[string]string{}
	hv, err := dataplane.NewHostVolumes(dataplane.HostVolumesConfig{
		Jobs: jobs,
		Dir:  func(_ context.Context, id string) (string, error) { return filepath.Join(dir, "ws-"+id+"-home"), nil },
		Mark: func(_ context.Context, id, key string) error { markers[id] = key; return nil },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	key, err := hv.Archive(ctx, "w1", "op1")
	fmt.Println(key, err)
	marker, err := hv.Restore(ctx, "w1", key)
	fmt.Println(marker, markers["w1"], err)
	// Output:
	// w1/op1/home.tar.zst <nil>
	// w1/op1/home.tar.zst w1/op1/home.tar.zst <nil>
}
