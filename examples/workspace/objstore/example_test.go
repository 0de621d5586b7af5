package objstore_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/tendhq/tend/examples/workspace/objstore"
)

// ExampleDir stores, lists and reads objects in a directory.
func ExampleDir() {
	dir, _ := os.MkdirTemp("", "objects")
	defer os.RemoveAll(dir)
	objects, err := objstore.NewDir(dir)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	_ = objects.Put(ctx, "ws1/op1/home.tar.zst", strings.NewReader("archive"))
	_ = objects.Put(ctx, "ws1/op1/home.tar.zst.meta", strings.NewReader("sha256:…"))
	list, _ := objects.List(ctx, "ws1/")
	for _, o := range list {
		fmt.Println(o.Key, o.Size)
	}
	r, _ := objects.Get(ctx, "ws1/op1/home.tar.zst")
	b, _ := io.ReadAll(r)
	r.Close()
	fmt.Println(string(b))
	// Output:
	// ws1/op1/home.tar.zst 7
	// ws1/op1/home.tar.zst.meta 10
	// archive
}
