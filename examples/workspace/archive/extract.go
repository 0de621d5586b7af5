package archive

import (
	"archive/tar"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/klauspost/compress/zstd"

	"github.com/tendhq/tend/examples/internal/ctxio"
)

// Defaults of [Limits].
const (
	// DefaultMaxBytes bounds the bytes of file content one archive may
	// extract to when Limits.MaxBytes is zero.
	DefaultMaxBytes = 64 << 30
	// DefaultMaxEntries bounds the entries of one archive when
	// Limits.MaxEntries is zero.
	DefaultMaxEntries = 10_000_000
)

// maxLinkHops bounds the symbolic links followed to resolve one path, as
// the kernel's MAXSYMLINKS does.
const maxLinkHops = 40

// Limits bound what one extraction may write, so that a small hostile
// archive cannot fill a disk. Exceeding one fails with [ErrTooLarge].
type Limits struct {
	// MaxBytes bounds the total size of the extracted files' contents. Zero
	// means [DefaultMaxBytes].
	MaxBytes int64
	// MaxEntries bounds the number of entries. Zero means [DefaultMaxEntries].
	MaxEntries int
}

func (l Limits) withDefaults() Limits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.MaxEntries <= 0 {
		l.MaxEntries = DefaultMaxEntries
	}
	return l
}

// Extract decompresses the zstd stream r and extracts the tar archive it
// holds into dir, as [ExtractTar] does.
func Extract(ctx context.Context, r io.Reader, dir string, lim Limits) error {
	dec, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxMemory(1<<30))
	if err != nil {
		return fmt.Errorf("archive: zstd: %w", err)
	}
	defer dec.Close()
	return ExtractTar(ctx, dec, dir, lim)
}

// ExtractTar extracts the tar stream r into dir, which must be an empty
// directory. It restores directories, regular files, hard links between them
// and symbolic links, with their permission bits. A symbolic link is data:
// it is restored with whatever target it had, inside dir or not, dangling or
// not, since creating it writes nothing outside dir. What ExtractTar refuses,
// with an error matching [ErrUnsafe], is what would be written outside dir or
// cannot be a workspace's file:
//
//   - empty and absolute names, and names that lead above dir;
//   - names that pass through a symbolic link to an absolute path;
//   - hard links to anything but a regular file extracted inside dir;
//   - devices, FIFOs and every other special file.
//
// Where a name leads is decided by resolving it against the tree extracted
// so far, as the kernel would: each symbolic link among its components is
// followed, and each ".." taken after the links before it. The last component
// is the entry itself and is never followed: an entry named like an earlier
// symbolic link replaces the link instead of being written through it. So a
// name with ':', '\\' or ".." in it, or under a link that leads back inside
// dir, lands inside and is accepted; only a write that would really leave dir
// is refused. Every write also goes through an [os.Root] on dir, so nothing
// is ever written outside dir, even by an archive refused half way.
//
// An archive [Write] made from a tree is always accepted and restores that
// tree. On any error dir holds a partial extraction, to be discarded.
// Setuid, setgid and sticky bits are dropped, and owners and modification
// times are not restored: the restore job runs as a user that may write the
// volume, and the files it extracts are the workspace's.
//
// A cancelled ctx stops the extraction within one copy buffer (32 KiB),
// even inside a large file.
func ExtractTar(ctx context.Context, r io.Reader, dir string, lim Limits) error {
	lim = lim.withDefaults()
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("archive: extract: %w", err)
	}
	defer root.Close()
	if names, err := fs.ReadDir(root.FS(), "."); err != nil || len(names) > 0 {
		return fmt.Errorf("archive: extract into %s: not an empty directory", dir)
	}
	x := &extractor{root: root, dirs: map[string]fs.FileMode{}, budget: lim.MaxBytes}
	tr := tar.NewReader(r)
	for n := 0; ; n++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("archive: reading tar: %w", err)
		}
		if n >= lim.MaxEntries {
			return fmt.Errorf("%w: more than %d entries", ErrTooLarge, lim.MaxEntries)
		}
		if err := x.entry(ctx, hdr, tr); err != nil {
			return err
		}
	}
	return x.chmodDirs()
}

// extractor is one extraction's state.
type extractor struct {
	root   *os.Root
	dirs   map[string]fs.FileMode // directories extracted: resolved name → mode
	budget int64                  // bytes of file content left
}

func unsafe(name, format string, args ...any) error {
	return fmt.Errorf("%w: %q: %s", ErrUnsafe, name, fmt.Sprintf(format, args...))
}

