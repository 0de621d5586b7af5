package objstoretest_test

import (
	"testing"

	"github.com/tendhq/tend/examples/workspace/objstore"
	"github.com/tendhq/tend/examples/workspace/objstore/objstoretest"
)

// An implementation's tests run the suite with a factory for fresh, empty
// stores. This is how package objstore runs it on both of its stores.
func ExampleRun() {
	testStores := func(t *testing.T) {
		t.Run("Dir", func(t *testing.T) {
			objstoretest.Run(t, func(t *testing.T) objstore.Store {
				d, err := objstore.NewDir(t.TempDir())
				if err != nil {
					t.Fatal(err)
				}
				return d
			})
		})
		t.Run("S3", func(t *testing.T) {
			objstoretest.Run(t, func(t *testing.T) objstore.Store { return objstoretest.S3(t) })
		})
	}
	_ = testStores
}
