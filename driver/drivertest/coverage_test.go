package drivertest_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/tendhq/tend/driver/drivertest"
	"github.com/tendhq/tend/driver/drivertest/internal/catalogue"
)

// With RequireCoverage, Check fails when its runs leave a declared edge or
// step unexercised: here two runs, which cannot take every edge of the VM
// machine. The check runs in a child process, whose failure is the
// expected outcome.
func TestCoverageRequired(t *testing.T) {
	if os.Getenv("DRIVERTEST_COVERAGE_CHILD") != "" {
		cfg := catalogue.Config(catalogue.Correct)
		cfg.RequireCoverage = true
		drivertest.Check(t, cfg)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCoverageRequired$", "-test.v", "-rapid.checks=2")
	cmd.Env = append(os.Environ(), "DRIVERTEST_COVERAGE_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the check passed with two runs:\n%s", out)
	}
	for _, want := range []string{"drivertest: 2 runs, ", "edges covered ", "coverage required: edges never taken: "} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("no %q in:\n%s", want, out)
		}
	}
}
