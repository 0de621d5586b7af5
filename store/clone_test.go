package store_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/tendhq/tend/store"
)

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
