package archive_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tendhq/tend/examples/workspace/archive"
)

// sandbox returns a target directory and a sentinel sibling, both empty.
func sandbox(t testing.TB) (parent, target, sentinel string) {
	parent, err := os.MkdirTemp("", "sandbox")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(parent) })
	target = filepath.Join(parent, "target")
	sentinel = filepath.Join(parent, "sentinel")
	for _, d := range []string{target, sentinel} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return parent, target, sentinel
}

// checkContained fails when anything exists beside target and sentinel, or
// inside sentinel.
func checkContained(t testing.TB, parent, target, sentinel string) {
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
}

func TestExtractRefuses(t *testing.T) {
	for _, tc := range []struct {
		name    string
		entries []tar.Header
	}{
		{"absolute path", []tar.Header{file("/etc/evil", "x")}},
		{"dot-dot", []tar.Header{file("../evil", "x")}},
		{"dot-dot inside", []tar.Header{file("a/../../evil", "x")}},
		{"write through an absolute link", []tar.Header{symlink("l", "/tmp"), file("l/evil", "x")}},
		{"write through an escaping link", []tar.Header{symlink("a/l", "../../sentinel"), file("a/l/evil", "x")}},
		{"directory through an escaping link", []tar.Header{symlink("l", "../sentinel"), dir("l/d")}},
		{"write through a link chain escaping", []tar.Header{dir("d"), symlink("d/y", ".."), symlink("d/x", "y/.."), file("d/x/sentinel/evil", "x")}},
		{"write through a link a later link redirects", []tar.Header{symlink("x", "y/.."), dir("y"), symlink("y", "d/.."), file("x/sentinel/evil", "x")}},
		{"hard link outside", []tar.Header{hardlink("h", "../sentinel/f")}},
		{"hard link through an escaping link", []tar.Header{symlink("l", "../sentinel"), hardlink("h", "l/f")}},
		{"hard link to a link", []tar.Header{symlink("l", "a"), hardlink("h", "l")}},
		{"hard link to a missing file", []tar.Header{hardlink("h", "nothing")}},
		{"character device", []tar.Header{{Typeflag: tar.TypeChar, Name: "null", Devmajor: 1, Devminor: 3}}},
		{"block device", []tar.Header{{Typeflag: tar.TypeBlock, Name: "sda", Devmajor: 8}}},
		{"fifo", []tar.Header{{Typeflag: tar.TypeFifo, Name: "pipe"}}},
		{"write through a link loop", []tar.Header{symlink("a", "b/x"), symlink("b", "a/y"), file("a/f", "x")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent, target, sentinel := sandbox(t)
			err := archive.ExtractTar(context.Background(), bytes.NewReader(tarOf(t, tc.entries...)), target, archive.Limits{})
			if !errors.Is(err, archive.ErrUnsafe) {
				t.Fatalf("ExtractTar = %v, want ErrUnsafe", err)
			}
			checkContained(t, parent, target, sentinel)
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
	checkContained(t, parent, target, sentinel)
	if b, err := os.ReadFile(filepath.Join(target, "top")); err != nil || string(b) != "replaced" {
		t.Fatalf("top = %q, %v", b, err)
	}
}

// Only writes that would land outside the target are refused: links are
// data, whatever they point at, and a write through a link that stays inside
// lands inside.
func TestExtractAcceptsWhatStaysInside(t *testing.T) {
	for _, tc := range []struct {
		name    string
		entries []tar.Header
		want    map[string]string // paths under the target → content, or "link:" target
	}{
		{"a name with a colon", []tar.Header{file("c:notes", "x"), file("a/b:c", "y")},
			map[string]string{"c:notes": "x", "a/b:c": "y"}},
		{"links pointing anywhere", []tar.Header{symlink("abs", "/etc/passwd"), symlink("up", "../../x"), symlink("loop", "loop")},
			map[string]string{"abs": "link:/etc/passwd", "up": "link:../../x", "loop": "link:loop"}},
		{"write through a link to the root", []tar.Header{symlink("l", "."), file("l/f", "x")},
			map[string]string{"l": "link:.", "f": "x"}},
		{"write through a link chain staying inside", []tar.Header{dir("d/e"), symlink("d/y", "e/.."), symlink("x", "d/y/e"), file("x/f", "x")},
			map[string]string{"d/y": "link:e/..", "x": "link:d/y/e", "d/e/f": "x"}},
		{"a name with .. that stays inside", []tar.Header{file("a/../b", "x")},
			map[string]string{"b": "x"}},
		{"hard link through a link", []tar.Header{file("d/f", "x"), symlink("l", "d"), hardlink("h", "l/f")},
			map[string]string{"d/f": "x", "l": "link:d", "h": "x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent, target, sentinel := sandbox(t)
			if err := archive.ExtractTar(context.Background(), bytes.NewReader(tarOf(t, tc.entries...)), target, archive.Limits{}); err != nil {
				t.Fatal(err)
			}
			checkContained(t, parent, target, sentinel)
			for name, want := range tc.want {
				p := filepath.Join(target, name)
				var got string
				if l, err := os.Readlink(p); err == nil {
					got = "link:" + l
				} else if b, err := os.ReadFile(p); err == nil {
					got = string(b)
				} else {
					t.Fatalf("%s: %v", name, err)
				}
				if got != want {
					t.Errorf("%s = %q, want %q", name, got, want)
				}
			}
		})
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
// directory.
func FuzzExtract(f *testing.F) {
	f.Add(tarOf(f, file("a.txt", "x"), symlink("l", "a.txt")))
	f.Add(tarOf(f, dir("d"), symlink("d/y", ".."), symlink("d/x", "y/../.."), file("d/x/evil", "x")))
	f.Add(tarOf(f, symlink("x", "y/../.."), dir("y"), symlink("y", "d/..")))
	f.Add(tarOf(f, symlink("l", "."), file("l/f", "x"), hardlink("h", "../sentinel/f")))
	f.Add(tarOf(f, file("../sentinel/evil", "x")))
	f.Add(zstdOf(f, tarOf(f, file("a/b", "c"), symlink("a/l", "../../sentinel"), file("a/l/evil", "x"))))
	f.Add(tarOf(f, file("c:notes", "x"), symlink("s", "/tmp"), file("s/evil", "x")))
	f.Add(tarOf(f, dir("d/e"), symlink("d/y", "e/.."), symlink("x", "d/y/e"), file("x/f", "x"), symlink("z", "x/../.."), file("z/sentinel/evil", "x")))
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
			_ = extract(target)
			checkContained(t, parent, target, sentinel)
		}
	})
}
