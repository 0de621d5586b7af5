package operator_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tendhq/tend/examples/raftcluster/etcdproc"
)

func TestMain(m *testing.M) {
	// The tests run etcd members as children of the test binary.
	etcdproc.RunChildIfRequested()
	code := m.Run()
	if code == 0 {
		if err := findLeaks(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// findLeaks looks for goroutines left running, giving the etcd client's
// connections a few seconds to wind down after Close. client-go keeps one
// cached HTTP/2 connection per API server for the life of the process.
func findLeaks() error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := goleak.Find(goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*ClientConn).readLoop"))
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(250 * time.Millisecond)
	}
}
