package archive_test

import (
	"archive/tar"
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/klauspost/compress/zstd"

	"github.com/tendhq/tend/examples/workspace/objstore"
)

// tb is what the helpers need of a test: testing.TB or *rapid.T.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// tarOf builds a tar stream; a regular file's content is its Linkname field
// when Typeflag is TypeReg (Linkname is otherwise meaningless for files).
func tarOf(t tb, hdrs ...tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range hdrs {
		var body string
		if h.Typeflag == tar.TypeReg {
			body, h.Linkname = h.Linkname, ""
			h.Size = int64(len(body))
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func zstdOf(t tb, b []byte) []byte {
	t.Helper()
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	return enc.EncodeAll(b, nil)
}

func file(name, content string) tar.Header {
	return tar.Header{Typeflag: tar.TypeReg, Name: name, Linkname: content}
}
func dir(name string) tar.Header { return tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: 0o755} }
func symlink(name, target string) tar.Header {
	return tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target}
}
func hardlink(name, target string) tar.Header {
	return tar.Header{Typeflag: tar.TypeLink, Name: name, Linkname: target}
}

// tree describes a directory: every entry by slash path, with "dir", "link:"
// and the link's target, "hard:" and the path of the file it is a hard link
// to (the first in lexical order), or the file's content.
func tree(t tb, root string) map[string]string {
	return describe(t, root, false)
}

// describe is tree, with each directory's and file's permission bits in
// front of its description when withModes is set ("0755 dir"). It reads the
// tree through an [os.Root], so paths longer than the kernel takes whole are
// described too.
func describe(t tb, dir string, withModes bool) map[string]string {
	t.Helper()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	out := map[string]string{}
	files := map[uint64]string{} // inode → first path
	var visit func(dir string) error
	visit = func(dir string) error {
		f, err := root.Open(cmp.Or(dir, "."))
		if err != nil {
			return err
		}
		names, err := f.Readdirnames(-1)
		f.Close()
		if err != nil {
			return err
		}
		sort.Strings(names)
		for _, name := range names {
			rel := path.Join(dir, name)
			info, err := root.Lstat(rel)
			if err != nil {
				return err
			}
			var desc string
			switch ino := info.Sys().(*syscall.Stat_t).Ino; {
			case info.IsDir():
				desc = "dir"
			case info.Mode()&fs.ModeSymlink != 0:
				target, err := root.Readlink(rel)
				if err != nil {
					return err
				}
				out[rel] = "link:" + target
				continue
			case !info.Mode().IsRegular():
				out[rel] = "special"
				continue
			case files[ino] != "":
				out[rel] = "hard:" + files[ino]
				continue
			default:
				files[ino] = rel
				b, err := root.ReadFile(rel)
				if err != nil {
					return err
				}
				desc = string(b)
			}
			if withModes {
				desc = fmt.Sprintf("%04o %s", info.Mode().Perm(), desc)
			}
			out[rel] = desc
			if info.IsDir() {
				if err := visit(rel); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := visit(""); err != nil {
		t.Fatal(err)
	}
	return out
}

// writeTree writes files, described as [tree] describes them, under root.
func writeTree(t tb, root string, files map[string]string) {
	t.Helper()
	keys := make([]string, 0, len(files))
	for k := range files {
		keys = append(keys, k)
	}
	// Hard links last, once the files they link to exist.
	hard := func(k string) bool { return strings.HasPrefix(files[k], "hard:") }
	sort.Slice(keys, func(i, j int) bool {
		if hard(keys[i]) != hard(keys[j]) {
			return hard(keys[j])
		}
		return keys[i] < keys[j]
	})
	for _, k := range keys {
		p := filepath.Join(root, filepath.FromSlash(k))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		v := files[k]
		var err error
		switch {
		case v == "dir":
			err = os.MkdirAll(p, 0o755)
		case strings.HasPrefix(v, "link:"):
			err = os.Symlink(strings.TrimPrefix(v, "link:"), p)
		case strings.HasPrefix(v, "hard:"):
			err = os.Link(filepath.Join(root, strings.TrimPrefix(v, "hard:")), p)
		default:
			err = os.WriteFile(p, []byte(v), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// removeTree removes dir and everything under it, making its directories
// writable first (a test runs as any user).
func removeTree(dir string) {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	_ = os.RemoveAll(dir)
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// recorder is an object store that records puts and fails on demand.
type recorder struct {
	objstore.Store
	mu      sync.Mutex // guards puts and failPut
	puts    []string
	failPut func(key string) error
	failGet func(key string) error
	// wrapGet, if set, wraps the body of every Get.
	wrapGet func(io.ReadCloser) io.ReadCloser
	// wrapPut, if set, wraps the reader of every Put.
	wrapPut func(io.Reader) io.Reader
}

var errInjected = errors.New("injected failure")

func (r *recorder) Put(ctx context.Context, key string, rd io.Reader) error {
	r.mu.Lock()
	fail := r.failPut
	r.puts = append(r.puts, key)
	r.mu.Unlock()
	if fail != nil {
		if err := fail(key); err != nil {
			return err
		}
	}
	if r.wrapPut != nil {
		rd = r.wrapPut(rd)
	}
	return r.Store.Put(ctx, key, rd)
}

func (r *recorder) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if r.failGet != nil {
		if err := r.failGet(key); err != nil {
			return nil, err
		}
	}
	body, err := r.Store.Get(ctx, key)
	if err == nil && r.wrapGet != nil {
		body = r.wrapGet(body)
	}
	return body, err
}

func (r *recorder) takePuts() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.puts
	r.puts = nil
	return p
}
