package store_test

import (
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tendhq/tend/store"
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
			got, err := store.ApplySpec(tt.cur, update)
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
	if err := store.ValidateCreate(ok); err != nil {
		t.Fatal(err)
	}
	for name, d := range map[string]store.Document{
		"revision": {Meta: store.Meta{Kind: "Widget", Key: "w", Revision: 3}},
		"status":   {Meta: store.Meta{Kind: "Widget", Key: "w"}, Status: []byte(`{}`)},
		"key":      {Meta: store.Meta{Kind: "Widget"}},
	} {
		if err := store.ValidateCreate(d); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
}

func TestClone(t *testing.T) {
	d := store.Document{
		Meta: store.Meta{Kind: "Widget", Key: "w", Finalizers: []string{"example.com/a"},
			Owners: []store.OwnerRef{{Kind: "K", Key: "k", UID: "o"}}, Labels: map[string]string{"a": "b"}},
		Spec: []byte("s"), Status: []byte("t"),
	}
	c := d.Clone()
	c.Meta.Finalizers[0], c.Meta.Owners[0].Key, c.Meta.Labels["a"], c.Spec[0], c.Status[0] = "x", "x", "x", 'x', 'x'
	if d.Meta.Finalizers[0] != "example.com/a" || d.Meta.Owners[0].Key != "k" || d.Meta.Labels["a"] != "b" ||
		string(d.Spec) != "s" || string(d.Status) != "t" {
		t.Fatalf("changing a clone changed the original: %+v", d)
	}
}

func TestCloneReusing(t *testing.T) {
	d := store.Document{
		Meta: store.Meta{Kind: "Widget", Key: "w", Revision: 7, Finalizers: []string{"example.com/a"},
			Owners: []store.OwnerRef{{Kind: "K", Key: "k", UID: "o"}}, Labels: map[string]string{"a": "b"}},
		Spec: []byte("spec"), Status: []byte("status"),
	}
	// have equals d in its spec, owners and labels, and differs in its
	// status and finalizers.
	have := store.Document{
		Meta: store.Meta{Kind: "Widget", Key: "w", Finalizers: []string{"example.com/other"},
			Owners: []store.OwnerRef{{Kind: "K", Key: "k", UID: "o"}}, Labels: map[string]string{"a": "b"}},
		Spec: []byte("spec"), Status: []byte("other"),
	}
	c := d.CloneReusing(have)
	if c.Meta.Revision != 7 || string(c.Spec) != "spec" || string(c.Status) != "status" ||
		!slices.Equal(c.Meta.Finalizers, d.Meta.Finalizers) || !slices.Equal(c.Meta.Owners, d.Meta.Owners) ||
		!maps.Equal(c.Meta.Labels, d.Meta.Labels) {
		t.Fatalf("CloneReusing = %+v, want the values of %+v", c, d)
	}
	if &c.Spec[0] != &have.Spec[0] || &c.Meta.Owners[0] != &have.Meta.Owners[0] {
		t.Error("parts equal to have's were copied, not reused")
	}
	c.Meta.Labels["reused"] = "yes"
	if have.Meta.Labels["reused"] != "yes" {
		t.Error("the labels equal to have's were copied, not reused")
	}
	if &c.Status[0] == &d.Status[0] || &c.Meta.Finalizers[0] == &d.Meta.Finalizers[0] ||
		&c.Meta.Finalizers[0] == &have.Meta.Finalizers[0] {
		t.Error("parts that differ from have's were not copied")
	}
	c.Meta.Finalizers[0], c.Status[0] = "x", 'x'
	if d.Meta.Finalizers[0] != "example.com/a" || string(d.Status) != "status" {
		t.Fatalf("changing the result changed the original: %+v", d)
	}
	// Empty parts are nil, whatever have holds.
	e := store.Document{Meta: store.Meta{Labels: map[string]string{}, Finalizers: []string{}}, Spec: []byte{}}
	if c := e.CloneReusing(e); c.Meta.Labels != nil || c.Meta.Finalizers != nil || c.Spec != nil {
		t.Errorf("empty parts cloned as %+v, want nil", c)
	}
}

func TestClonePayloadsDoNotOverlap(t *testing.T) {
	c := store.Document{Spec: []byte("spec"), Status: []byte("status")}.Clone()
	c.Spec = append(c.Spec, "more"...)
	if string(c.Status) != "status" {
		t.Fatalf("appending to the cloned spec changed the status to %q", c.Status)
	}
}
