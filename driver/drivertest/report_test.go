package drivertest_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tendhq/tend/driver/drivertest"
	"github.com/tendhq/tend/driver/drivertest/internal/catalogue"
)

var update = flag.Bool("update", false, "rewrite the golden reports in testdata")

// The reports of three catalogue failures, as Explore prints them, are
// pinned: the run once, a line per action, step call, changed observation
// and phase write with its virtual time, the failed check last, then the
// replay command; at most 25 lines each.
func TestReports(t *testing.T) {
	for _, tt := range []struct {
		file   string
		defect catalogue.Defect
	}{
		{"step-does-nothing.golden", catalogue.StepDoesNothing},
		{"observer-lies.golden", catalogue.ObserverLies},
		{"abort-missing.golden", catalogue.AbortMissing},
	} {
		t.Run(tt.file, func(t *testing.T) {
			f, err := drivertest.Search(t, catalogue.Config(tt.defect), 3)
			if err != nil || f == nil {
				t.Fatalf("not found: %v", err)
			}
			f.Replay = "go test -run '^TestReports$'"
			got := f.Error() + "\n"
			path := filepath.Join("testdata", tt.file)
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("report differs from %s (go test -run TestReports -update rewrites it):\n%s", path, got)
			}
			if n := strings.Count(got, "\n"); n > 25 {
				t.Errorf("%d lines, want at most 25:\n%s", n, got)
			}
			if n := strings.Count(got, f.Problems[0]); n != 1 {
				t.Errorf("the failed check is printed %d times:\n%s", n, got)
			}
			if !strings.HasSuffix(strings.TrimSpace(got), f.Replay) || !strings.Contains(got, "failed:\n  "+f.Problems[0]) {
				t.Errorf("want the failed check last, then the replay command:\n%s", got)
			}
		})
	}
}
