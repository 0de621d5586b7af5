// Package ctxio stops long copies when their context ends.
//
// io.Copy knows nothing of contexts: a copy of a large file goes on long
// after the caller gave up. [Reader] checks the context before every read, so
// a copy through it stops within one buffer of the context's end: io.Copy
// writes at most the one buffer it read before the context ended.
package ctxio

import (
	"context"
	"io"
)

// Reader returns a reader of r that fails with the context's error once ctx
// is done, before reading anything more from r.
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
	return c.r.Read(p)
}
