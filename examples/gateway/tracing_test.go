package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"
)

// exported is a span as the stdout exporter writes it, in part.
type exported struct {
	Name        string
	SpanContext struct{ TraceID, SpanID string }
	Parent      struct{ TraceID, SpanID string }
	Attributes  []struct {
		Key   string
		Value struct{ Value any }
	}
	Status struct{ Code string }
}

func (s exported) attr(key string) any {
	for _, a := range s.Attributes {
		if a.Key == key {
			return a.Value.Value
		}
	}
	return nil
}

// TestScenarioTraced plays the scenario with the tracer provider of
// -trace-file and reads the spans back from the file: a span per step run,
// each the child of a reconcile span of the same trace, failed ones with
// the status Error, and reconcile spans of both controllers.
func TestScenarioTraced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "spans.json")
		tp, shutdown, err := newTracerProvider(context.Background(), file, false)
		if err != nil {
			t.Fatal(err)
		}
		opts := options{Gateways: 5, FailureRate: 0.2, Delay: 100 * time.Millisecond, Seed: 3,
			Timeout: 10 * time.Minute, TracerProvider: tp}
		rep, err := run(context.Background(), opts, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if err := shutdown(); err != nil {
			t.Fatal(err)
		}
		if !rep.Converged || rep.Retried == 0 {
			t.Fatalf("converged %v, %d steps retried", rep.Converged, rep.Retried)
		}

		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var spans []exported
		reconciles := map[string]exported{} // by span id
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var s exported
			if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
				t.Fatalf("%v: %s", err, sc.Bytes())
			}
			spans = append(spans, s)
			if s.Name == "tend.reconcile" {
				reconciles[s.SpanContext.SpanID] = s
			}
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}

		var steps, failed int64
		controllers := map[any]bool{}
		for _, r := range reconciles {
			controllers[r.attr("tend.controller")] = true
		}
		for _, s := range spans {
			if s.Name != "tend.step" {
				continue
			}
			steps++
			r, ok := reconciles[s.Parent.SpanID]
			if !ok || r.SpanContext.TraceID != s.SpanContext.TraceID {
				t.Errorf("step span %s of %v: parent %s is no reconcile span of its trace", s.attr("tend.step.name"),
					s.attr("tend.key"), s.Parent.SpanID)
			}
			if out := s.attr("tend.step.outcome"); out == "failed" || out == "failed-terminal" {
				failed++
				if s.Status.Code != "Error" {
					t.Errorf("failed step span %s with status %s", s.attr("tend.step.name"), s.Status.Code)
				}
			}
		}
		if steps != rep.Steps || failed != rep.Retried {
			t.Errorf("%d step spans, %d failed; the platform ran %d steps, %d failed", steps, failed, rep.Steps, rep.Retried)
		}
		if !controllers["gateways"] || !controllers["runtime-domains"] {
			t.Errorf("reconcile spans of controllers %v, want gateways and runtime-domains", controllers)
		}
	})
}
