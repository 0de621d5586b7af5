package storetest

import (
	"testing"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/store"
)

// TestStressMemory runs the stress property on the memory store, which has
// no server to restart.
func TestStressMemory(t *testing.T) {
	Stress(t, StressConfig{New: func(t *testing.T, kinds []string) store.Backend {
		s, err := memory.New(memory.Config{Kinds: kinds})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}})
}

// TestStressCatchesLostEvents: the property fails a backend whose watches
// drop an event.
func TestStressCatchesLostEvents(t *testing.T) {
	s, err := memory.New(memory.Config{Kinds: kinds})
	if err != nil {
		t.Fatal(err)
	}
	if err := stress(t.Context(), t, dropsEvent{s}, nil, 1, 4, 20); err == nil {
		t.Fatal("the stress property passed a backend whose watches drop an event")
	}
}
