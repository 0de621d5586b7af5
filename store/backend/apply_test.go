package backend_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tendhq/tend/store"
	"github.com/tendhq/tend/store/backend"
)

func TestApplySpec(t *testing.T) {
	stored := func() store.Document {
		return store.Document{
			Meta: store.Meta{Kind: "Widget", Key: "w", UID: "u", Revision: 7, Generation: 2,
				Finalizers: []string{"example.com/a"}, Labels: map[string]string{"app": "x"}},
			Spec: []byte(`{"n":1}`),
		}
	}
	terminating := func() store.Document {
		d := stored()
		d.Meta.DeletionRequestedAt = time.Unix(100, 0)
		return d
	}
	tests := []struct {
		name    string
		cur     store.Document
		edit    func(*store.Document)
		changed bool
		remove  bool
		gen     int64
		wantErr error
	}{
		{name: "nothing changes", cur: stored(), edit: func(*store.Document) {}, gen: 2},
		{name: "spec grows the generation", cur: stored(), edit: func(d *store.Document) { d.Spec = []byte(`{"n":2}`) }, changed: true, gen: 3},
		{name: "labels keep the generation", cur: stored(), edit: func(d *store.Document) { d.Meta.Labels = map[string]string{"app": "y"} }, changed: true, gen: 2},
		{name: "owners", cur: stored(), edit: func(d *store.Document) { d.Meta.Owners = []store.OwnerRef{{Kind: "K", Key: "k", UID: "o"}} }, changed: true, gen: 2},
		{name: "finalizer added", cur: stored(), edit: func(d *store.Document) { d.Meta.Finalizers = append(d.Meta.Finalizers, "example.com/b") }, changed: true, gen: 2},
		{name: "finalizer added while terminating", cur: terminating(), edit: func(d *store.Document) { d.Meta.Finalizers = append(d.Meta.Finalizers, "example.com/b") }, wantErr: store.ErrInvalid},
		{name: "last finalizer removed while terminating", cur: terminating(), edit: func(d *store.Document) { d.Meta.Finalizers = nil }, changed: true, remove: true, gen: 2},
		{name: "last finalizer removed, not terminating", cur: stored(), edit: func(d *store.Document) { d.Meta.Finalizers = nil }, changed: true, gen: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			update := tt.cur.Clone()
			tt.edit(&update)
			got, err := backend.ApplySpec(tt.cur, update)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if got.Changed != tt.changed || got.Remove != tt.remove || got.Next.Meta.Generation != tt.gen {
				t.Fatalf("got changed=%v remove=%v generation=%d, want %v %v %d",
					got.Changed, got.Remove, got.Next.Meta.Generation, tt.changed, tt.remove, tt.gen)
			}
			if !tt.changed {
				if diff := cmp.Diff(tt.cur, got.Next); diff != "" {
					t.Fatalf("an update that changes nothing changed the document (-stored +next):\n%s", diff)
				}
				return
			}
			want := update.Meta
			if diff := cmp.Diff([]any{want.Labels, want.Owners, want.Finalizers, update.Spec},
				[]any{got.Next.Meta.Labels, got.Next.Meta.Owners, got.Next.Meta.Finalizers, got.Next.Spec}); diff != "" {
				t.Fatalf("next does not carry the update (-want +got):\n%s", diff)
			}
			// Next must not share memory with the update.
			before := got.Next.Clone()
			for k := range update.Meta.Labels {
				update.Meta.Labels[k] = "changed"
			}
			for i := range update.Meta.Finalizers {
				update.Meta.Finalizers[i] = "changed"
			}
			for i := range update.Spec {
				update.Spec[i] = 'x'
			}
			if diff := cmp.Diff(before, got.Next); diff != "" {
				t.Fatalf("changing the update changed next (-before +after):\n%s", diff)
			}
		})
	}
}

func TestValidateCreate(t *testing.T) {
	ok := store.Document{Meta: store.Meta{Kind: "Widget", Key: "w"}, Spec: []byte(`{}`)}
	if err := backend.ValidateCreate(ok); err != nil {
		t.Fatal(err)
	}
	for name, d := range map[string]store.Document{
		"revision": {Meta: store.Meta{Kind: "Widget", Key: "w", Revision: 3}},
		"status":   {Meta: store.Meta{Kind: "Widget", Key: "w"}, Status: []byte(`{}`)},
		"key":      {Meta: store.Meta{Kind: "Widget"}},
	} {
		if err := backend.ValidateCreate(d); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
}

func TestValidateMeta(t *testing.T) {
	ok := store.Meta{
		Kind: "Gw", Key: "a",
		Labels:     map[string]string{"app": "gw"},
		Finalizers: []string{"example.com/a", "example.com/b"},
		Owners:     []store.OwnerRef{{Kind: "Ns", Key: "n", UID: "u1", Controller: true}, {Kind: "Ns", Key: "m", UID: "u2"}},
	}
	if err := backend.ValidateMeta(&ok); err != nil {
		t.Fatalf("valid meta: %v", err)
	}
	tests := []struct {
		name   string
		change func(*store.Meta)
		names  string
	}{
		{"kind", func(m *store.Meta) { m.Kind = "gw" }, `"gw"`},
		{"key", func(m *store.Meta) { m.Key = "a//b" }, `"a//b"`},
		{"label", func(m *store.Meta) { m.Labels = map[string]string{"app": "-x"} }, `"-x"`},
		{"duplicate finalizer", func(m *store.Meta) { m.Finalizers = []string{"example.com/a", "example.com/a"} }, `"example.com/a"`},
		{"owner without UID", func(m *store.Meta) { m.Owners = []store.OwnerRef{{Kind: "Ns", Key: "n"}} }, `"n"`},
		{"owner kind", func(m *store.Meta) { m.Owners = []store.OwnerRef{{Kind: "ns", Key: "n", UID: "u"}} }, `"ns"`},
		{"repeated owner", func(m *store.Meta) {
			m.Owners = []store.OwnerRef{{Kind: "Ns", Key: "n", UID: "u"}, {Kind: "Ns", Key: "m", UID: "u"}}
		}, `"u"`},
		{"two controllers", func(m *store.Meta) {
			m.Owners = []store.OwnerRef{{Kind: "Ns", Key: "n", UID: "u", Controller: true}, {Kind: "Ns", Key: "m", UID: "v", Controller: true}}
		}, "controller"},
	}
	for _, tt := range tests {
		m := ok
		tt.change(&m)
		err := backend.ValidateMeta(&m)
		if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), tt.names) {
			t.Errorf("%s: got %v, want ErrInvalid naming %s", tt.name, err, tt.names)
		}
	}
}

func TestValidateLease(t *testing.T) {
	if err := backend.ValidateLease("tend/leader", "host-1:8080", time.Second); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, holder string
		ttl          time.Duration
	}{
		{"", "h", time.Second}, {"a//b", "h", time.Second}, {"a", "", time.Second}, {"a", "h h", time.Second},
		{"a", "h\x7f", time.Second}, {"a", strings.Repeat("h", 254), time.Second}, {"a", "h", 0}, {"a", "h", -1},
	} {
		if err := backend.ValidateLease(c.name, c.holder, c.ttl); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("ValidateLease(%q, %q, %v) = %v, want ErrInvalid", c.name, c.holder, c.ttl, err)
		}
	}
}
