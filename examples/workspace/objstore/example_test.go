package objstore_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

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

// ExampleNewS3 opens a store on a bucket of an S3-compatible server, creating
// the bucket when it is missing. It needs a server, so it only compiles here;
// the tests run the same code against the server that `make test` starts.
func ExampleNewS3() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	objects, err := objstore.NewS3(ctx, objstore.S3Config{
		Endpoint:     "http://127.0.0.1:7070",
		Bucket:       "workspaces",
		AccessKey:    os.Getenv("AWS_ACCESS_KEY_ID"),
		SecretKey:    os.Getenv("AWS_SECRET_ACCESS_KEY"),
		CreateBucket: true,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer objects.Close()
	_ = objects.Put(ctx, "ws1/op1/home.tar.zst", strings.NewReader("archive"))
}
