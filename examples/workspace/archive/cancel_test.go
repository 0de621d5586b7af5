package archive_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tendhq/tend/examples/workspace/archive"
)

// copyBuffer is the buffer a copy goes through: after its context ends, a
// copy may write the one buffer it had read, and nothing more.
const copyBuffer = 32 << 10

// cancelAfter is how many bytes the tests let through before they cancel.
const cancelAfter = 1 << 20

// cancellingReader reads r, counting the bytes it returns, and calls cancel
// once, when it has returned cancelAfter of them.
type cancellingReader struct {
	r      io.Reader
	read   atomic.Int64
	cancel func()
	once   sync.Once
}

func (c *cancellingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if c.read.Add(int64(n)) >= cancelAfter {
		c.once.Do(c.cancel)
	}
	return n, err
}

// cancellingWriter counts the bytes written to it and calls cancel once it
// holds cancelAfter of them.
type cancellingWriter struct {
	written int
	cancel  context.CancelFunc
}

func (c *cancellingWriter) Write(p []byte) (int, error) {
	c.written += len(p)
	if c.written >= cancelAfter {
		c.cancel()
	}
	return len(p), nil
}

// random returns n incompressible bytes, the same for the same seed, so that
// bytes out of a compressor follow bytes in.
func random(n int, seed byte) []byte {
	b := make([]byte, n)
	_, _ = rand.NewChaCha8([32]byte{seed}).Read(b)
	return b
}

// A large file's extraction, from a tar or a tar.zst stream, stops within
// one copy buffer of its context's end, not at the end of the file.
func TestExtractStopsInsideAnEntryWhenCancelled(t *testing.T) {
	tarred := tarOf(t, file("big", string(random(32<<20, 1))))
	for _, tc := range []struct {
		name    string
		stream  []byte
		extract func(context.Context, io.Reader, string, archive.Limits) error
	}{
		{"tar", tarred, archive.ExtractTar},
		{"tar.zst", zstdOf(t, tarred), archive.Extract},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, target, _, cleanup := sandbox(t)
			defer cleanup()
			big := filepath.Join(target, "big")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			atCancel := int64(-1) // bytes of big written when the context ended
			body := &cancellingReader{r: bytes.NewReader(tc.stream), cancel: func() {
				if fi, err := os.Stat(big); err == nil {
					atCancel = fi.Size()
				}
				cancel()
			}}
			if err := tc.extract(ctx, body, target, archive.Limits{}); !errors.Is(err, context.Canceled) {
				t.Fatalf("extract = %v, want context.Canceled", err)
			}
			fi, err := os.Stat(big)
			if err != nil || atCancel < 0 {
				t.Fatalf("the extraction was not inside the file when the context ended: %v", err)
			}
			if after := fi.Size() - atCancel; after > copyBuffer {
				t.Errorf("%d bytes written after the cancellation, want at most one copy buffer (%d)", after, copyBuffer)
			}
		})
	}
}

// A large file's archiving stops within one copy buffer of its context's
// end. The compressor may still hand out the block it had filled: at most
// one zstd block (128 KiB) more.
func TestWriteStopsInsideAFileWhenCancelled(t *testing.T) {
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "big"), random(32<<20, 2), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &cancellingWriter{cancel: cancel}
	if _, err := archive.Write(ctx, out, src); !errors.Is(err, context.Canceled) {
		t.Fatalf("Write = %v, want context.Canceled", err)
	}
	const zstdBlock = 128 << 10
	if after := out.written - cancelAfter; after > copyBuffer+zstdBlock+4<<10 {
		t.Errorf("%d bytes written after the cancellation, want at most one copy buffer and one compressed block", after)
	}
}

// The restore job's download and the archive job's upload stop within one
// copy buffer of their context's end, on every kind of object store.
func TestJobsStopCopyingWhenCancelled(t *testing.T) {
	forEachStore(t, func(t *testing.T, f *fixture) {
		src := t.TempDir()
		if err := os.WriteFile(filepath.Join(src, "big"), random(16<<20, 3), 0o644); err != nil {
			t.Fatal(err)
		}
		key := archive.Key("ws1", "op1")
		if _, err := f.jobs.Archive(context.Background(), key, src); err != nil {
			t.Fatal(err)
		}

		t.Run("download", func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var body *cancellingReader
			f.objects.wrapGet = func(r io.ReadCloser) io.ReadCloser {
				body = &cancellingReader{r: r, cancel: cancel}
				return struct {
					io.Reader
					io.Closer
				}{body, r}
			}
			defer func() { f.objects.wrapGet = nil }()
			if err := f.jobs.Restore(ctx, key, t.TempDir()); !errors.Is(err, context.Canceled) {
				t.Fatalf("Restore = %v, want context.Canceled", err)
			}
			if body == nil || body.read.Load() < cancelAfter {
				t.Fatal("the download was not under way when the context was cancelled")
			}
			if after := body.read.Load() - cancelAfter; after > copyBuffer {
				t.Errorf("%d bytes downloaded after the cancellation, want at most one copy buffer", after)
			}
		})

		t.Run("upload", func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var body *cancellingReader
			f.objects.wrapPut = func(r io.Reader) io.Reader {
				body = &cancellingReader{r: r, cancel: cancel}
				if s, ok := r.(io.Seeker); ok { // the store may size the upload
					return struct {
						io.Reader
						io.Seeker
					}{body, s}
				}
				return body
			}
			defer func() { f.objects.wrapPut = nil }()
			if _, err := f.jobs.Archive(ctx, archive.Key("ws1", "op2"), src); err == nil {
				t.Fatal("Archive succeeded after its context was cancelled")
			}
			if body == nil || body.read.Load() < cancelAfter {
				t.Fatal("the upload was not under way when the context was cancelled")
			}
			if after := body.read.Load() - cancelAfter; after > copyBuffer {
				t.Errorf("%d bytes read for the upload after the cancellation, want at most one copy buffer", after)
			}
		})
	})
}
