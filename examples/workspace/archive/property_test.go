package archive_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/tendhq/tend/examples/workspace/archive"
)

// maxPath bounds the paths of the trees the tests make, relative to the
// tree: more than the 4096 bytes the kernel takes in one path, so that some
// trees are only reachable component by component.
const maxPath = 6000

// node is an entry of a test tree: a directory ('d'), a file ('f') holding
// data, a symbolic link ('l') to data, or a hard link ('h') to the file data
// names. mode is a directory's or a file's.
type node struct {
	kind byte
	name string
	mode fs.FileMode
	data string
}

// builder makes a tree a Linux workspace may hold under root, node by node.
type builder struct {
	root *os.Root
	dirs []node // made, with the modes they get last
}

// add makes n, its missing parents first, and reports whether it did. It
// reports false, without making n, for what a tree cannot hold: a component
// that is empty, "." or "..", longer than 255 bytes or holding NUL, a path
// longer than maxPath, a parent that is not a directory, a name already
// taken, an empty or too long link target, a hard link to anything but a
// regular file of the tree.
func (b *builder) add(n node) bool {
	switch {
	case !strings.ContainsRune("dflh", rune(n.kind)), len(n.name) > maxPath, strings.ContainsRune(n.data, 0),
		n.kind == 'l' && (n.data == "" || len(n.data) > 4095):
		return false
	}
	parts := strings.Split(n.name, "/")
	for i, c := range parts {
		if c == "" || c == "." || c == ".." || len(c) > 255 || strings.ContainsRune(c, 0) {
			return false
		}
		p := strings.Join(parts[:i+1], "/")
		fi, err := b.root.Lstat(p)
		switch {
		case i == len(parts)-1 && err == nil:
			return false // taken
		case i == len(parts)-1:
		case errors.Is(err, fs.ErrNotExist):
			if b.root.Mkdir(p, 0o700) != nil {
				return false
			}
			b.dirs = append(b.dirs, node{kind: 'd', name: p, mode: 0o755})
		case err != nil || !fi.IsDir():
			return false
		}
	}
	mode := n.mode & fs.ModePerm
	if os.Geteuid() != 0 {
		mode |= 0o600 // as root, the tests read anything; as its owner, only this
	}
	switch n.kind {
	case 'd':
		if b.root.Mkdir(n.name, 0o700) != nil {
			return false
		}
		b.dirs = append(b.dirs, node{kind: 'd', name: n.name, mode: mode})
	case 'f':
		if b.root.WriteFile(n.name, []byte(n.data), 0o600) != nil || b.root.Chmod(n.name, mode) != nil {
			return false
		}
	case 'l':
		if b.root.Symlink(n.data, n.name) != nil {
			return false
		}
	case 'h':
		if fi, err := b.root.Lstat(n.data); err != nil || !fi.Mode().IsRegular() || b.root.Link(n.data, n.name) != nil {
			return false
		}
	}
	return true
}

// finish gives the directories their modes, deepest first, so that the tree
// could be built.
func (b *builder) finish(t tb) {
	for _, d := range slices.Backward(b.dirs) {
		if os.Geteuid() != 0 {
			d.mode |= 0o700 // as root, the tests search anything; as its owner, only this
		}
		if err := b.root.Chmod(d.name, d.mode); err != nil {
			t.Fatal(err)
		}
	}
}

// build makes the tree of nodes under dir: those a tree cannot hold are left
// out.
func build(t tb, dir string, nodes []node) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	b := &builder{root: root}
	for _, n := range nodes {
		b.add(n)
	}
	b.finish(t)
}

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

