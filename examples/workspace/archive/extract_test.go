package archive_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tendhq/tend/examples/workspace/archive"
)

// sandbox returns a target directory and a sentinel sibling, both empty.
func sandbox(t testing.TB) (parent, target, sentinel string) {
	parent = t.TempDir()
	target = filepath.Join(parent, "target")
	sentinel = filepath.Join(parent, "sentinel")
	for _, d := range []string{target, sentinel} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return parent, target, sentinel
}

// checkContained fails when anything exists beside target and sentinel,
// inside sentinel, or (after a successful extraction) when a link in target
// resolves outside it.
func checkContained(t testing.TB, parent, target, sentinel string, extracted bool) {
	t.Helper()
	entries, err := os.ReadDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Fatalf("written beside the target: %v", entries)
	}
	if s, _ := os.ReadDir(sentinel); len(s) != 0 {
		t.Fatalf("written into the sentinel directory: %v", s)
	}
	if !extracted {
		return
	}
	realTarget, _ := filepath.EvalSymlinks(target)
	_ = filepath.WalkDir(target, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink == 0 {
			return nil
		}
		resolved, err := filepath.EvalSymlinks(p)
		if err != nil {
			return nil // dangling or a loop: it leads nowhere
		}
		if rel, err := filepath.Rel(realTarget, resolved); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			t.Fatalf("link %s resolves outside the target, to %s", p, resolved)
		}
		return nil
	})
}

func TestExtractRefuses(t *testing.T) {
	for _, tc := range []struct {
		name    string
		entries []tar.Header
	}{
		{"absolute path", []tar.Header{file("/etc/evil", "x")}},
		{"dot-dot", []tar.Header{file("../evil", "x")}},
		{"dot-dot inside", []tar.Header{file("a/../../evil", "x")}},
		{"absolute link", []tar.Header{symlink("l", "/etc")}},
		{"escaping link", []tar.Header{symlink("a/l", "../../sentinel")}},
		{"write through a link", []tar.Header{symlink("l", "."), file("l/evil", "x")}},
		{"link chain escaping", []tar.Header{dir("d"), symlink("d/y", ".."), symlink("d/x", "y/../..")}},
		{"later link redirects an earlier one", []tar.Header{symlink("x", "y/../.."), dir("y"), symlink("y", "d/..")}},
		{"hard link outside", []tar.Header{hardlink("h", "../sentinel/f")}},
		{"hard link to a link", []tar.Header{symlink("l", "a"), hardlink("h", "l")}},
		{"hard link to a missing file", []tar.Header{hardlink("h", "nothing")}},
		{"character device", []tar.Header{{Typeflag: tar.TypeChar, Name: "null", Devmajor: 1, Devminor: 3}}},
		{"block device", []tar.Header{{Typeflag: tar.TypeBlock, Name: "sda", Devmajor: 8}}},
		{"fifo", []tar.Header{{Typeflag: tar.TypeFifo, Name: "pipe"}}},
		{"link loop", []tar.Header{symlink("a", "b/x"), symlink("b", "a/y")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent, target, sentinel := sandbox(t)
			err := archive.ExtractTar(context.Background(), bytes.NewReader(tarOf(t, tc.entries...)), target, archive.Limits{})
			if !errors.Is(err, archive.ErrUnsafe) {
				t.Fatalf("ExtractTar = %v, want ErrUnsafe", err)
			}
			checkContained(t, parent, target, sentinel, false)
		})
	}
}

func TestExtractAccepts(t *testing.T) {
	parent, target, sentinel := sandbox(t)
	data := zstdOf(t, tarOf(t,
		dir("./"), file("a/b/c.txt", "c"), symlink("a/up", "../a/b"), symlink("top", "a/up/c.txt"),
		hardlink("a/hard", "a/b/c.txt"), file("a/b/c.txt", "replaced"), symlink("dangling", "nowhere")))
	if err := archive.Extract(context.Background(), bytes.NewReader(data), target, archive.Limits{}); err != nil {
		t.Fatal(err)
	}
	checkContained(t, parent, target, sentinel, true)
	if b, err := os.ReadFile(filepath.Join(target, "top")); err != nil || string(b) != "replaced" {
		t.Fatalf("top = %q, %v", b, err)
	}
}

func TestExtractLimits(t *testing.T) {
	_, target, _ := sandbox(t)
	data := tarOf(t, file("a", strings.Repeat("x", 100)))
	if err := archive.ExtractTar(context.Background(), bytes.NewReader(data), target, archive.Limits{MaxBytes: 10}); !errors.Is(err, archive.ErrTooLarge) {
		t.Fatalf("ExtractTar over MaxBytes = %v, want ErrTooLarge", err)
	}
	_, target, _ = sandbox(t)
	data = tarOf(t, file("a", "1"), file("b", "2"))
	if err := archive.ExtractTar(context.Background(), bytes.NewReader(data), target, archive.Limits{MaxEntries: 1}); !errors.Is(err, archive.ErrTooLarge) {
		t.Fatalf("ExtractTar over MaxEntries = %v, want ErrTooLarge", err)
	}
}

// FuzzExtract feeds arbitrary bytes, as a tar stream and as a tar.zst
// stream, and checks that nothing is ever written outside the target
// directory, and that a successful extraction holds no link leading out.
func FuzzExtract(f *testing.F) {
	f.Add(tarOf(f, file("a.txt", "x"), symlink("l", "a.txt")))
	f.Add(tarOf(f, dir("d"), symlink("d/y", ".."), symlink("d/x", "y/../.."), file("d/x/evil", "x")))
	f.Add(tarOf(f, symlink("x", "y/../.."), dir("y"), symlink("y", "d/..")))
	f.Add(tarOf(f, symlink("l", "."), file("l/f", "x"), hardlink("h", "../sentinel/f")))
	f.Add(tarOf(f, file("../sentinel/evil", "x")))
	f.Add(zstdOf(f, tarOf(f, file("a/b", "c"), symlink("a/l", "../../sentinel"))))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		lim := archive.Limits{MaxBytes: 1 << 20, MaxEntries: 200}
		for _, extract := range []func(dir string) error{
			func(dir string) error {
				return archive.ExtractTar(context.Background(), bytes.NewReader(data), dir, lim)
			},
			func(dir string) error { return archive.Extract(context.Background(), bytes.NewReader(data), dir, lim) },
		} {
			parent, target, sentinel := sandbox(t)
			err := extract(target)
			checkContained(t, parent, target, sentinel, err == nil)
		}
	})
}
