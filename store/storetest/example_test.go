package storetest_test

import (
	"testing"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/store"
	"github.com/tendhq/tend/store/storetest"
)

// A backend's tests run the suite with a factory for fresh, empty backends.
// This is how package memory runs it; a backend on a real server creates a
// fresh database, key prefix or namespace per call.
func ExampleRun() {
	testConformance := func(t *testing.T) {
		storetest.Run(t, func(t *testing.T, kinds []string) store.Backend {
			s, err := memory.New(memory.Config{Kinds: kinds})
			if err != nil {
				t.Fatal(err)
			}
			return s
		})
	}
	_ = testConformance
}
