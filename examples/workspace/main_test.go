package main

import (
	"bytes"
	"context"
	"flag"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tendhq/tend/examples/internal/generated"
	"github.com/tendhq/tend/examples/workspace/dataplane"
	"github.com/tendhq/tend/examples/workspace/local"
	"github.com/tendhq/tend/examples/workspace/objstore/objstoretest"
)

var update = flag.Bool("update", false, "rewrite the diagram in README.md")

func TestMain(m *testing.M) {
	local.ServeIfContainer()
	goleak.VerifyTestMain(m)
}

// TestREADMEDiagram fails when README.md's diagram is not the one the
// workspace machine renders; go generate rewrites it.
func TestREADMEDiagram(t *testing.T) {
	m, err := dataplane.NewMachine()
	if err != nil {
		t.Fatal(err)
	}
	generated.Check(t, "README.md", "go generate ./examples/workspace", *update,
		generated.Section{Name: m.Name() + " diagram", Body: "```mermaid\n" + m.Mermaid() + "```"})
}

// TestScenario runs the demo's scenario end to end, with the archives in a
// directory and in a bucket of the S3 server scripts/test.sh starts.
func TestScenario(t *testing.T) {
	for _, tc := range []struct {
		name     string
		archives func(t *testing.T) archives
	}{
		{"Dir", func(*testing.T) archives { return archives{} }},
		{"S3", s3Archives},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
			defer cancel()
			var out bytes.Buffer
			if err := run(ctx, t.TempDir(), tc.archives(t), ops{}, &out); err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			for _, want := range []string{"survived the archive and the restore", "alice    removed from the store", "deleted [alice/"} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("output lacks %q:\n%s", want, out.String())
				}
			}
		})
	}
}

// s3Archives keeps the archives in a fresh bucket of the S3 server
// scripts/test.sh starts.
func s3Archives(t *testing.T) archives {
	return archives{objects: objstoretest.S3(t), creds: objstoretest.S3Credentials()}
}
