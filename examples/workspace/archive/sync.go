package archive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// syncSuffix names the temporary file a file is copied to before it is
// renamed into place.
const syncSuffix = ".tend-sync"

// Sync makes the directory dst hold exactly what src holds, like
// rsync -a --delete: directories, regular files (copied to a temporary name
// and renamed into place) and symbolic links of src are written to dst, and
// everything in dst that src does not hold is deleted. A crash leaves dst
// partly synced; running Sync again finishes the job. Writes go through an
// [os.Root] on dst, so nothing outside dst is ever changed, even through a
// symbolic link dst held before.
func Sync(ctx context.Context, src, dst string) error {
	root, err := os.OpenRoot(dst)
	if err != nil {
		return fmt.Errorf("archive: sync: %w", err)
	}
	defer root.Close()
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
		return syncEntry(root, rel, p, info)
	})
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

func syncEntry(root *os.Root, rel, p string, info fs.FileInfo) error {
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
			if err := root.Mkdir(rel, perm|0o700); err != nil {
				return err
			}
		}
		return root.Chmod(rel, perm|0o700)
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
		tmp := rel + syncSuffix
		if err := root.RemoveAll(tmp); err != nil {
			return err
		}
		if err := copyInto(root, tmp, p, perm|0o600); err != nil {
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

func copyInto(root *os.Root, name, src string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}
