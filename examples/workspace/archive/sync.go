package archive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"syscall"

	"github.com/tendhq/tend/examples/internal/ctxio"
)

// syncPrefix starts the name of the temporary file a file is copied to, in
// its directory, before it is renamed into place.
const syncPrefix = ".tend-sync-"

// Sync makes the directory dst hold exactly what the directory src holds,
// like rsync -aH --delete: directories, regular files (copied to a temporary
// name and renamed into place), hard links between them and symbolic links
// of src are written to dst with their permission bits, and everything in
// dst that src does not hold is deleted. Directories get their modes last,
// once nothing more is written into them or deleted from them. A cancelled
// ctx stops it within one copy buffer (32 KiB). A crash leaves dst partly
// synced; running Sync again finishes the job. Both trees are reached
// through an [os.Root], component by component: paths of any length are
// synced, and nothing outside dst is ever changed, even through a symbolic
// link dst held before.
func Sync(ctx context.Context, src, dst string) error {
	from, err := os.OpenRoot(src)
	if err != nil {
		return fmt.Errorf("archive: sync: %w", err)
	}
	defer from.Close()
	to, err := os.OpenRoot(dst)
	if err != nil {
		return fmt.Errorf("archive: sync: %w", err)
	}
	defer to.Close()
	s := &syncer{from: from, to: to, links: hardLinks{}}
	var dirs []string // directories of src, parents first
	err = walk(ctx, from, func(rel string, info fs.FileInfo) error {
		if info.IsDir() {
			dirs = append(dirs, rel)
		}
		return s.entry(ctx, rel, info)
	})
	if err != nil {
		return fmt.Errorf("archive: sync into %s: %w", dst, err)
	}
	err = walk(ctx, to, func(rel string, _ fs.FileInfo) error {
		_, err := from.Lstat(rel)
		if err == nil {
			return nil
		}
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return err
		}
		if err := to.RemoveAll(rel); err != nil {
			return err
		}
		return fs.SkipDir
	})
	if err != nil {
		return fmt.Errorf("archive: sync, deleting extraneous files from %s: %w", dst, err)
	}
	for _, rel := range slices.Backward(dirs) { // children first
		info, err := from.Lstat(rel)
		if err == nil {
			err = to.Chmod(rel, info.Mode().Perm())
		}
		if err != nil {
			return fmt.Errorf("archive: sync into %s: %w", dst, err)
		}
	}
	return nil
}

// syncer is one Sync's state.
type syncer struct {
	from, to *os.Root
	links    hardLinks // regular files of from already synced
}

// entry writes the entry rel of from, with Lstat info, to the same name
// under to. Directories are left writable (0700) until Sync ends.
func (s *syncer) entry(ctx context.Context, rel string, info fs.FileInfo) error {
	existing, err := s.to.Lstat(rel)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	switch {
	case info.IsDir():
		if exists && !existing.IsDir() {
			if err := s.to.RemoveAll(rel); err != nil {
				return err
			}
			exists = false
		}
		if !exists {
			return s.to.Mkdir(rel, 0o700)
		}
		return s.to.Chmod(rel, 0o700)
	case info.Mode()&fs.ModeSymlink != 0:
		target, err := s.from.Readlink(rel)
		if err != nil {
			return err
		}
		if exists && existing.Mode()&fs.ModeSymlink != 0 {
			if t, err := s.to.Readlink(rel); err == nil && t == target {
				return nil
			}
		}
		if err := s.to.RemoveAll(rel); err != nil {
			return err
		}
		return s.to.Symlink(target, rel)
	default: // a regular file: extraction makes nothing else
		tmp, err := s.tempName(rel)
		if err != nil {
			return err
		}
		if err := s.to.RemoveAll(tmp); err != nil {
			return err
		}
		if first, ok := s.links.first(rel, info); ok {
			err = s.to.Link(first, tmp)
		} else {
			err = s.copy(ctx, rel, tmp, info.Mode().Perm())
		}
		if err != nil {
			return err
		}
		if exists && (existing.IsDir() || existing.Mode()&fs.ModeSymlink != 0) {
			if err := s.to.RemoveAll(rel); err != nil {
				return err
			}
		}
		return s.to.Rename(tmp, rel)
	}
}

// tempName returns the name, beside rel, of the temporary file to copy the
// file rel of from to: short (rel's own name may be as long as a name can
// be), and one from's directory does not hold, so that it never replaces a
// file already synced.
func (s *syncer) tempName(rel string) (string, error) {
	for n := 0; ; n++ {
		name := path.Join(path.Dir(rel), syncPrefix+strconv.Itoa(n))
		if _, err := s.from.Lstat(name); errors.Is(err, fs.ErrNotExist) {
			return name, nil
		} else if err != nil {
			return "", err
		}
	}
}

// copy copies the file rel of from to name under to, with mode perm.
func (s *syncer) copy(ctx context.Context, rel, name string, perm fs.FileMode) error {
	in, err := s.from.Open(rel)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := s.to.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
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
