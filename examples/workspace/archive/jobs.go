package archive

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/tendhq/tend/examples/internal/ctxio"
	"github.com/tendhq/tend/examples/workspace/objstore"
)

// metaPrefix starts the content of a .meta object.
const metaPrefix = "sha256:"

// Config configures [New].
type Config struct {
	// Objects is the object storage archives go to. Required.
	Objects objstore.Store
	// Scratch is the directory jobs use for downloads, uploads and staging
	// (the job's emptyDir). Each run works in its own subdirectory, which it
	// clears before it starts (what a crashed run left) and removes when it
	// ends. Required.
	Scratch string
	// Limits bound what one restore may extract.
	Limits Limits
}

// Jobs runs archive and restore jobs against one object store. It keeps no
// state between runs: each run only takes its parameters (the archive's key
// and a directory). A Jobs is safe for concurrent use by runs on different
// keys.
type Jobs struct {
	objects objstore.Store
	scratch string
	limits  Limits
}

// New returns the jobs of cfg.
func New(cfg Config) (*Jobs, error) {
	if cfg.Objects == nil || cfg.Scratch == "" {
		return nil, errors.New("archive: New needs Objects and Scratch")
	}
	return &Jobs{objects: cfg.Objects, scratch: cfg.Scratch, limits: cfg.Limits.withDefaults()}, nil
}

// ArchiveResult is what an archive run did.
type ArchiveResult struct {
	// Skipped is set when the HEAD check found the archive complete.
	Skipped bool
	// Checksum is the content of the .meta written ("sha256:{hex}"); empty
	// when skipped.
	Checksum string
	// Size is the archive's size in bytes; zero when skipped.
	Size int64
	// Excluded lists the files left out (see [Write]).
	Excluded []string
}