// genTree builds a random tree a Linux workspace may hold under dir:
// directories nested deep enough to need long tar names (and sometimes
// paths longer than the kernel takes whole), empty directories, files with
// any permission bits, hard links between files, and symbolic links of
// every kind: to entries of the tree directly or through ".." and other
// links, chains, dangling, absolute, leading out.
func genTree(t *rapid.T, dir string) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	b := &builder{root: root}
	dirs := []string{""}
	var entries, files []string
	modes := rapid.SampledFrom([]fs.FileMode{0o755, 0o700, 0o750, 0o500, 0o555, 0o711, 0o777, 0o000})
	for i := range rapid.IntRange(0, 25).Draw(t, "entries") {
		parent := rapid.SampledFrom(dirs).Draw(t, "parent")
		name := path.Join(parent, legalName.Draw(t, "name"))
		switch rapid.IntRange(0, 4).Draw(t, "kind") {
		case 0: // a directory, maybe a deep chain of them
			depth, segment := 1, rapid.IntRange(1, 255)
			if rapid.IntRange(0, 5).Draw(t, "deep") == 0 {
				depth = rapid.IntRange(2, 40).Draw(t, "depth")
				segment = rapid.IntRange(150, 255) // past 4096 bytes beyond about 20 deep
			}
			for d := range depth {
				if d > 0 {
					name = path.Join(name, strings.Repeat(fmt.Sprint(d%10), segment.Draw(t, "segment")))
				}
				if !b.add(node{kind: 'd', name: name, mode: modes.Draw(t, "dir mode")}) {
					break
				}
				dirs = append(dirs, name)
				entries = append(entries, name)
			}
		case 1: // a file
			content := rapid.SliceOfN(rapid.Byte(), 0, 3000).Draw(t, "content")
			mode := fs.FileMode(rapid.IntRange(0, 0o777).Draw(t, "file mode"))
			if b.add(node{kind: 'f', name: name, mode: mode, data: string(content)}) {
				entries = append(entries, name)
				files = append(files, name)
			}
		case 2: // a hard link to a file
			if len(files) > 0 && b.add(node{kind: 'h', name: name, data: rapid.SampledFrom(files).Draw(t, "linked")}) {
				entries = append(entries, name)
			}
		default: // a symbolic link
			var target string
			if i == 0 || len(entries) == 0 {
				target = legalName.Draw(t, "dangling")
			} else {
				to := rapid.SampledFrom(entries).Draw(t, "to")
				target = relativeTo(parent, to)
				if rapid.Bool().Draw(t, "through ..") {
					// Down into the target's directory and back up again.
					target = path.Join(relativeTo(parent, path.Dir(to)), path.Base(to)) + "/../" + path.Base(to)
				}
			}
			switch rapid.IntRange(0, 9).Draw(t, "odd target") {
			case 0:
				target = "/etc/" + legalName.Draw(t, "absolute")
			case 1:
				target = strings.Repeat("../", 1+strings.Count(parent, "/")+1) + "outside"
			}
			if b.add(node{kind: 'l', name: name, data: target}) {
				entries = append(entries, name)
			}
		}
	}
	b.finish(t)
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

// tempDir returns a new directory, removed when cleanup is called.
func tempDir(t tb, pattern string) (dir string, cleanup func()) {
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		t.Fatal(err)
	}
	return dir, func() { removeTree(dir) }
}

// checkRoundTrip is the property: whatever tree a workspace holds under src,
// the archive Write makes from it extracts, and, when sync is set, syncs
// into a volume holding something else, to that very tree: names, contents,
// permission bits, directories, empty or not, hard links and symbolic links'
// targets. And nothing is written beside the staging directory and the
// volume.
func checkRoundTrip(t tb, src string, sync bool) {
	t.Helper()
	base, cleanup := tempDir(t, "roundtrip")
	defer cleanup()
	staging, volume, sentinel := filepath.Join(base, "staging"), filepath.Join(base, "volume"), filepath.Join(base, "sentinel")
	for _, d := range []string{staging, volume, sentinel} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeTree(t, volume, map[string]string{"old": "x", "d/f": "y", "l": "link:/tmp", "h": "hard:old"})

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
	if sync {
		if err := archive.Sync(ctx, staging, volume); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, describe(t, volume, true)); diff != "" {
			t.Fatalf("synced volume (-want +got):\n%s", diff)
		}
	}
	if names, _ := os.ReadDir(base); len(names) != 3 {
		t.Fatalf("written beside the staging directory and the volume: %v", names)
	}
	if names, _ := os.ReadDir(sentinel); len(names) != 0 {
		t.Fatalf("written into the sentinel directory: %v", names)
	}
}

func TestLegalTreesRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		src, cleanup := tempDir(t, "src")
		defer cleanup()
		genTree(t, src)
		checkRoundTrip(t, src, true)
	})
}

