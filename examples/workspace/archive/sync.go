package archive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/tendhq/tend/examples/internal/ctxio"
)

// syncPrefix starts the name of the temporary file a file is copied to, in
// its directory, before it is renamed into place.
const syncPrefix = ".tend-sync-"

// tempName returns the name, beside rel, of the temporary file to copy the
// file p of the source to: short (rel's own name may be as long as a name
// can be), and one the source's directory does not hold, so that it never
// replaces a file already synced.
func tempName(rel, p string) string {
	for n := 0; ; n++ {
		name := syncPrefix + strconv.Itoa(n)
		if _, err := os.Lstat(filepath.Join(filepath.Dir(p), name)); errors.Is(err, fs.ErrNotExist) {
			return filepath.Join(filepath.Dir(rel), name)
		}
	}
}

// Sync makes the directory dst hold exactly what src holds, like
// rsync -a --delete: directories, regular files (copied to a temporary name
// and renamed into place) and symbolic links of src are written to dst with
// their permission bits, and everything in dst that src does not hold is
// deleted. A cancelled ctx stops it within one copy buffer. A crash leaves dst
// partly synced; running Sync again finishes the job. Writes go through an
// [os.Root] on dst, so nothing outside dst is ever changed, even through a
// symbolic link dst held before.
func Sync(ctx context.Context, src, dst string) error {
	root, err := os.OpenRoot(dst)
	if err != nil {
		return fmt.Errorf("archive: sync: %w", err)
	}
	defer root.Close()
	var dirs []string // directories of src, parents first
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil || rel == "." {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.IsDir() {
			dirs = append(dirs, rel)
		}
		return syncEntry(ctx, root, rel, p, info)
	})
	if err == nil {
		// Directories get their modes once nothing more is written into
		// them, children first.
		for _, rel := range slices.Backward(dirs) {
			var info fs.FileInfo
			if info, err = os.Lstat(filepath.Join(src, rel)); err != nil {
				break
			}
			if err = root.Chmod(rel, info.Mode().Perm()); err != nil {
				break
			}
		}
	}
	if err != nil {
		return fmt.Errorf("archive: sync into %s: %w", dst, err)
	}
	err = filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dst, p)
		if err != nil || rel == "." {
			return err
		}
		if _, err := os.Lstat(filepath.Join(src, rel)); errors.Is(err, fs.ErrNotExist) {
			if err := root.RemoveAll(rel); err != nil {
				return err
			}
			if d.IsDir() {
				return fs.SkipDir
			}
		} else if err != nil {
			return err
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("archive: sync, deleting extraneous files from %s: %w", dst, err)
	}
	return nil
}

func syncEntry(ctx context.Context, root *os.Root, rel, p string, info fs.FileInfo) error {
	existing, err := root.Lstat(rel)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	perm := info.Mode().Perm()
	switch {
	case info.IsDir():
		if exists && !existing.IsDir() {
			if err := root.RemoveAll(rel); err != nil {
				return err
			}
			exists = false
		}
		if !exists {
			return root.Mkdir(rel, 0o700)
		}
		return root.Chmod(rel, 0o700)
	case info.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(p)
		if err != nil {
			return err
		}
		if exists && existing.Mode()&fs.ModeSymlink != 0 {
			if t, err := root.Readlink(rel); err == nil && t == target {
				return nil
			}
		}
		if err := root.RemoveAll(rel); err != nil {
			return err
		}
		return root.Symlink(target, rel)
	default: // regular file: extraction makes nothing else
		tmp := tempName(rel, p)
		if err := root.RemoveAll(tmp); err != nil {
			return err
		}
		if err := copyInto(ctx, root, tmp, p, perm); err != nil {
			return err
		}
		if exists && (existing.IsDir() || existing.Mode()&fs.ModeSymlink != 0) {
			if err := root.RemoveAll(rel); err != nil {
				return err
			}
		}
		return root.Rename(tmp, rel)
	}
}

// copyInto copies the file src to name under root, with mode perm.
func copyInto(ctx context.Context, root *os.Root, name, src string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, ctxio.Reader(ctx, in))
	if err == nil {
		err = out.Chmod(perm)
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}
