package etcd

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tendhq/tend/store"
)

// ErrUnavailable marks a request that etcd did not answer: the cluster
// could not be reached, had no leader, or timed out. It is transient: retry
// later. A write that failed with it happened whole or not at all (every
// write is one etcd transaction); a retry with the same revision
// precondition fails with [store.ErrConflict] if the first attempt did
// apply.
var ErrUnavailable = errors.New("etcd: unavailable")

// fail translates an etcd client error into a [store.Error] naming the
// operation and document. The caller's own cancellation is returned as
// ctx.Err().
func (s *Store) fail(ctx context.Context, op, kind, key string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	var cause error
	switch {
	case errors.Is(err, context.Canceled) || code(err) == codes.Canceled:
		// Not the caller's context: the client was closed.
		cause = fmt.Errorf("%w: etcd client: %w", store.ErrClosed, err)
	case errors.Is(err, rpctypes.ErrCompacted):
		cause = fmt.Errorf("%w: %w", store.ErrCompacted, err)
	case errors.Is(err, rpctypes.ErrFutureRev), errors.Is(err, rpctypes.ErrLeaseTTLTooLarge):
		cause = fmt.Errorf("%w: %w", store.ErrInvalid, err)
	case errors.Is(err, rpctypes.ErrRequestTooLarge), errors.Is(err, rpctypes.ErrTooManyOps):
		cause = fmt.Errorf("%w: the document and its labels and owners exceed what one etcd transaction carries: %w", store.ErrInvalid, err)
	case transient(err):
		cause = fmt.Errorf("%w: %w", ErrUnavailable, err)
	default:
		cause = err
	}
	return &store.Error{Op: op, Kind: kind, Key: key, Err: cause}
}

// transient reports whether err says etcd could not serve the request now
// but may later.
func transient(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, clientv3.ErrNoAvailableEndpoints) {
		return true
	}
	switch code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted, codes.Aborted:
		return true
	}
	return false
}

// code returns the gRPC code of err, as etcd's typed errors or gRPC status.
func code(err error) codes.Code {
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		return ee.Code()
	}
	return status.Code(err)
}
