package archive_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/klauspost/compress/zstd"

	"github.com/tendhq/tend/examples/workspace/objstore"
)

// tb is what the helpers need of a test: testing.TB or *rapid.T.
type tb interface {
	Helper()
	Fatal(args ...any)
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

// tree describes a directory: every entry by slash path, with "dir", "link:
// target" or the file's content.
func tree(t tb, root string) map[string]string {
	return describe(t, root, false)
}

// describe is tree, with each directory's and file's permission bits in
// front of its description when withModes is set ("0755 dir").
func describe(t tb, root string, withModes bool) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil
		}
		rel = filepath.ToSlash(rel)
		var desc string
		switch {
		case d.IsDir():
			desc = "dir"
		case d.Type()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[rel] = "link:" + target
			return nil
		case !d.Type().IsRegular():
			out[rel] = "special"
			return nil
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			desc = string(b)
		}
		if withModes {
			info, err := d.Info()
			if err != nil {
				return err
			}
			desc = fmt.Sprintf("%04o %s", info.Mode().Perm(), desc)
		}
		out[rel] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func writeTree(t tb, root string, files map[string]string) {
	t.Helper()
	keys := make([]string, 0, len(files))
	for k := range files {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p := filepath.Join(root, filepath.FromSlash(k))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		v := files[k]
		switch {
		case v == "dir":
			err := os.MkdirAll(p, 0o755)
			if err != nil {
				t.Fatal(err)
			}
		case strings.HasPrefix(v, "link:"):
			if err := os.Symlink(strings.TrimPrefix(v, "link:"), p); err != nil {
				t.Fatal(err)
			}
		default:
			if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
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
