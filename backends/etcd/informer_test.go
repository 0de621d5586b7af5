package etcd_test

import (
	"testing"

	"github.com/tendhq/tend/informer/informertest"
	"github.com/tendhq/tend/store"
)

// TestInformerConformance runs the informer's suite on etcd: list, watch,
// resume after a broken watch and relist after compaction.
func TestInformerConformance(t *testing.T) {
	informertest.Run(t, func(t *testing.T, kinds []string) store.Backend {
		s, _ := newStore(t, kinds...)
		return s
	})
}
