package servertest_test

import (
	"runtime"
	"testing"

	"github.com/tendhq/tend/internal/servertest"
)

// recorder is a testing.TB that records how a test would have ended, and
// ends the goroutine it runs in as SkipNow and FailNow do.
type recorder struct {
	testing.TB
	skipped, failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Skipf(string, ...any)  { r.skipped = true; runtime.Goexit() }
func (r *recorder) Fatalf(string, ...any) { r.failed = true; runtime.Goexit() }

// run calls Env with r in a goroutine of its own, as a test would.
func (r *recorder) run(name string) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		servertest.Env(r, name, "x")
	}()
	<-done
}

func TestEnv(t *testing.T) {
	t.Setenv("TEND_SERVERTEST_X", "url")
	if got := servertest.Env(t, "TEND_SERVERTEST_X", "x"); got != "url" {
		t.Fatalf("Env = %q, want the variable's value", got)
	}
	t.Setenv("TEND_SERVERTEST_X", "")
	for _, ci := range []string{"", "true", "1"} {
		t.Setenv("CI", ci)
		r := &recorder{TB: t}
		r.run("TEND_SERVERTEST_X")
		if want := ci != ""; r.failed != want || r.skipped == want {
			t.Errorf("CI=%q, no server: failed %v, skipped %v; want a failure exactly when CI is set", ci, r.failed, r.skipped)
		}
	}
}
