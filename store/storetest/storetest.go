package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/tendhq/tend/store"
)

// kinds are the kinds the suite asks newBackend for.
var kinds = []string{"Widget", "Gadget"}

const (
	widget = "Widget"
	gadget = "Gadget"
)

// checkTimeout bounds each check, so a watch that never delivers fails the
// check instead of hanging the test binary.
const checkTimeout = 60 * time.Second

// check is one conformance property, run on a fresh backend. It returns
// the first violation it finds.
type check struct {
	name string
	run  func(ctx context.Context, b store.Backend) error
}

// checks is the suite, in the order Run runs it.
var checks = []check{
	{"CreateGet", checkCreateGet},
	{"Copies", checkCopies},
	{"Conflicts", checkConflicts},
	{"NoLostUpdate", checkNoLostUpdate},
	{"Generation", checkGeneration},
	{"SpecStatusSeparation", checkSeparation},
	{"Delete", checkDelete},
	{"Finalizers", checkFinalizers},
	{"ListByLabel", checkListByLabel},
	{"ListByOwner", checkListByOwner},
	{"ListPages", checkListPages},
	{"WatchOrder", checkWatchOrder},
	{"WatchResume", checkWatchResume},
	{"WatchAhead", checkWatchAhead},
	{"WatchContext", checkWatchContext},
	{"Compacted", checkCompacted},
	{"LeaseExclusive", checkLeaseExclusive},
	{"LeaseExpiry", checkLeaseExpiry},
	{"Fencing", checkFencing},
	{"ContextCancelled", checkCancelled},
	{"BadInput", checkBadInput},
}

// Run runs the conformance suite, one subtest per property, each on a fresh
// backend from newBackend configured with kinds (the suite asks for
// "Widget" and "Gadget").
// The backend must also implement [backend.Compactor] (directly or through
// the test's wrapper) so the suite can check [store.ErrCompacted].
//
// Lease expiry is judged by the backend's own clock, so the lease checks
// wait for real time to pass, with time-to-live values under a second.
func Run(t *testing.T, newBackend func(t *testing.T, kinds []string) store.Backend) {
	t.Helper()
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			b := newBackend(t, slices.Clone(kinds))
			ctx, cancel := context.WithTimeout(t.Context(), checkTimeout)
			defer cancel()
			if err := c.run(ctx, b); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// spec and its parse give the suite's payloads: compact JSON, so that
// backends storing JSON natively keep them byte for byte.
func spec(n int) []byte { return fmt.Appendf(nil, `{"n":%d}`, n) }

func parse(b []byte) (int, error) {
	var v struct{ N int }
	if err := json.Unmarshal(b, &v); err != nil {
		return 0, fmt.Errorf("payload %q: %w", b, err)
	}
	return v.N, nil
}

func newDoc(kind, key string, n int) store.Document {
	return store.Document{Meta: store.Meta{Kind: kind, Key: key}, Spec: spec(n)}
}

// wantErr checks that err matches target and, for store errors, names the
// document.
func wantErr(what string, err, target error, kind, key string) error {
	if !errors.Is(err, target) {
		return fmt.Errorf("%s: got error %v, want one matching %v", what, err, target)
	}
	if target == context.Canceled || target == context.DeadlineExceeded {
		return nil
	}
	var se *store.Error
	if !errors.As(err, &se) {
		return fmt.Errorf("%s: error %v is not a *store.Error", what, err)
	}
	if se.Kind != kind || se.Key != key {
		return fmt.Errorf("%s: error %v names %s %q, want %s %q", what, err, se.Kind, se.Key, kind, key)
	}
	return nil
}

// cloneDoc returns a deep copy of d.
func cloneDoc(d store.Document) store.Document {
	d.Spec, d.Status = slices.Clone(d.Spec), slices.Clone(d.Status)
	d.Meta.Finalizers, d.Meta.Owners = slices.Clone(d.Meta.Finalizers), slices.Clone(d.Meta.Owners)
	if d.Meta.Labels != nil {
		d.Meta.Labels = maps.Clone(d.Meta.Labels)
	}
	return d
}

// firstErr returns the first non-nil error.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// sameDoc reports how two documents differ in what a backend stores, or "".
func sameDoc(got, want store.Document) string {
	g, w := got.Meta, want.Meta
	switch {
	case g.Kind != w.Kind || g.Key != w.Key:
		return fmt.Sprintf("names %s %q, want %s %q", g.Kind, g.Key, w.Kind, w.Key)
	case g.UID != w.UID:
		return fmt.Sprintf("UID %q, want %q", g.UID, w.UID)
	case g.Revision != w.Revision:
		return fmt.Sprintf("revision %d, want %d", g.Revision, w.Revision)
	case g.Generation != w.Generation:
		return fmt.Sprintf("generation %d, want %d", g.Generation, w.Generation)
	case !g.CreatedAt.Equal(w.CreatedAt) || !g.UpdatedAt.Equal(w.UpdatedAt):
		return fmt.Sprintf("times %v/%v, want %v/%v", g.CreatedAt, g.UpdatedAt, w.CreatedAt, w.UpdatedAt)
	case !g.DeletionRequestedAt.Equal(w.DeletionRequestedAt):
		return fmt.Sprintf("deletion requested at %v, want %v", g.DeletionRequestedAt, w.DeletionRequestedAt)
	case !slices.Equal(g.Finalizers, w.Finalizers):
		return fmt.Sprintf("finalizers %q, want %q", g.Finalizers, w.Finalizers)
	case !slices.Equal(g.Owners, w.Owners):
		return fmt.Sprintf("owners %+v, want %+v", g.Owners, w.Owners)
	case !maps.Equal(g.Labels, w.Labels):
		return fmt.Sprintf("labels %v, want %v", g.Labels, w.Labels)
	case string(got.Spec) != string(want.Spec):
		return fmt.Sprintf("spec %q, want %q", got.Spec, want.Spec)
	case string(got.Status) != string(want.Status):
		return fmt.Sprintf("status %q, want %q", got.Status, want.Status)
	}
	return ""
}

// expectStored checks that the backend holds want under its key.
func expectStored(ctx context.Context, b store.Backend, what string, want store.Document) error {
	got, err := b.Get(ctx, want.Meta.Kind, want.Meta.Key)
	if err != nil {
		return fmt.Errorf("%s: get: %w", what, err)
	}
	if diff := sameDoc(got, want); diff != "" {
		return fmt.Errorf("%s: stored %s %q has %s", what, want.Meta.Kind, want.Meta.Key, diff)
	}
	return nil
}

// expectAbsent checks that nothing is stored under kind and key.
func expectAbsent(ctx context.Context, b store.Backend, what, kind, key string) error {
	_, err := b.Get(ctx, kind, key)
	return wantErr(what+": get", err, store.ErrNotFound, kind, key)
}

// revision returns the backend's current revision, as List reports it.
func revision(ctx context.Context, b store.Backend) (int64, error) {
	res, err := b.List(ctx, widget, store.ListOptions{})
	if err != nil {
		return 0, fmt.Errorf("list: %w", err)
	}
	return res.Revision, nil
}
