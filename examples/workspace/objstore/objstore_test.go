package objstore_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/tendhq/tend/examples/workspace/objstore"
)

func TestDir(t *testing.T) {
	ctx := context.Background()
	d, err := objstore.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Head(ctx, "ws1/a/home.tar.zst"); !errors.Is(err, objstore.ErrNotFound) {
		t.Fatalf("Head of a missing object: %v, want ErrNotFound", err)
	}
	if _, err := d.Get(ctx, "ws1/a/home.tar.zst"); !errors.Is(err, objstore.ErrNotFound) {
		t.Fatalf("Get of a missing object: %v, want ErrNotFound", err)
	}
	for _, k := range []string{"ws1/a/home.tar.zst", "ws1/a/home.tar.zst.meta", "ws2/b/home.tar.zst"} {
		if err := d.Put(ctx, k, strings.NewReader("data of "+k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Put(ctx, "ws1/a/home.tar.zst", strings.NewReader("new")); err != nil {
		t.Fatal(err)
	}
	info, err := d.Head(ctx, "ws1/a/home.tar.zst")
	if err != nil || info.Size != 3 {
		t.Fatalf("Head after overwrite: %+v, %v", info, err)
	}
	r, err := d.Get(ctx, "ws1/a/home.tar.zst")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r)
	r.Close()
	if string(b) != "new" {
		t.Fatalf("Get = %q", b)
	}
	list, err := d.List(ctx, "ws1/")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Key != "ws1/a/home.tar.zst" || list[1].Key != "ws1/a/home.tar.zst.meta" {
		t.Fatalf("List(ws1/) = %+v", list)
	}
	for range 2 { // deleting a missing object is no error
		if err := d.Delete(ctx, "ws2/b/home.tar.zst"); err != nil {
			t.Fatal(err)
		}
	}
	if all, _ := d.List(ctx, ""); len(all) != 2 {
		t.Fatalf("List after delete = %+v", all)
	}
}

func TestDirFailedPutKeepsPreviousObject(t *testing.T) {
	ctx := context.Background()
	d, err := objstore.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Put(ctx, "k/v", strings.NewReader("old")); err != nil {
		t.Fatal(err)
	}
	broken := io.MultiReader(strings.NewReader("partial"), errReader{})
	if err := d.Put(ctx, "k/v", broken); err == nil {
		t.Fatal("Put from a failing reader succeeded")
	}
	r, err := d.Get(ctx, "k/v")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if b, _ := io.ReadAll(r); string(b) != "old" {
		t.Fatalf("after a failed Put the object is %q, want the previous one", b)
	}
	if all, _ := d.List(ctx, ""); len(all) != 1 {
		t.Fatalf("a failed Put left objects behind: %+v", all)
	}
}

func TestValidateKey(t *testing.T) {
	for _, k := range []string{"", "/abs", "a//b", "a/../b", "./a", "a/.uploads/b", "a\\b"} {
		if err := objstore.ValidateKey(k); !errors.Is(err, objstore.ErrInvalidKey) {
			t.Errorf("ValidateKey(%q) = %v, want ErrInvalidKey", k, err)
		}
	}
	if err := objstore.ValidateKey("ws/op/home.tar.zst.meta"); err != nil {
		t.Error(err)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("connection reset") }