// hostile draws an archive that holds one entry which would be written
// outside the target directory, whose sibling sentinel holds the file f,
// after a few harmless entries under "ok/" (whose links lead nowhere deeper
// than they are, so that they cannot bring an escape back inside).
func hostile(sentinel string) *rapid.Generator[[]tar.Header] {
	name := legalName.Filter(func(s string) bool { return s != "ok" && s != "d" && s != "f" })
	// entry draws an entry of any kind named n: what matters is where it
	// would be written.
	entry := func(t *rapid.T, n string) tar.Header {
		switch rapid.IntRange(0, 3).Draw(t, "type") {
		case 0:
			return dir(n)
		case 1:
			return file(n, "hostile")
		case 2:
			return symlink(n, rapid.SampledFrom([]string{".", "x", "/tmp"}).Draw(t, "target"))
		default:
			return hardlink(n, "ok/f")
		}
	}
	return rapid.Custom(func(t *rapid.T) []tar.Header {
		hdrs := []tar.Header{dir("ok/"), file("ok/f", "ok")}
		for range rapid.IntRange(0, 4).Draw(t, "harmless") {
			n := "ok/" + name.Draw(t, "name")
			switch rapid.IntRange(0, 2).Draw(t, "kind") {
			case 0:
				hdrs = append(hdrs, file(n, "ok"))
			case 1:
				hdrs = append(hdrs, symlink(n, rapid.SampledFrom([]string{".", "..", name.Draw(t, "sibling")}).Draw(t, "target")))
			default:
				hdrs = append(hdrs, dir(n))
			}
		}
		up := func(below int) string { return strings.Repeat("../", below+rapid.IntRange(1, 3).Draw(t, "ups")) }
		l, m, evil := name.Draw(t, "link"), name.Draw(t, "other link"), name.Draw(t, "evil")
		switch rapid.IntRange(0, 9).Draw(t, "hostile") {
		case 0: // an absolute name
			hdrs = append(hdrs, entry(t, sentinel+"/"+evil))
		case 1: // ".." leading out, after components that may not exist
			var below string
			for _, c := range rapid.SliceOfN(name, 0, 3).Draw(t, "below") {
				below += c + "/"
			}
			hdrs = append(hdrs, entry(t, below+up(strings.Count(below, "/"))+"sentinel/"+evil))
		case 2: // through a link out, then written through
			hdrs = append(hdrs, symlink(l, up(0)+"sentinel"), entry(t, l+"/"+evil))
		case 3: // through a link to an absolute path
			hdrs = append(hdrs, symlink(l, sentinel), entry(t, l+"/"+evil))
		case 4: // through a chain of links that leads out
			hdrs = append(hdrs, symlink(m, ".."), symlink(l, m+"/.."), entry(t, l+"/sentinel/"+evil))
		case 5: // through a link inside, then ".." out of it
			hdrs = append(hdrs, symlink(l, "ok"), entry(t, l+"/../../sentinel/"+evil))
		case 6: // a link to a directory made before its target is replaced
			hdrs = append(hdrs, dir("ok/d"), symlink(l, "ok/d/.."), symlink("ok/d", ".."), entry(t, l+"/sentinel/"+evil))
		case 7: // a hard link to a file outside
			target := rapid.SampledFrom([]string{"../sentinel/f", sentinel + "/f", "ok/../../sentinel/f"}).Draw(t, "outside")
			hdrs = append(hdrs, hardlink(evil, target))
		case 8: // a hard link through a link out
			hdrs = append(hdrs, symlink(l, "../sentinel"), hardlink(evil, l+"/f"))
		default: // a special file
			typ := rapid.SampledFrom([]byte{tar.TypeChar, tar.TypeBlock, tar.TypeFifo}).Draw(t, "special")
			hdrs = append(hdrs, tar.Header{Typeflag: typ, Name: evil, Devmajor: 1, Devminor: 3})
		}
		return hdrs
	})
}

// TestHostileArchivesRefused: every archive holding an entry that would be
// written outside the target is refused with ErrUnsafe, and nothing is
// written outside the target.
func TestHostileArchivesRefused(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		parent, target, sentinel, cleanup := sandbox(t)
		defer cleanup()
		checkExtract(t, tarOf(t, hostile(sentinel).Draw(t, "archive")...), parent, target, sentinel, true)
	})
}

// TestRandomArchivesWriteNothingOutside: archives mixing climbing names,
// links out of the target and writes through them, in any order, extract or
// are refused without writing anything outside the target.
func TestRandomArchivesWriteNothingOutside(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		parent, target, sentinel, cleanup := sandbox(t)
		defer cleanup()
		entries := rapid.SliceOfN(randomEntry(sentinel), 1, 8).Draw(t, "entries")
		checkExtract(t, tarOf(t, entries...), parent, target, sentinel, false)
	})
}

// checkExtract extracts the tar stream data into the target of a [sandbox]
// and fails when anything is written outside it, or when refuse is set and
// the archive is not refused with ErrUnsafe.
func checkExtract(t tb, data []byte, parent, target, sentinel string, refuse bool) {
	t.Helper()
	err := archive.ExtractTar(context.Background(), bytes.NewReader(data), target, archive.Limits{MaxBytes: 1 << 20, MaxEntries: 1000})
	if refuse && !errors.Is(err, archive.ErrUnsafe) {
		t.Fatalf("ExtractTar = %v, want ErrUnsafe", err)
	}
	checkContained(t, parent, sentinel)
}

// randomEntry draws a tar entry an attacker could craft: names and link
// targets that climb out, are absolute, or point at the sentinel directory
// beside the target, through links or directly.
func randomEntry(sentinel string) *rapid.Generator[tar.Header] {
	names := rapid.SampledFrom([]string{"a", "b", "a/b", "a/b/c", "l", "l/x", "l/sentinel/evil", "a/l/evil",
		"../sentinel/evil", sentinel + "/evil", "a/../../sentinel/evil", "./l/./x", "c:evil", "l/../../sentinel/f"})
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
