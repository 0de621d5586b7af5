// Package doctest makes the memory stores and documents the tests of the
// runtime packages start from.
package doctest

import (
	"testing"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/store"
)

// NewStore returns a memory store of the kinds cfg names, Widget and Gadget
// when it names none.
func NewStore(t *testing.T, cfg memory.Config) *memory.Store {
	t.Helper()
	if cfg.Kinds == nil {
		cfg.Kinds = []string{"Widget", "Gadget"}
	}
	s, err := memory.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Create creates the document of kind and key with an empty spec and the
// given owners, failing t when it cannot.
func Create(t *testing.T, s store.Backend, kind, key string, owners ...store.OwnerRef) store.Document {
	t.Helper()
	d, err := s.Create(t.Context(), store.Document{Meta: store.Meta{Kind: kind, Key: key, Owners: owners}, Spec: []byte(`{}`)})
	if err != nil {
		t.Fatalf("create %s %s: %v", kind, key, err)
	}
	return d
}
