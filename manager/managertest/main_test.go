package managertest

import (
	"context"
	"testing"

	"go.uber.org/goleak"

	"github.com/tendhq/tend/store"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func openNothing(context.Context, []string) (store.Backend, func(), error) {
	return nil, func() {}, nil
}
