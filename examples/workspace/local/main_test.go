package local_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/tendhq/tend/examples/workspace/local"
)

func TestMain(m *testing.M) {
	local.ServeIfContainer()
	goleak.VerifyTestMain(m)
}
