package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/tendhq/tend/examples/internal/ctxio"
)

// Sentinel errors.
var (
	// ErrNotFound: no object has the key.
	ErrNotFound = errors.New("objstore: not found")
	// ErrInvalidKey: the key is empty, absolute, or has an empty, "." or ".."
	// component.
	ErrInvalidKey = errors.New("objstore: invalid key")
)

// Info describes a stored object.
type Info struct {
	Key      string
	Size     int64
	Modified time.Time
}

// Store is an object store. Every method is safe for concurrent use.
type Store interface {
	// Head returns the object's info, or an error matching ErrNotFound.
	Head(ctx context.Context, key string) (Info, error)
	// Put stores the bytes of r under key, replacing any object there. It is
	// atomic: on failure the previous object (or none) stays.
	Put(ctx context.Context, key string, r io.Reader) error
	// Get opens the object, or fails with an error matching ErrNotFound. The
	// caller closes the reader.
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	// Delete removes the object; a missing object is no error.
	Delete(ctx context.Context, key string) error
	// List returns the objects whose key starts with prefix, sorted by key.
	List(ctx context.Context, prefix string) ([]Info, error)
}

// ValidateKey reports whether key can name an object: a non-empty,
// slash-separated relative path without empty, "." or ".." components. Errors
// match ErrInvalidKey.
func ValidateKey(key string) error {
	if key == "" || strings.HasPrefix(key, "/") || strings.ContainsRune(key, 0) || strings.Contains(key, `\`) {
		return fmt.Errorf("%w: %q", ErrInvalidKey, key)
	}
	for c := range strings.SplitSeq(key, "/") {
		if c == "" || c == "." || c == ".." || c == tmpDir {
			return fmt.Errorf("%w: %q", ErrInvalidKey, key)
		}
	}
	return nil
}

// tmpDir is the directory of a Dir where uploads are written before they are
// renamed into place; no key may use it.
const tmpDir = ".uploads"

// Dir is a [Store] that keeps each object as a file under a directory, its key
// as the file's relative path. Uploads are written to a temporary file and
// renamed into place, so a Put is atomic. A zero Dir is not usable; build one
// with [NewDir].
type Dir struct {
	root string
}

var _ Store = (*Dir)(nil)

// NewDir returns a store over the directory root, creating it if needed.
func NewDir(root string) (*Dir, error) {
	if root == "" {
		return nil, errors.New("objstore: NewDir needs a directory")
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("objstore: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(root, tmpDir), 0o755); err != nil {
		return nil, fmt.Errorf("objstore: %w", err)
	}
	return &Dir{root: root}, nil
}

func (d *Dir) path(key string) (string, error) {
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	return filepath.Join(d.root, filepath.FromSlash(key)), nil
}

func notFound(key string, err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	return fmt.Errorf("objstore: %s: %w", key, err)
}

// Head implements [Store].
func (d *Dir) Head(ctx context.Context, key string) (Info, error) {
	p, err := d.path(key)
	if err != nil {
		return Info{}, err
	}
	if err := ctx.Err(); err != nil {
		return Info{}, err
	}
	fi, err := os.Stat(p)
	if err != nil {
		return Info{}, notFound(key, err)
	}
	if !fi.Mode().IsRegular() {
		return Info{}, fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	return Info{Key: key, Size: fi.Size(), Modified: fi.ModTime()}, nil
}

// Put implements [Store].
func (d *Dir) Put(ctx context.Context, key string, r io.Reader) error {
	p, err := d.path(key)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Join(d.root, tmpDir), "put-*")
	if err != nil {
		return fmt.Errorf("objstore: %s: %w", key, err)
	}
	defer os.Remove(f.Name())
	_, err = io.Copy(f, ctxio.Reader(ctx, r))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.MkdirAll(filepath.Dir(p), 0o755)
	}
	if err == nil {
		err = os.Rename(f.Name(), p)
	}
	if err != nil {
		return fmt.Errorf("objstore: %s: %w", key, err)
	}
	return nil
}

// Get implements [Store].
func (d *Dir) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	p, err := d.path(key)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, notFound(key, err)
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	return f, nil
}

// Delete implements [Store]. Directories left empty are removed.
func (d *Dir) Delete(ctx context.Context, key string) error {
	p, err := d.path(key)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("objstore: %s: %w", key, err)
	}
	for dir := path.Dir(key); dir != "."; dir = path.Dir(dir) {
		if os.Remove(filepath.Join(d.root, filepath.FromSlash(dir))) != nil {
			break // not empty, or gone
		}
	}
	return nil
}

// List implements [Store].
func (d *Dir) List(ctx context.Context, prefix string) ([]Info, error) {
	var out []Info
	err := filepath.WalkDir(d.root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, _ := filepath.Rel(d.root, p)
		key := filepath.ToSlash(rel)
		if e.IsDir() {
			if key == tmpDir {
				return fs.SkipDir
			}
			return nil
		}
		if !e.Type().IsRegular() || !strings.HasPrefix(key, prefix) {
			return nil
		}
		fi, err := e.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // deleted while listing
			}
			return err
		}
		out = append(out, Info{Key: key, Size: fi.Size(), Modified: fi.ModTime()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("objstore: list %q: %w", prefix, err)
	}
	slices.SortFunc(out, func(a, b Info) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}
