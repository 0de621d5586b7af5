// Package servertest finds, for a test, a server the test command starts.
// Each script of scripts/servers starts one server and exports the
// environment variables that locate it (TEND_POSTGRES_URL, TEND_KUBECONFIG,
// TEND_CHROMIUM, ...). A test that needs a server it cannot find is skipped,
// except under CI, where a missing server is a failure: the test command
// must have started it.
package servertest

import (
	"os"
	"testing"
)

// Env returns the environment variable name, which
// scripts/servers/<script>.sh exports when it starts the server the test
// needs. Without it the test is skipped, or fails when CI is set.
func Env(t testing.TB, name, script string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not set under CI: scripts/servers/%s.sh did not start its server", name, script)
		}
		t.Skipf("%s is not set: run `make test` (or source scripts/servers/%s.sh) to start the server", name, script)
	}
	return v
}
