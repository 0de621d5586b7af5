package archive_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tendhq/tend/examples/workspace/archive"
	"github.com/tendhq/tend/examples/workspace/objstore"
)

// ExampleJobs archives a home directory under an operation's key and
// restores it into another directory, deleting what the archive lacks.
func ExampleJobs() {
	base, _ := os.MkdirTemp("", "jobs")
	defer os.RemoveAll(base)
	objects, _ := objstore.NewDir(filepath.Join(base, "objects"))
	jobs, err := archive.New(archive.Config{Objects: objects, Scratch: filepath.Join(base, "scratch")})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	home := filepath.Join(base, "home")
	_ = os.MkdirAll(home, 0o755)
	_ = os.WriteFile(filepath.Join(home, "notes.txt"), []byte("hello"), 0o644)

	key := archive.Key("ws1", "op1")
	res, err := jobs.Archive(ctx, key, home)
	fmt.Println(key, res.Skipped, err)
	res, err = jobs.Archive(ctx, key, home) // the HEAD check finds it complete
	fmt.Println(key, res.Skipped, err)

	restored := filepath.Join(base, "restored")
	_ = os.MkdirAll(restored, 0o755)
	_ = os.WriteFile(filepath.Join(restored, "stale.txt"), []byte("x"), 0o644)
	fmt.Println(jobs.Restore(ctx, key, restored))
	entries, _ := os.ReadDir(restored)
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(restored, e.Name()))
		fmt.Printf("%s: %s\n", e.Name(), b)
	}
	// Output:
	// ws1/op1/home.tar.zst false <nil>
	// ws1/op1/home.tar.zst true <nil>
	// <nil>
	// notes.txt: hello
}
