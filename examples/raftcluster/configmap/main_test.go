package configmap_test

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// client-go keeps one cached HTTP/2 connection per API server for the
	// life of the process.
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*ClientConn).readLoop"))
}
