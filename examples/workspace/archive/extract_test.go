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

	"github.com/google/go-cmp/cmp"

	"github.com/tendhq/tend/examples/workspace/archive"
)

// sandbox makes, in a new directory parent, an empty directory target and
// a sibling sentinel holding the file f, and returns a function that
// removes them.
func sandbox(t tb) (parent, target, sentinel string, cleanup func()) {
	parent, cleanup = tempDir(t, "sandbox")
	target, sentinel = filepath.Join(parent, "target"), filepath.Join(parent, "sentinel")
	for _, d := range []string{target, sentinel} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(sentinel, "f"), []byte("sentinel"), 0o644); err != nil {
		t.Fatal(err)
	}
	return parent, target, sentinel, cleanup
}

// checkContained fails when anything but target and sentinel is in parent,
// or when sentinel changed.
func checkContained(t tb, parent, sentinel string) {
	t.Helper()
	entries, err := os.ReadDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Fatalf("written beside the target: %v", entries)
	}
	if got := describe(t, sentinel, true); !cmp.Equal(got, map[string]string{"f": "0644 sentinel"}) {
		t.Fatalf("the sentinel directory changed: %q", got)
	}
}

// hostileArchives hold an entry that would be written outside the target,
// or that no workspace file is.
var hostileArchives = map[string][]tar.Header{
	"absolute path":                      {file("/etc/evil", "x")},
	"dot-dot":                            {file("../evil", "x")},
	"dot-dot inside":                     {file("a/../../evil", "x")},
	"dot-dot after a link":               {dir("d/e"), symlink("l", "d"), file("l/../../evil", "x")},
	"write through an absolute link":     {symlink("l", "/tmp"), file("l/evil", "x")},
	"write through an escaping link":     {symlink("a/l", "../../sentinel"), file("a/l/evil", "x")},
	"directory through an escaping link": {symlink("l", "../sentinel"), dir("l/d")},
	"link through an escaping link":      {symlink("l", "../sentinel"), symlink("l/x", "y")},
	"write through a link chain escaping": {dir("d"), symlink("d/y", ".."), symlink("d/x", "y/.."),
		file("d/x/sentinel/evil", "x")},
	"write through a link a later link redirects": {symlink("x", "y/.."), dir("y"), symlink("y", "d/.."),
		file("x/sentinel/evil", "x")},
	"hard link outside":                  {hardlink("h", "../sentinel/f")},
	"hard link to an absolute path":      {hardlink("h", "/etc/passwd")},
	"hard link through an escaping link": {symlink("l", "../sentinel"), hardlink("h", "l/f")},
	"hard link to a link":                {symlink("l", "a"), hardlink("h", "l")},
	"hard link to a missing file":        {hardlink("h", "nothing")},
	"character device":                   {{Typeflag: tar.TypeChar, Name: "null", Devmajor: 1, Devminor: 3}},
	"block device":                       {{Typeflag: tar.TypeBlock, Name: "sda", Devmajor: 8}},
	"fifo":                               {{Typeflag: tar.TypeFifo, Name: "pipe"}},
	"write through a link loop":          {symlink("a", "b/x"), symlink("b", "a/y"), file("a/f", "x")},
}

func TestExtractRefuses(t *testing.T) {
	for name, entries := range hostileArchives {
		t.Run(name, func(t *testing.T) {
			parent, target, sentinel, cleanup := sandbox(t)
			defer cleanup()
			checkExtract(t, tarOf(t, entries...), parent, target, sentinel, true)
		})
	}
}

func TestExtractAccepts(t *testing.T) {
	parent, target, sentinel, cleanup := sandbox(t)
	defer cleanup()
	data := zstdOf(t, tarOf(t,
		dir("./"), file("a/b/c.txt", "c"), symlink("a/up", "../a/b"), symlink("top", "a/up/c.txt"),
		hardlink("a/hard", "a/b/c.txt"), file("a/b/c.txt", "replaced"), symlink("dangling", "nowhere")))
	if err := archive.Extract(context.Background(), bytes.NewReader(data), target, archive.Limits{}); err != nil {
		t.Fatal(err)
	}
	checkContained(t, parent, sentinel)
	if b, err := os.ReadFile(filepath.Join(target, "top")); err != nil || string(b) != "replaced" {
		t.Fatalf("top = %q, %v", b, err)
	}
}

