package archive_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/tendhq/tend/examples/workspace/archive"
)

// nameByte draws a byte a Linux file name may hold: anything but '/' and
// NUL, with the awkward ones often.
var nameByte = rapid.OneOf(
	rapid.SampledFrom([]byte("abc.-_:\\ \n\t*?'\"$~")),
	rapid.ByteRange(1, 255).Filter(func(b byte) bool { return b != '/' }),
)

// legalName draws a file name: never empty, ".", ".." or longer than the
// 255 bytes Linux allows, sometimes exactly that long.
var legalName = rapid.Custom(func(t *rapid.T) string {
	var b []byte
	if rapid.IntRange(0, 9).Draw(t, "long") == 0 {
		b = bytes.Repeat([]byte{nameByte.Draw(t, "fill")}, 255)
	} else {
		b = rapid.SliceOfN(nameByte, 1, 12).Draw(t, "bytes")
	}
	if s := string(b); s == "." || s == ".." {
		b = append(b, 'x')
	}
	return string(b)
})

// maxPath bounds the paths genTree makes, below the 4096 bytes Linux
// allows a path, with room for the test's own directories.
const maxPath = 3500

// genTree writes a random tree a Linux workspace may hold under root:
// directories nested deep enough to need long tar names, files with any
// permission bits, empty directories, and symbolic links of every kind (to
// entries of the tree directly or through ".." and other links, chains,
// dangling, absolute, leading out).
func genTree(t *rapid.T, root string) {
	dirs := []string{""}
	var entries []string
	modes := rapid.SampledFrom([]os.FileMode{0o755, 0o700, 0o750, 0o500, 0o555, 0o711, 0o777})
	n := rapid.IntRange(0, 25).Draw(t, "entries")
	var chmods []func()
	for i := range n {
		parent := rapid.SampledFrom(dirs).Draw(t, "parent")
		name := path.Join(parent, legalName.Draw(t, "name"))
		p := filepath.Join(root, filepath.FromSlash(name))
		if _, err := os.Lstat(p); err == nil || len(p) > maxPath {
			continue
		}
		switch rapid.IntRange(0, 3).Draw(t, "kind") {
		case 0: // a directory, maybe a deep chain of them
			depth := 1
			if rapid.IntRange(0, 5).Draw(t, "deep") == 0 {
				depth = rapid.IntRange(2, 12).Draw(t, "depth")
			}
			for d := range depth {
				if d > 0 {
					name = path.Join(name, strings.Repeat(fmt.Sprint(d%10), rapid.IntRange(1, 200).Draw(t, "segment")))
					p = filepath.Join(root, filepath.FromSlash(name))
				}
				if len(p) > maxPath {
					break
				}
				if err := os.Mkdir(p, 0o700); err != nil {
					t.Fatal(err)
				}
				dirs = append(dirs, name)
				entries = append(entries, name)
				mode := modes.Draw(t, "dir mode")
				dp := p
				chmods = append(chmods, func() { _ = os.Chmod(dp, mode) })
			}
		case 1: // a file
			content := rapid.SliceOfN(rapid.Byte(), 0, 3000).Draw(t, "content")
			mode := os.FileMode(rapid.IntRange(0, 0o777).Draw(t, "file mode"))
			if err := os.WriteFile(p, content, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, mode); err != nil {
				t.Fatal(err)
			}
			entries = append(entries, name)
		default: // a symbolic link
			var target string
			switch rapid.IntRange(0, 4).Draw(t, "link kind"); {
			case i == 0 || len(entries) == 0:
				target = legalName.Draw(t, "dangling")
			default:
				to := rapid.SampledFrom(entries).Draw(t, "to")
				target = relativeTo(parent, to)
				if rapid.Bool().Draw(t, "through ..") && to != "" {
					// Down into the target's directory and back up again.
					target = path.Join(relativeTo(parent, path.Dir(to)), path.Base(to), "..", path.Base(to))
					target = strings.Replace(target, path.Base(to)+"/../", path.Base(to)+"/x/../../", 1)
				}
			}
			switch rapid.IntRange(0, 9).Draw(t, "odd target") {
			case 0:
				target = "/etc/" + legalName.Draw(t, "absolute")
			case 1:
				target = strings.Repeat("../", 1+strings.Count(parent, "/")+1) + "outside"
			}
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
			entries = append(entries, name)
		}
	}
	// Directory modes last, deepest first, so that the tree could be built.
	for i := len(chmods) - 1; i >= 0; i-- {
		chmods[i]()
	}
}

// relativeTo returns the path of to relative to the directory from, both
// slash paths relative to the same root.
func relativeTo(from, to string) string {
	rel, err := filepath.Rel("/"+from, "/"+to)
	if err != nil {
		panic(err)
	}
	return filepath.ToSlash(rel)
}

