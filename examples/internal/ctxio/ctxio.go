// Package ctxio stops long copies when their context ends.
//
// io.Copy knows nothing of contexts: a copy of a large file goes on long
// after the caller gave up. [Reader] checks the context before every read and
// reads at most [BufferSize] bytes at a time, so a copy through it stops
// within one buffer of the context's end, whatever the size of the reads its
// caller asks for (an S3 client filling a 5 MiB part reads it 32 KiB at a
// time, checking the context before each).
package ctxio

import (
	"context"
	"io"
)

// BufferSize is the most a [Reader] reads at once: the size of io.Copy's
// buffer.
const BufferSize = 32 << 10

// Reader returns a reader of r that fails with the context's error once ctx
// is done, before reading anything more from r, and that reads at most
// [BufferSize] bytes per call.
func Reader(ctx context.Context, r io.Reader) io.Reader {
	return reader{ctx, r}
}

type reader struct {
	ctx context.Context
	r   io.Reader
}

func (c reader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p[:min(len(p), BufferSize)])
}