// acceptedArchives write nothing outside the target: links are data,
// whatever they point at, and a write through a link, or a "..", that stays
// inside lands inside, where the kernel would put it.
var acceptedArchives = []struct {
	name    string
	entries []tar.Header
	want    map[string]string // paths under the target → content, or "link:" target
}{
	{"a name with a colon", []tar.Header{file("c:notes", "x"), file("a/b:c", "y"), file("C:/x", "z")},
		map[string]string{"c:notes": "x", "a/b:c": "y", "C:/x": "z"}},
	{"a name with backslashes", []tar.Header{file(`a\..\..\x`, "x")},
		map[string]string{`a\..\..\x`: "x"}},
	{"links pointing anywhere", []tar.Header{symlink("abs", "/etc/passwd"), symlink("up", "../../x"), symlink("loop", "loop")},
		map[string]string{"abs": "link:/etc/passwd", "up": "link:../../x", "loop": "link:loop"}},
	{"entries replacing links out", []tar.Header{symlink("l", "../sentinel/f"), file("l", "x"), symlink("m", "/tmp"), dir("m/")},
		map[string]string{"l": "x"}},
	{"write through a link to the root", []tar.Header{symlink("l", "."), file("l/f", "x")},
		map[string]string{"l": "link:.", "f": "x"}},
	{"write through a link chain staying inside", []tar.Header{dir("d/e"), symlink("d/y", "e/.."), symlink("x", "d/y/e"), file("x/f", "x")},
		map[string]string{"d/y": "link:e/..", "x": "link:d/y/e", "d/e/f": "x"}},
	{"a name with .. that stays inside", []tar.Header{file("a/../b", "x")},
		map[string]string{"b": "x"}},
	{".. after a link, as the kernel takes it", []tar.Header{dir("d/e"), symlink("l", "d/e"), file("l/../f", "x"), file("l/../../g", "y")},
		map[string]string{"d/f": "x", "g": "y"}},
	{"hard link through a link", []tar.Header{file("d/f", "x"), symlink("l", "d"), hardlink("h", "l/f")},
		map[string]string{"d/f": "x", "l": "link:d", "h": "x"}},
	{"hard link with .. after a link", []tar.Header{file("d/f", "x"), dir("d/e"), symlink("l", "d/e"), hardlink("h", "l/../f")},
		map[string]string{"h": "x"}},
}

func TestExtractAcceptsWhatStaysInside(t *testing.T) {
	for _, tc := range acceptedArchives {
		t.Run(tc.name, func(t *testing.T) {
			parent, target, sentinel, cleanup := sandbox(t)
			defer cleanup()
			if err := archive.ExtractTar(context.Background(), bytes.NewReader(tarOf(t, tc.entries...)), target, archive.Limits{}); err != nil {
				t.Fatal(err)
			}
			checkContained(t, parent, sentinel)
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
	_, target, _, cleanup := sandbox(t)
	defer cleanup()
	data := tarOf(t, file("a", strings.Repeat("x", 100)))
	if err := archive.ExtractTar(context.Background(), bytes.NewReader(data), target, archive.Limits{MaxBytes: 10}); !errors.Is(err, archive.ErrTooLarge) {
		t.Fatalf("ExtractTar over MaxBytes = %v, want ErrTooLarge", err)
	}
	_, target, _, cleanup2 := sandbox(t)
	defer cleanup2()
	data = tarOf(t, file("a", "1"), file("b", "2"))
	if err := archive.ExtractTar(context.Background(), bytes.NewReader(data), target, archive.Limits{MaxEntries: 1}); !errors.Is(err, archive.ErrTooLarge) {
		t.Fatalf("ExtractTar over MaxEntries = %v, want ErrTooLarge", err)
	}
}
