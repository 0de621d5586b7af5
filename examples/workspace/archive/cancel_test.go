package archive_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/tendhq/tend/examples/workspace/archive"
)

// copyBuffer is the buffer io.Copy copies through: after its context ends,
// a copy may write the one buffer it had read, and nothing more.
const copyBuffer = 32 << 10

// cancelAfter is how many bytes the tests let through before they cancel.
const cancelAfter = 1 << 20

// cancellingReader reads r, counting the bytes it returns, and calls cancel
// once it has returned cancelAfter of them.
type cancellingReader struct {
	r      io.Reader
	read   atomic.Int64
	cancel context.CancelFunc
}

func (c *cancellingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if c.read.Add(int64(n)) >= cancelAfter {
		c.cancel()
	}
	return n, err
}

func (c *cancellingReader) Close() error { return nil }

// zeros is an endless reader of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// A large file's extraction stops within one copy buffer of its context's
// end, not at the end of the file.
func TestExtractStopsInsideAnEntryWhenCancelled(t *testing.T) {
	const size = 1 << 30
	var hdr bytes.Buffer
	tw := tar.NewWriter(&hdr)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "big", Size: size, Mode: 0o644}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	body := &cancellingReader{r: io.LimitReader(zeros{}, size), cancel: cancel}
	_, target, _ := sandbox(t)
	err := archive.ExtractTar(ctx, io.MultiReader(bytes.NewReader(hdr.Bytes()), body), target, archive.Limits{MaxBytes: 2 * size})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("ExtractTar = %v, want context.Canceled", err)
	}
	fi, err := os.Stat(filepath.Join(target, "big"))
	if err != nil {
		t.Fatal(err)
	}
	if after := fi.Size() - cancelAfter; after > copyBuffer {
		t.Errorf("%d bytes written after the cancellation, want at most one copy buffer (%d)", after, copyBuffer)
	}
}

// A large file's archiving stops within one copy buffer of its context's
// end. The compressor may still hand out the block it had filled: at most
// one zstd block (128 KiB) more.
func TestWriteStopsInsideAFileWhenCancelled(t *testing.T) {
	src := t.TempDir()
	data := make([]byte, 32<<20)
	rnd := rand.NewChaCha8([32]byte{1})
	_, _ = rnd.Read(data) // incompressible, so bytes out follow bytes in
	if err := os.WriteFile(filepath.Join(src, "big"), data, 0o644); err != nil {
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

// The restore job's download stops within one copy buffer of its context's
// end, and so does the archive job's upload, on every kind of object store.
func TestJobsStopCopyingWhenCancelled(t *testing.T) {
	forEachStore(t, func(t *testing.T, f *fixture) {
		src := t.TempDir()
		data := make([]byte, 16<<20)
		_, _ = rand.NewChaCha8([32]byte{2}).Read(data)
		if err := os.WriteFile(filepath.Join(src, "big"), data, 0o644); err != nil {
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
			body := &cancellingReader{r: io.LimitReader(rand.NewChaCha8([32]byte{3}), 64<<20), cancel: cancel}
			err := f.objects.Put(ctx, "ws1/up/home.tar.zst", bufferedReads{body})
			if err == nil {
				t.Fatal("Put succeeded after its context was cancelled")
			}
			if after := body.read.Load() - cancelAfter; after > copyBuffer {
				t.Errorf("%d bytes read for the upload after the cancellation, want at most one copy buffer", after)
			}
		})
	})
}

// bufferedReads hands out at most one copy buffer per read, as a file or a
// connection does, whatever the size the caller asks for.
type bufferedReads struct{ r io.Reader }

func (b bufferedReads) Read(p []byte) (int, error) {
	return b.r.Read(p[:min(len(p), copyBuffer)])
}
