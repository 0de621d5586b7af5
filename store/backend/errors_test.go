package backend_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tendhq/tend/store"
	"github.com/tendhq/tend/store/backend"
)

// TestErrors: each error helper returns a *store.Error naming what it was
// given, whose cause matches its sentinel; each check passes what is valid.
func TestErrors(t *testing.T) {
	fence := store.Fence{Lease: "l", Token: 3}
	fenced := store.WithFence(context.Background(), fence)
	errUnfenced := errors.New("no fences")
	meta := store.Meta{Kind: "Widget", Key: "w", UID: "u", Revision: 5}
	held := store.Lease{Name: "l", Holder: "h", Fence: 2}
	for _, c := range []struct {
		name      string
		err       error
		target    error
		kind, key string
		says      string
	}{
		{"revision conflict", backend.RevisionConflict("update spec", "Widget", "w", 4, 5), store.ErrConflict, "Widget", "w", "revision 4 is not the stored 5"},
		{"delete revision", backend.CheckDelete(meta, store.DeleteOptions{Revision: 4}), store.ErrConflict, "Widget", "w", "revision 4"},
		{"delete UID", backend.CheckDelete(meta, store.DeleteOptions{UID: "v"}), store.ErrConflict, "Widget", "w", `UID "v"`},
		{"negative watch", backend.CheckWatch("Widget", -1), store.ErrInvalid, "Widget", "", "negative"},
		{"compacted", backend.Compacted("Widget", 3, 7), store.ErrCompacted, "Widget", "", "up to revision 7"},
		{"compact ahead", backend.CheckCompact(9, 8), store.ErrInvalid, "", "", "outside 0..8"},
		{"fenced", backend.Fenced("delete", "Widget", "w", fence), store.ErrFenced, "Widget", "w", `lease "l"`},
		{"refused fence", backend.RefuseFence(fenced, "create", "Widget", "w", errUnfenced), errUnfenced, "Widget", "w", `fence of lease "l" at 3`},
		{"lease held", backend.LeaseHeld("acquire lease", "l", "h", time.Time{}), store.ErrLeaseHeld, "", "l", `"h" holds it`},
		{"lease lost", backend.LeaseLost("renew lease", held), store.ErrLeaseLost, "", "l", "fence 2"},
		{"bad lease", backend.CheckLease(context.Background(), "acquire lease", "l", "h", 0), store.ErrInvalid, "", "l", "time to live"},
		{"unknown kind", backend.UnknownKind("get", "Gadget", "g", []string{"A", "B"}), store.ErrUnknownKind, "Gadget", "g", "holds A, B"},
		{"malformed kind", backend.UnknownKind("get", "gadget", "g", nil), store.ErrInvalid, "gadget", "g", "upper-case"},
	} {
		var se *store.Error
		switch {
		case !errors.Is(c.err, c.target):
			t.Errorf("%s: %v does not match %v", c.name, c.err, c.target)
		case !errors.As(c.err, &se) || se.Kind != c.kind || se.Key != c.key:
			t.Errorf("%s: %v does not name %s %q", c.name, c.err, c.kind, c.key)
		case !strings.Contains(c.err.Error(), c.says):
			t.Errorf("%s: %q does not say %q", c.name, c.err, c.says)
		}
	}
	for name, err := range map[string]error{
		"delete preconditions hold": backend.CheckDelete(meta, store.DeleteOptions{Revision: 5, UID: "u"}),
		"watch from 0":              backend.CheckWatch("Widget", 0),
		"compact the current":       backend.CheckCompact(8, 8),
		"unfenced write":            backend.RefuseFence(context.Background(), "create", "Widget", "w", errUnfenced),
		"lease":                     backend.CheckLease(context.Background(), "acquire lease", "l", "h", time.Second),
	} {
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := backend.CheckLease(ctx, "acquire lease", "l", "h", time.Second); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled lease call: %v", err)
	}
}

func TestSelects(t *testing.T) {
	m := &store.Meta{Labels: map[string]string{"env": "prod"}, Owners: []store.OwnerRef{{UID: "o1"}}}
	for _, c := range []struct {
		opts store.ListOptions
		want bool
	}{
		{store.ListOptions{}, true},
		{store.ListOptions{Selector: store.MustParseSelector("env=prod")}, true},
		{store.ListOptions{Selector: store.MustParseSelector("env!=prod")}, false},
		{store.ListOptions{OwnerUID: "o1"}, true},
		{store.ListOptions{OwnerUID: "o2"}, false},
		{store.ListOptions{OwnerUID: "o1", Selector: store.MustParseSelector("env=dev")}, false},
	} {
		if got := backend.Selects(c.opts, m); got != c.want {
			t.Errorf("Selects(%q, owner %q) = %v, want %v", c.opts.Selector, c.opts.OwnerUID, got, c.want)
		}
	}
}
