package registry_test

import (
	"errors"
	"testing"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/registry"
	"github.com/tendhq/tend/statemachine"
)

func entry(version int, name string) registry.Entry {
	return registry.Entry{Kind: "Service", Digest: name, Machine: statemachine.Descriptor{Name: name, Version: version}}
}

// Put replaces an entry with a newer version, or another machine of the
// same version, but never a newer version with an older one.
func TestPutKeepsTheNewerVersion(t *testing.T) {
	mem, err := memory.New(memory.Config{Kinds: registry.Kinds()})
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		e     registry.Entry
		wrote bool
		err   error
		want  string
	}{
		{entry(1, "a"), true, nil, "a"},
		{entry(1, "a"), false, nil, "a"},
		{entry(2, "b"), true, nil, "b"},
		{entry(1, "a"), false, registry.ErrSuperseded, "b"},
		{entry(2, "c"), true, nil, "c"},
	}
	for i, s := range steps {
		wrote, err := registry.Put(t.Context(), mem, s.e)
		if wrote != s.wrote || !errors.Is(err, s.err) {
			t.Fatalf("step %d: Put wrote %v, %v; want %v, %v", i, wrote, err, s.wrote, s.err)
		}
		got, err := registry.Get(t.Context(), mem, "Service")
		if err != nil || got.Digest != s.want {
			t.Fatalf("step %d: recorded %q (%v), want %q", i, got.Digest, err, s.want)
		}
	}
}
