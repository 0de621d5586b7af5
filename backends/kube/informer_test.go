package kube_test

import (
	"testing"

	"github.com/tendhq/tend/informer/informertest"
)

// TestInformerConformance runs the informer's suite on the Kubernetes API,
// with and without the API server's watch cache, as TestConformance runs
// the store's.
func TestInformerConformance(t *testing.T) { onEachStoreServer(t, informertest.Run) }
