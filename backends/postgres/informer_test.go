package postgres_test

import (
	"testing"

	"github.com/tendhq/tend/backends/postgres"
	"github.com/tendhq/tend/informer/informertest"
	"github.com/tendhq/tend/store"
)

// TestInformerConformance runs the informer's suite on PostgreSQL: list,
// watch over LISTEN/NOTIFY, resume after a broken watch and relist after
// compaction.
func TestInformerConformance(t *testing.T) {
	pool := newPool(t)
	informertest.Run(t, func(t *testing.T, kinds []string) store.Backend {
		return newStore(t, postgres.Config{Pool: pool, Kinds: kinds})
	})
}