// workdir returns a fresh scratch directory for one run on key and a
// function that removes it.
func (j *Jobs) workdir(kind, key string) (string, func(), error) {
	sum := sha256.Sum256([]byte(key))
	dir := filepath.Join(j.scratch, kind+"-"+hex.EncodeToString(sum[:8]))
	if err := os.RemoveAll(dir); err != nil {
		return "", nil, fmt.Errorf("archive: clearing scratch: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", nil, fmt.Errorf("archive: scratch: %w", err)
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}

// Complete reports whether the archive under key is complete: the archive
// and its .meta (the commit marker) both exist.
func (j *Jobs) Complete(ctx context.Context, key string) (bool, error) {
	return Complete(ctx, j.objects, key)
}

// Complete reports whether the archive under key in objects is complete:
// the archive and its .meta (the commit marker) both exist. It is the HEAD
// check, for a caller that runs no job.
func Complete(ctx context.Context, objects objstore.Store, key string) (bool, error) {
	for _, k := range []string{MetaKey(key), key} {
		if _, err := objects.Head(ctx, k); errors.Is(err, objstore.ErrNotFound) {
			return false, nil
		} else if err != nil {
			return false, fmt.Errorf("archive: HEAD %s: %w", k, err)
		}
	}
	return true, nil
}

// Archive runs the archive job: it archives the directory src under key
// unless the HEAD check finds that archive complete. It uploads the archive
// first and its .meta last, so an archive without .meta is incomplete and is
// overwritten by the next run. A missing src fails with [ErrNoSource].
func (j *Jobs) Archive(ctx context.Context, key, src string) (ArchiveResult, error) {
	if _, _, ok := ParseKey(key); !ok || strings.HasSuffix(key, MetaSuffix) {
		return ArchiveResult{}, fmt.Errorf("%w: %q", ErrInvalidKey, key)
	}
	if done, err := j.Complete(ctx, key); err != nil || done {
		return ArchiveResult{Skipped: done}, err
	}
	if fi, err := os.Stat(src); errors.Is(err, fs.ErrNotExist) || (err == nil && !fi.IsDir()) {
		return ArchiveResult{}, fmt.Errorf("%w: %s", ErrNoSource, src)
	} else if err != nil {
		return ArchiveResult{}, fmt.Errorf("archive: %w", err)
	}
	dir, cleanup, err := j.workdir("archive", key)
	if err != nil {
		return ArchiveResult{}, err
	}
	defer cleanup()

	f, err := os.Create(filepath.Join(dir, Name))
	if err != nil {
		return ArchiveResult{}, fmt.Errorf("archive: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	excluded, err := Write(ctx, io.MultiWriter(f, h), src)
	if err != nil {
		return ArchiveResult{}, err
	}
	size, err := f.Seek(0, io.SeekCurrent)
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		return ArchiveResult{}, fmt.Errorf("archive: %w", err)
	}
	sum := metaPrefix + hex.EncodeToString(h.Sum(nil))
	if err := j.objects.Put(ctx, key, f); err != nil {
		return ArchiveResult{}, fmt.Errorf("archive: upload %s: %w", key, err)
	}
	if err := j.objects.Put(ctx, MetaKey(key), strings.NewReader(sum)); err != nil {
		return ArchiveResult{}, fmt.Errorf("archive: upload %s: %w", MetaKey(key), err)
	}
	return ArchiveResult{Checksum: sum, Size: size, Excluded: excluded}, nil
}

// Restore runs the restore job: it downloads the archive under key and its
// .meta, verifies the checksum, extracts the archive to a staging directory
// and syncs it into dst, deleting what the archive does not hold. Nothing in
// dst changes before the checksum is verified and the archive extracted;
// a mismatch fails with [ErrChecksum], a missing archive with [ErrNotFound],
// a refused entry with [ErrUnsafe]. It is crash-only: a retry starts over.
func (j *Jobs) Restore(ctx context.Context, key, dst string) error {
	if _, _, ok := ParseKey(key); !ok || strings.HasSuffix(key, MetaSuffix) {
		return fmt.Errorf("%w: %q", ErrInvalidKey, key)
	}
	if fi, err := os.Stat(dst); err != nil || !fi.IsDir() {
		return fmt.Errorf("archive: restore into %s: not a directory", dst)
	}
	want, err := j.readMeta(ctx, key)
	if err != nil {
		return err
	}
	dir, cleanup, err := j.workdir("restore", key)
	if err != nil {
		return err
	}
	defer cleanup()

	file := filepath.Join(dir, Name)
	got, err := j.download(ctx, key, file)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("%w: %s has %s, its .meta says %s", ErrChecksum, key, got, want)
	}
	staging := filepath.Join(dir, "staging")
	if err := os.Mkdir(staging, 0o700); err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	f, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	defer f.Close()
	if err := Extract(ctx, f, staging, j.limits); err != nil {
		return err
	}
	return Sync(ctx, staging, dst)
}

// readMeta reads the checksum of the archive under key.
func (j *Jobs) readMeta(ctx context.Context, key string) (string, error) {
	r, err := j.objects.Get(ctx, MetaKey(key))
	if errors.Is(err, objstore.ErrNotFound) {
		return "", fmt.Errorf("%w: %s", ErrNotFound, MetaKey(key))
	}
	if err != nil {
		return "", fmt.Errorf("archive: download %s: %w", MetaKey(key), err)
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, 256))
	if err != nil {
		return "", fmt.Errorf("archive: download %s: %w", MetaKey(key), err)
	}
	meta := strings.TrimSpace(string(b))
	if hexSum, ok := strings.CutPrefix(meta, metaPrefix); !ok || len(hexSum) != 2*sha256.Size {
		return "", fmt.Errorf("%w: %s is malformed: %q", ErrChecksum, MetaKey(key), meta)
	}
	return meta, nil
}

// download copies the archive under key to file and returns its checksum.
func (j *Jobs) download(ctx context.Context, key, file string) (string, error) {
	r, err := j.objects.Get(ctx, key)
	if errors.Is(err, objstore.ErrNotFound) {
		return "", fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	if err != nil {
		return "", fmt.Errorf("archive: download %s: %w", key, err)
	}
	defer r.Close()
	f, err := os.Create(file)
	if err != nil {
		return "", fmt.Errorf("archive: %w", err)
	}
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(f, h), ctxio.Reader(ctx, r))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("archive: download %s: %w", key, err)
	}
	return metaPrefix + hex.EncodeToString(h.Sum(nil)), nil
}
