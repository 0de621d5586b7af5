package archive

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/klauspost/compress/zstd"
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

// maxLinkHops bounds the symbolic links followed to resolve one link.
const maxLinkHops = 255

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
// directory. It refuses, with an error matching [ErrUnsafe]:
//
//   - absolute names and names with a ".." component;
//   - entries whose parent is a symbolic link;
//   - symbolic links that are absolute or that resolve outside dir, directly
//     or through other links of the archive (checked once every link is
//     known, since a later link can redirect an earlier one);
//   - hard links to anything but a regular file of the archive;
//   - devices, FIFOs and every other special file.
//
// Every write goes through an [os.Root] opened on dir, so nothing is ever
// written outside dir, even by an archive that is refused half way. On any
// error dir holds a partial extraction, to be discarded. Permission bits are
// kept, setuid, setgid and sticky bits dropped; owners are not restored.
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
	x := &extractor{root: root, links: map[string]string{}, budget: lim.MaxBytes}
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
		if err := x.entry(hdr, tr); err != nil {
			return err
		}
	}
	for name := range x.links {
		if err := resolveInside(x.links, name); err != nil {
			return err
		}
	}
	return nil
}

// extractor is one extraction's state.
type extractor struct {
	root   *os.Root
	links  map[string]string // symbolic links extracted so far: name → target
	budget int64             // bytes of file content left
}

func unsafe(name, format string, args ...any) error {
	return fmt.Errorf("%w: %q: %s", ErrUnsafe, name, fmt.Sprintf(format, args...))
}

// cleanName returns the entry name as a clean relative slash path ("" for
// the root itself), or an error for absolute names and ".." components.
func cleanName(name string) (string, error) {
	if name == "" || strings.ContainsRune(name, 0) {
		return "", unsafe(name, "empty name or NUL byte")
	}
	if strings.HasPrefix(name, "/") || (len(name) > 1 && name[1] == ':') {
		return "", unsafe(name, "absolute path")
	}
	var parts []string
	for c := range strings.SplitSeq(name, "/") {
		switch c {
		case "", ".":
		case "..":
			return "", unsafe(name, "path escapes with ..")
		default:
			parts = append(parts, c)
		}
	}
	return strings.Join(parts, "/"), nil
}

// underLink returns the symbolic link that name lies under, if any.
func (x *extractor) underLink(name string) string {
	for i := range len(name) {
		if name[i] == '/' {
			if _, ok := x.links[name[:i]]; ok {
				return name[:i]
			}
		}
	}
	return ""
}

// prepare makes name's parent and removes whatever is at name (a later entry
// replaces an earlier one, as tar does).
func (x *extractor) prepare(name string) error {
	if dir := path.Dir(name); dir != "." {
		if err := x.root.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("archive: extract %q: %w", name, err)
		}
	}
	if err := x.root.RemoveAll(name); err != nil {
		return fmt.Errorf("archive: extract %q: %w", name, err)
	}
	for l := range x.links {
		if l == name || strings.HasPrefix(l, name+"/") {
			delete(x.links, l)
		}
	}
	return nil
}

func (x *extractor) entry(hdr *tar.Header, r io.Reader) error {
	name, err := cleanName(hdr.Name)
	if err != nil {
		return err
	}
	if name == "" {
		if hdr.Typeflag == tar.TypeDir {
			return nil // the root itself
		}
		return unsafe(hdr.Name, "names the root")
	}
	if l := x.underLink(name); l != "" {
		return unsafe(hdr.Name, "lies under symbolic link %q", l)
	}
	perm := fs.FileMode(hdr.Mode) & fs.ModePerm
	switch hdr.Typeflag {
	case tar.TypeDir:
		if fi, err := x.root.Lstat(name); err == nil && !fi.IsDir() {
			if err := x.prepare(name); err != nil {
				return err
			}
		}
		if err := x.root.MkdirAll(name, perm|0o700); err != nil {
			return fmt.Errorf("archive: extract %q: %w", name, err)
		}
		return nil
	case tar.TypeReg:
		if hdr.Size < 0 || hdr.Size > x.budget {
			return fmt.Errorf("%w: %q: file contents exceed the limit", ErrTooLarge, hdr.Name)
		}
		x.budget -= hdr.Size
		if err := x.prepare(name); err != nil {
			return err
		}
		f, err := x.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm|0o600)
		if err != nil {
			return fmt.Errorf("archive: extract %q: %w", name, err)
		}
		_, err = io.CopyN(f, r, hdr.Size)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("archive: extract %q: %w", name, err)
		}
		return nil
	case tar.TypeSymlink:
		target := hdr.Linkname
		switch {
		case target == "" || strings.ContainsRune(target, 0):
			return unsafe(hdr.Name, "empty link target")
		case strings.HasPrefix(target, "/"):
			return unsafe(hdr.Name, "absolute link target %q", target)
		}
		if j := path.Join(path.Dir(name), target); j == ".." || strings.HasPrefix(j, "../") {
			return unsafe(hdr.Name, "link target %q escapes the root", target)
		}
		if err := x.prepare(name); err != nil {
			return err
		}
		if err := x.root.Symlink(target, name); err != nil {
			return fmt.Errorf("archive: extract %q: %w", name, err)
		}
		x.links[name] = target
		return nil
	case tar.TypeLink:
		target, err := cleanName(hdr.Linkname)
		if err != nil {
			return err
		}
		if target == "" || x.underLink(target) != "" {
			return unsafe(hdr.Name, "hard link target %q outside the archive's files", hdr.Linkname)
		}
		if _, ok := x.links[target]; ok {
			return unsafe(hdr.Name, "hard link to symbolic link %q", target)
		}
		if fi, err := x.root.Lstat(target); err != nil || !fi.Mode().IsRegular() {
			return unsafe(hdr.Name, "hard link target %q is not a regular file of the archive", target)
		}
		if target == name {
			return nil
		}
		if err := x.prepare(name); err != nil {
			return err
		}
		if err := x.root.Link(target, name); err != nil {
			return fmt.Errorf("archive: extract %q: %w", name, err)
		}
		return nil
	case tar.TypeXGlobalHeader:
		return nil // PAX global header: metadata only
	default:
		return unsafe(hdr.Name, "special file (type %q) not allowed", hdr.Typeflag)
	}
}

// resolveInside resolves the symbolic link name through links (every link of
// the tree, by clean name) and fails with ErrUnsafe when it leads outside the
// root or cannot be resolved. Components that are not links are taken as
// directories: following one that is a file fails at run time, not outside.
func resolveInside(links map[string]string, name string) error {
	var stack []string
	if dir := path.Dir(name); dir != "." {
		stack = strings.Split(dir, "/")
	}
	if strings.HasPrefix(links[name], "/") {
		return unsafe(name, "absolute link target")
	}
	pending := strings.Split(links[name], "/")
	for hops := 0; len(pending) > 0; {
		c := pending[0]
		pending = pending[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(stack) == 0 {
				return unsafe(name, "link resolves outside the root")
			}
			stack = stack[:len(stack)-1]
			continue
		}
		stack = append(stack, c)
		target, ok := links[strings.Join(stack, "/")]
		if !ok {
			continue
		}
		if hops++; hops > maxLinkHops {
			return unsafe(name, "too many levels of symbolic links")
		}
		if strings.HasPrefix(target, "/") {
			return unsafe(name, "link resolves to an absolute path")
		}
		stack = stack[:len(stack)-1]
		pending = append(strings.Split(target, "/"), pending...)
	}
	return nil
}