// roundTrip is the property: whatever tree a workspace holds, the archive
// Write makes from it extracts, and syncs into a volume holding something
// else, to that very tree: names, contents, permission bits, directories,
// empty or not, and symbolic links' targets.
func roundTrip(t *rapid.T) {
	if os.Geteuid() != 0 {
		t.Skip("the trees hold directories only root may read (mode 0500 and below)")
	}
	base, err := os.MkdirTemp("", "roundtrip")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = filepath.WalkDir(base, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				_ = os.Chmod(p, 0o700)
			}
			return nil
		})
		os.RemoveAll(base)
	}()
	src, staging, volume := filepath.Join(base, "src"), filepath.Join(base, "staging"), filepath.Join(base, "volume")
	for _, d := range []string{src, staging, volume} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	genTree(t, src)
	writeTree(t, volume, map[string]string{"old": "x", "d/f": "y", "l": "link:/tmp"})

	ctx := context.Background()
	var buf bytes.Buffer
	excluded, err := archive.Write(ctx, &buf, src)
	if err != nil {
		t.Fatal(err)
	}
	if len(excluded) > 0 {
		t.Fatalf("Write left out %q from a tree of directories, files and links", excluded)
	}
	if err := archive.Extract(ctx, bytes.NewReader(buf.Bytes()), staging, archive.Limits{}); err != nil {
		t.Fatalf("the archive of a legal tree was refused: %v", err)
	}
	want := describe(t, src, true)
	if diff := cmp.Diff(want, describe(t, staging, true)); diff != "" {
		t.Fatalf("extracted tree (-want +got):\n%s", diff)
	}
	if err := archive.Sync(ctx, staging, volume); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, describe(t, volume, true)); diff != "" {
		t.Fatalf("synced volume (-want +got):\n%s", diff)
	}
}

func TestLegalTreesRoundTrip(t *testing.T) {
	rapid.Check(t, roundTrip)
}

// FuzzRoundTrip runs the round-trip property on trees drawn from the fuzzer's
// bytes.
func FuzzRoundTrip(f *testing.F) {
	f.Fuzz(rapid.MakeFuzz(roundTrip))
}

// hostileEntry draws a tar entry an attacker could craft: names and link
// targets that climb out, are absolute, or point at the sentinel directory
// beside the target, through links or directly.
func hostileEntry(sentinel string) *rapid.Generator[tar.Header] {
	names := rapid.SampledFrom([]string{"a", "b", "a/b", "a/b/c", "l", "l/x", "l/sentinel/evil", "a/l/evil",
		"../sentinel/evil", "/evil", "a/../../sentinel/evil", "./l/./x", "c:evil", "l/../../sentinel/f"})
	targets := rapid.SampledFrom([]string{".", "..", "../..", "a", "a/..", "a/../..", "l", "l/..", "../sentinel",
		sentinel, "/tmp", "b/../../sentinel", "x", ""})
	return rapid.Custom(func(t *rapid.T) tar.Header {
		name := names.Draw(t, "name")
		switch rapid.IntRange(0, 4).Draw(t, "type") {
		case 0:
			return dir(name)
		case 1:
			return file(name, "hostile")
		case 2, 3:
			return symlink(name, targets.Draw(t, "target"))
		default:
			return hardlink(name, rapid.SampledFrom([]string{"a", "a/b", "l/f", "../sentinel/f", sentinel + "/f", "l"}).Draw(t, "target"))
		}
	})
}

// TestHostileArchivesWriteNothingOutside: random archives of climbing names,
// links out of the target and writes through them extract, or are refused,
// without writing anything outside the target; a refusal is ErrUnsafe (or
// a plain error for an entry the tree cannot hold, such as a file under a
// file), never a panic.
func TestHostileArchivesWriteNothingOutside(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		parent, err := os.MkdirTemp("", "hostile")
		if err != nil {
			rt.Fatal(err)
		}
		defer os.RemoveAll(parent)
		target, sentinel := filepath.Join(parent, "target"), filepath.Join(parent, "sentinel")
		for _, d := range []string{target, sentinel} {
			if err := os.Mkdir(d, 0o755); err != nil {
				rt.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(sentinel, "f"), []byte("sentinel"), 0o644); err != nil {
			rt.Fatal(err)
		}
		entries := rapid.SliceOfN(hostileEntry(sentinel), 1, 8).Draw(rt, "entries")
		data := tarOf(rt, entries...)
		err = archive.ExtractTar(context.Background(), bytes.NewReader(data), target, archive.Limits{})
		if err != nil && errors.Is(err, archive.ErrTooLarge) {
			rt.Fatalf("unexpected error: %v", err)
		}
		if got := describe(rt, sentinel, false); !cmp.Equal(got, map[string]string{"f": "sentinel"}) {
			rt.Fatalf("the sentinel directory changed: %v", got)
		}
		if names, _ := os.ReadDir(parent); len(names) != 2 {
			rt.Fatalf("written beside the target: %v", names)
		}
	})
}
