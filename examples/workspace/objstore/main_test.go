package objstore_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that the S3 store's connections end with the tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
