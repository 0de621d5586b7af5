package store

import "context"

// Fence names a lease and the token a writer believes it holds.
type Fence struct {
	Lease string
	Token int64
}

type fenceKey struct{}

// WithFence returns a context whose writes succeed only while lease f.Lease is
// held, unexpired, at token f.Token; otherwise they fail with [ErrFenced] and
// write nothing. Backends check the fence in the same atomic step as the write.
func WithFence(ctx context.Context, f Fence) context.Context {
	return context.WithValue(ctx, fenceKey{}, f)
}

// FenceFrom returns the fence carried by ctx, if any. Backends call it in every
// write.
func FenceFrom(ctx context.Context) (Fence, bool) {
	f, ok := ctx.Value(fenceKey{}).(Fence)
	return f, ok
}
