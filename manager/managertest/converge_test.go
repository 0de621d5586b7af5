package managertest_test

import (
	"testing"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/manager/managertest"
	"github.com/tendhq/tend/store"
)

func openMemory(b *testing.B, kinds []string) store.Backend {
	s, err := memory.New(memory.Config{Kinds: kinds})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// TestConverge runs Converge on the memory store and checks its figures:
// every document takes at least one status write per phase it passes
// (Creating, Created, Starting, Started).
func TestConverge(t *testing.T) {
	const docs = 200
	r := testing.Benchmark(func(b *testing.B) {
		managertest.Converge(b, managertest.ConvergeConfig{Open: openMemory, Documents: docs, Workers: 2})
	})
	if r.N == 0 {
		t.Fatal("the benchmark failed")
	}
	for _, m := range []string{"s/converge", "write-ms", "overhead"} {
		if r.Extra[m] <= 0 {
			t.Errorf("%s = %v, want > 0", m, r.Extra[m])
		}
	}
	if w := r.Extra["writes/converge"]; w < 4*docs {
		t.Errorf("writes/converge = %v, want at least %d", w, 4*docs)
	}
	t.Logf("%d documents: %.3fs, %.0f writes, %.4f ms/write, overhead %.2f", docs,
		r.Extra["s/converge"], r.Extra["writes/converge"], r.Extra["write-ms"], r.Extra["overhead"])
}

// BenchmarkConverge runs Converge on the memory store.
func BenchmarkConverge(b *testing.B) {
	managertest.Converge(b, managertest.ConvergeConfig{Open: openMemory})
}
