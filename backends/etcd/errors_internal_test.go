package etcd

import (
	"context"
	"errors"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tendhq/tend/store"
)

func TestFail(t *testing.T) {
	s := &Store{}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		name string
		ctx  context.Context
		err  error
		want error
	}{
		{"caller cancelled", cancelled, status.Error(codes.Canceled, "x"), context.Canceled},
		{"client closed", context.Background(), context.Canceled, store.ErrClosed},
		{"compacted", context.Background(), rpctypes.ErrCompacted, store.ErrCompacted},
		{"future revision", context.Background(), rpctypes.ErrFutureRev, store.ErrInvalid},
		{"too many operations", context.Background(), rpctypes.ErrTooManyOps, store.ErrInvalid},
		{"request too large", context.Background(), rpctypes.ErrRequestTooLarge, store.ErrInvalid},
		{"no leader", context.Background(), rpctypes.ErrNoLeader, ErrUnavailable},
		{"leader changed", context.Background(), rpctypes.ErrLeaderChanged, ErrUnavailable},
		{"timeout", context.Background(), rpctypes.ErrTimeout, ErrUnavailable},
		{"unreachable", context.Background(), status.Error(codes.Unavailable, "connection refused"), ErrUnavailable},
		{"no endpoints", context.Background(), clientv3.ErrNoAvailableEndpoints, ErrUnavailable},
		{"deadline in the client", context.Background(), context.DeadlineExceeded, ErrUnavailable},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := s.fail(c.ctx, "get", "Widget", "k", c.err)
			if !errors.Is(err, c.want) {
				t.Fatalf("fail(%v) = %v, want one matching %v", c.err, err, c.want)
			}
			if c.want == context.Canceled {
				return
			}
			var se *store.Error
			if !errors.As(err, &se) || se.Op != "get" || se.Kind != "Widget" || se.Key != "k" {
				t.Fatalf("fail(%v) = %v, not a store.Error naming the document", c.err, err)
			}
		})
	}
}
