package cascade_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"

	"github.com/tendhq/tend/cascade"
	"github.com/tendhq/tend/store"
)

func TestDelete(t *testing.T) {
	const hold = "example.com/hold"
	tests := []struct {
		name        string
		finalizers  []string
		terminating bool
		policy      cascade.Policy
		wantErr     error
		// stored finalizers afterwards; gone if wantGone
		want     []string
		wantGone bool
	}{
		{name: "background, no finalizers", policy: cascade.Background, wantGone: true},
		{name: "background keeps other finalizers", finalizers: []string{hold}, policy: cascade.Background,
			want: []string{hold}},
		{name: "foreground", finalizers: []string{hold}, policy: cascade.Foreground,
			want: []string{hold, cascade.ForegroundFinalizer}},
		{name: "orphan", policy: cascade.Orphan, want: []string{cascade.OrphanFinalizer}},
		{name: "a left-over policy finalizer is replaced",
			finalizers: []string{cascade.ForegroundFinalizer, hold}, policy: cascade.Orphan,
			want: []string{hold, cascade.OrphanFinalizer}},
		{name: "a left-over policy finalizer is dropped by background",
			finalizers: []string{cascade.OrphanFinalizer}, policy: cascade.Background, wantGone: true},
		{name: "again under the same policy", finalizers: []string{cascade.ForegroundFinalizer},
			terminating: true, policy: cascade.Foreground, want: []string{cascade.ForegroundFinalizer}},
		{name: "again under another policy", finalizers: []string{cascade.ForegroundFinalizer},
			terminating: true, policy: cascade.Orphan, wantErr: cascade.ErrPolicyChange,
			want: []string{cascade.ForegroundFinalizer}},
		{name: "again in the background", finalizers: []string{hold}, terminating: true,
			policy: cascade.Background, want: []string{hold}},
		{name: "invalid policy", policy: cascade.Policy(7), wantErr: cascade.ErrInvalidPolicy},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			w := newWorld(t)
			w.create("Gateway/g", tt.finalizers...)
			if tt.terminating {
				if err := w.s.Delete(ctx, "Gateway", "g", store.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			err := cascade.Delete(ctx, w.s, "Gateway", "g", tt.policy)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("Delete = %v, want %v", err, tt.wantErr)
			}
			if tt.wantGone {
				if w.exists("Gateway/g") {
					t.Fatal("the document was kept")
				}
				return
			}
			g := w.get("Gateway/g")
			if !slices.Equal(g.Meta.Finalizers, tt.want) {
				t.Errorf("finalizers = %v, want %v", g.Meta.Finalizers, tt.want)
			}
			if g.Meta.Terminating() != (tt.terminating || tt.wantErr == nil) {
				t.Errorf("terminating = %v", g.Meta.Terminating())
			}
		})
	}
}

func TestDeleteNotFound(t *testing.T) {
	w := newWorld(t)
	if err := cascade.Delete(context.Background(), w.s, "Gateway", "none", cascade.Foreground); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Delete = %v, want ErrNotFound", err)
	}
}

// racing lets another writer change the document before each of the first
// n writes of Delete.
type racing struct {
	store.Backend
	n      int
	writes int
}

func (r *racing) interfere(ctx context.Context, kind, key string) {
	r.writes++
	if r.writes > r.n {
		return
	}
	doc, err := r.Backend.Get(ctx, kind, key)
	if err != nil {
		return
	}
	doc.Meta.Labels = map[string]string{"touched": "yes", "write": strconv.Itoa(r.writes)}
	_, _ = r.Backend.UpdateSpec(ctx, doc)
}

func (r *racing) UpdateSpec(ctx context.Context, doc store.Document) (store.Document, error) {
	r.interfere(ctx, doc.Meta.Kind, doc.Meta.Key)
	return r.Backend.UpdateSpec(ctx, doc)
}

func (r *racing) Delete(ctx context.Context, kind, key string, opts store.DeleteOptions) error {
	r.interfere(ctx, kind, key)
	return r.Backend.Delete(ctx, kind, key, opts)
}

func TestDeleteRetriesConflicts(t *testing.T) {
	for _, tt := range []struct {
		name    string
		n       int
		wantErr error
	}{
		{"one conflict", 1, nil},
		{"four conflicts", 4, nil},
		{"always", 100, store.ErrConflict},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			w.create("Gateway/g")
			err := cascade.Delete(context.Background(), &racing{Backend: w.s, n: tt.n}, "Gateway", "g", cascade.Foreground)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("Delete = %v, want %v", err, tt.wantErr)
			}
			g := w.get("Gateway/g")
			if tt.wantErr == nil && (!g.Meta.Terminating() || g.Meta.Labels["touched"] != "yes") {
				t.Errorf("meta = %+v, want Terminating with the concurrent label kept", g.Meta)
			}
		})
	}
}

func TestPolicyString(t *testing.T) {
	for p, want := range map[cascade.Policy]string{
		cascade.Background: "Background", cascade.Foreground: "Foreground", cascade.Orphan: "Orphan",
		cascade.Policy(9): "Policy(9)",
	} {
		if got := p.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int(p), got, want)
		}
	}
}
