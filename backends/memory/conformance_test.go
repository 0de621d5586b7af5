package memory_test

import (
	"testing"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/store"
	"github.com/tendhq/tend/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, kinds []string) store.Backend {
		s, err := memory.New(memory.Config{Kinds: kinds})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