// resolve returns where the entry name lands in the tree extracted so far,
// as a clean slash path relative to the root ("" for the root itself). It
// follows, as the kernel would, the symbolic links among name's components
// but the last (the entry itself, which is replaced, never written through),
// and takes each ".." after the links before it are followed, so the answer
// comes from what the tree holds, not from how name is spelled. Components
// that do not exist yet are kept: they will be made as directories. It fails
// with ErrUnsafe for an empty name, a NUL byte, an absolute name, and a path
// that leads above the root or through a link to an absolute path.
func (x *extractor) resolve(name string) (string, error) {
	if name == "" || strings.ContainsRune(name, 0) {
		return "", unsafe(name, "empty name or NUL byte")
	}
	if strings.HasPrefix(name, "/") {
		return "", unsafe(name, "absolute path")
	}
	var stack []string
	pending := strings.Split(strings.TrimRight(name, "/"), "/")
	for hops := 0; len(pending) > 0; {
		c := pending[0]
		pending = pending[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(stack) == 0 {
				return "", unsafe(name, "leads above the root")
			}
			stack = stack[:len(stack)-1]
			continue
		}
		stack = append(stack, c)
		if len(pending) == 0 {
			break
		}
		cur := strings.Join(stack, "/")
		fi, err := x.root.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("archive: extract %q: %w", name, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			continue
		}
		if hops++; hops > maxLinkHops {
			return "", unsafe(name, "too many levels of symbolic links")
		}
		target, err := x.root.Readlink(cur)
		if err != nil {
			return "", fmt.Errorf("archive: extract %q: %w", name, err)
		}
		if strings.HasPrefix(target, "/") {
			return "", unsafe(name, "leads through symbolic link %q to an absolute path", cur)
		}
		stack = stack[:len(stack)-1]
		pending = append(strings.Split(target, "/"), pending...)
	}
	return strings.Join(stack, "/"), nil
}

// prepare makes name's parent and removes whatever is at name (a later entry
// replaces an earlier one, as tar does). name is resolved: no link in its
// parent.
func (x *extractor) prepare(name string) error {
	if dir := path.Dir(name); dir != "." {
		if err := x.root.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("archive: extract %q: %w", name, err)
		}
	}
	if err := x.root.RemoveAll(name); err != nil {
		return fmt.Errorf("archive: extract %q: %w", name, err)
	}
	return nil
}

func (x *extractor) entry(ctx context.Context, hdr *tar.Header, r io.Reader) error {
	if hdr.Typeflag == tar.TypeXGlobalHeader {
		return nil // PAX global header: metadata only
	}
	name, err := x.resolve(hdr.Name)
	if err != nil {
		return err
	}
	if name == "" {
		if hdr.Typeflag == tar.TypeDir {
			return nil // the root itself
		}
		return unsafe(hdr.Name, "names the root")
	}
	perm := fs.FileMode(hdr.Mode) & fs.ModePerm
	switch hdr.Typeflag {
	case tar.TypeDir:
		if fi, err := x.root.Lstat(name); err == nil && !fi.IsDir() {
			if err := x.prepare(name); err != nil {
				return err
			}
		}
		if err := x.root.MkdirAll(name, 0o700); err != nil {
			return fmt.Errorf("archive: extract %q: %w", hdr.Name, err)
		}
		x.dirs[name] = perm
		return nil
	case tar.TypeReg:
		if hdr.Size < 0 || hdr.Size > x.budget {
			return fmt.Errorf("%w: %q: file contents exceed the limit", ErrTooLarge, hdr.Name)
		}
		x.budget -= hdr.Size
		if err := x.prepare(name); err != nil {
			return err
		}
		f, err := x.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return fmt.Errorf("archive: extract %q: %w", hdr.Name, err)
		}
		_, err = io.CopyN(f, ctxio.Reader(ctx, r), hdr.Size)
		if err == nil {
			err = f.Chmod(perm)
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("archive: extract %q: %w", hdr.Name, err)
		}
		return nil
	case tar.TypeSymlink:
		if hdr.Linkname == "" || strings.ContainsRune(hdr.Linkname, 0) {
			return unsafe(hdr.Name, "empty link target")
		}
		if err := x.prepare(name); err != nil {
			return err
		}
		if err := x.root.Symlink(hdr.Linkname, name); err != nil {
			return fmt.Errorf("archive: extract %q: %w", hdr.Name, err)
		}
		return nil
	case tar.TypeLink:
		target, err := x.resolve(hdr.Linkname)
		if err != nil {
			return err
		}
		if fi, err := x.root.Lstat(target); target == "" || err != nil || !fi.Mode().IsRegular() {
			return unsafe(hdr.Name, "hard link target %q is not a regular file of the archive", hdr.Linkname)
		}
		if target == name {
			return nil
		}
		if err := x.prepare(name); err != nil {
			return err
		}
		if err := x.root.Link(target, name); err != nil {
			return fmt.Errorf("archive: extract %q: %w", hdr.Name, err)
		}
		return nil
	default:
		return unsafe(hdr.Name, "special file (type %q) not allowed", hdr.Typeflag)
	}
}

// chmodDirs gives the directories extracted their modes, deepest first, now
// that nothing more is written into them.
func (x *extractor) chmodDirs() error {
	names := slices.Collect(maps.Keys(x.dirs))
	slices.SortFunc(names, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	for _, name := range names {
		if fi, err := x.root.Lstat(name); err != nil || !fi.IsDir() {
			continue // replaced by a later entry
		}
		if err := x.root.Chmod(name, x.dirs[name]); err != nil {
			return fmt.Errorf("archive: extract %q: %w", name, err)
		}
	}
	return nil
}
