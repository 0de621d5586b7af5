package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDocsUpToDate fails when a generated section of docs/benchmarks.md
// differs from what the committed raw results produce.
func TestDocsUpToDate(t *testing.T) {
	const doc = "../../../docs/benchmarks.md"
	old, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	want, err := generate(tables, "../../results", string(old))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(old); got != want {
		t.Errorf("docs/benchmarks.md is stale or hand-edited: run `cd bench && go generate ./cmd/benchdoc`\n%s", firstDiff(got, want))
	}
}

// firstDiff shows the first line where got and want differ.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d:\n  have %s\n  want %s", i+1, gl, wl)
		}
	}
	return ""
}

const sample = `# command: cd bench && go test -run '^$' -bench 'Op' -count 3 .
# machine: 2 vCPUs shared with other builds, load average 9.50 at start and 11.00 at end, go1.26.8
goos: linux
goarch: amd64
pkg: github.com/tendhq/tend/bench
cpu: Some CPU   
BenchmarkOp/tend-2         	 100	       100.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkOp/tend-2         	 100	       300.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkOp/tend-2         	 100	       110.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkOp/other-2        	 100	       200.0 ns/op	      16 B/op	       1 allocs/op
BenchmarkOp/other-2        	 100	       220.0 ns/op	      16 B/op	       1 allocs/op
BenchmarkOp/other-2        	 100	       240.0 ns/op	      16 B/op	       1 allocs/op
BenchmarkOp/tend/levels-1-2	 100	       120.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkOp/tend/levels-1-2	 100	       121.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkOp/tend/levels-1-2	 100	       122.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkMem/tend-2	 1	         0 ns/op	        70.00 B/key
BenchmarkMem/tend-2	 1	         0 ns/op	        80.00 B/key
PASS
ok  	github.com/tendhq/tend/bench	12.3s
`

func TestParse(t *testing.T) {
	res, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	if want := "cd bench && go test -run '^$' -bench 'Op' -count 3 ."; res.command != want {
		t.Errorf("command %q, want %q", res.command, want)
	}
	if res.config["cpu"] != "Some CPU" || res.config["goos"] != "linux" {
		t.Errorf("config %v", res.config)
	}
	if res.runs() != 2 {
		t.Errorf("runs %d, want 2 (the fewest of any benchmark)", res.runs())
	}
	for _, c := range []struct {
		name, unit string
		want       float64
		err        bool
	}{
		{"Op/tend", "ns/op", 110, false}, // median of 100, 300, 110
		{"Op/other", "allocs/op", 1, false},
		{"Op/tend/levels-1", "ns/op", 121, false}, // the GOMAXPROCS suffix is the last -N only
		{"Mem/tend", "B/key", 75, false},          // even count: mean of the middle two
		{"Op/tend/levels", "ns/op", 0, true},
		{"Op", "ns/op", 0, true},
		{"Op/tend", "B/key", 0, true},
	} {
		got, err := res.median(c.name, c.unit)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("median(%s, %s) = %v, %v; want %v, error %v", c.name, c.unit, got, err, c.want, c.err)
		}
	}
}

func TestAllocs(t *testing.T) {
	for n, want := range map[float64]string{
		0: "0 allocs", 1: "1 alloc", 7: "7 allocs", 2.5: "2.5 allocs", 999: "999 allocs",
		4008: "4,008 allocs", 400002: "400,002 allocs", 1234567: "1,234,567 allocs",
	} {
		if got := allocs(n); got != want {
			t.Errorf("allocs(%v) = %q, want %q", n, got, want)
		}
	}
}

// TestUnits covers the units of the cascade table: a time per document
// prints as a duration, per-delete milliseconds as milliseconds, an x- ratio
// as a factor, and anything else with its unit.
func TestUnits(t *testing.T) {
	for _, c := range []struct {
		unit         string
		v            float64
		want, better string
	}{
		{"ns/document", 22870, "22.87 µs", "faster"},
		{"ms/delete", 8.192, "8.19 ms", "faster"},
		{"x-faster-than-ticks", 732.3, "732.3×", "more"},
		{"writes/delete", 35, "35 writes/delete", "better"},
	} {
		u := unitOf(c.unit)
		if got := u.format(c.v); got != c.want || u.better != c.better {
			t.Errorf("unit %s: %v prints %q, better %q; want %q, %q", c.unit, c.v, got, u.better, c.want, c.better)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for name, text := range map[string]string{
		"no command line": "BenchmarkOp-2 1 10 ns/op\n",
		"odd fields":      "# command: x\nBenchmarkOp-2 1 10 ns/op 5\n",
		"bad number":      "# command: x\nBenchmarkOp-2 1 ten ns/op\n",
	} {
		if _, err := parse(strings.NewReader(text)); err == nil {
			t.Errorf("%s: parsed without error", name)
		}
	}
}

func TestSameBenchmark(t *testing.T) {
	for _, c := range []struct {
		full, name string
		want       bool
	}{
		{"RoundTrip/tend-2", "RoundTrip/tend", true},
		{"RoundTrip/tend", "RoundTrip/tend", true}, // GOMAXPROCS 1 adds no suffix
		{"RoundTrip/tend/metrics-2", "RoundTrip/tend", false},
		{"Dispatch/tend/workers-1-2", "Dispatch/tend/workers-1", true},
		{"Dispatch/tend/workers-12", "Dispatch/tend/workers-1", false},
		{"RoundTrip/tend-", "RoundTrip/tend", false},
		{"RoundTrip/tend-x", "RoundTrip/tend", false},
	} {
		if got := sameBenchmark(c.full, c.name); got != c.want {
			t.Errorf("sameBenchmark(%q, %q) = %v", c.full, c.name, got)
		}
	}
}

// TestTargets proves that met is computed from the figures: each target
// holds or fails as the sample's medians (tend 110 ns, 0 allocs; other
// 220 ns, 1 alloc; tend with priorities 121 ns; tend 75 B/key) say.
func TestTargets(t *testing.T) {
	res, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		row        row
		target     string
		met, ratio string
	}{
		{row{bench: []string{"Op/tend", "Op/other"}, target: []check{better("other", 2)}},
			"≥ 2× faster than other", "yes", "2.00× faster"},
		{row{bench: []string{"Op/tend", "Op/other"}, target: []check{better("other", 2.1)}},
			"≥ 2.1× faster than other", "**no**", "2.00× faster"},
		{row{bench: []string{"Op/other", "Op/tend"}, target: []check{better("other", 1)}},
			"no slower than other", "**no**", "2.00× **slower**"},
		{row{bench: []string{"Op/tend", "Op/other"}, target: []check{maxAllocs(0), better("other", 1.5)}},
			"0 allocs, ≥ 1.5× faster than other", "yes", "2.00× faster"},
		{row{bench: []string{"Op/other", "Op/tend"}, target: []check{maxAllocs(0)}},
			"0 allocs", "**no**", "2.00× **slower**"},
		{row{bench: []string{"Op/tend/levels-1", ""}, target: []check{within("Op/tend", "the plain path", 1.2)}},
			"≤ 1.2× the plain path", "yes (1.10×)", ""},
		{row{bench: []string{"Op/tend/levels-1", ""}, target: []check{within("Op/tend", "the plain path", 1.05)}},
			"≤ 1.05× the plain path", "**no** (1.10×)", ""},
		{row{bench: []string{"Op/tend", ""}, target: []check{below(110)}},
			"< 110.0 ns", "**no**", ""},
		{row{bench: []string{"Op/tend", ""}, target: []check{atMost(110)}},
			"≤ 110.0 ns", "yes", ""},
		{row{unit: "B/key", bench: []string{"Mem/tend", ""}, target: []check{atMost(74)}},
			"≤ 74.0 B", "**no**", ""},
	} {
		r := c.row
		r.label = "op"
		if r.unit == "" {
			r.unit = "ns/op"
		}
		tb := table{name: "t", columns: []string{"tend", "other"}, rows: []row{r}}
		out, err := render(tb, res)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		cells := strings.Split(strings.Trim(lines[len(lines)-1], "| "), " | ")
		if len(cells) != 6 {
			t.Fatalf("row %q has %d cells, want 6", lines[len(lines)-1], len(cells))
		}
		if cells[3] != c.ratio || cells[4] != c.target || cells[5] != c.met {
			t.Errorf("ratio %q, target %q, met %q; want %q, %q, %q", cells[3], cells[4], cells[5], c.ratio, c.target, c.met)
		}
	}
}

func TestRenderHeader(t *testing.T) {
	res, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	tb := table{name: "t", columns: []string{"tend", "other"}, rows: []row{
		{label: "op", unit: "ns/op", allocs: true, bench: []string{"Op/tend", "Op/other"}},
	}}
	got, err := render(tb, res)
	if err != nil {
		t.Fatal(err)
	}
	want := "Command: `cd bench && go test -run '^$' -bench 'Op' -count 3 .`\n\n" +
		"Machine: linux/amd64, Some CPU, 2 vCPUs shared with other builds, load average 9.50 at start and 11.00 at end, go1.26.8." +
		" Each figure is the median of 2 runs in [`bench/results/t.txt`](../bench/results/t.txt).\n\n" +
		"| benchmark | tend | other | tend vs other | target | met |\n" +
		"| --- | --- | --- | --- | --- | --- |\n" +
		"| op | 110.0 ns, 0 allocs | 220.0 ns, 1 alloc | 2.00× faster |  |  |\n"
	if got != want {
		t.Errorf("render:\n%s\nwant:\n%s", got, want)
	}
	tb.rows[0].bench = []string{"Op/tend", "Op/missing"}
	if _, err := render(tb, res); err == nil {
		t.Error("a row naming a benchmark missing from the results rendered without error")
	}
}

func TestGenerateSections(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "t.txt"), []byte(sample), 0o644); err != nil {
		t.Fatal(err)
	}
	ts := []table{{name: "t", columns: []string{"tend"}, rows: []row{{label: "op", unit: "ns/op", bench: []string{"Op/tend"}}}}}
	doc := "# Title\n\nProse before, naming `<!-- BEGIN generated: t -->`\nin a line.\n\n<!-- BEGIN generated: t -->\nhand-edited\n<!-- END generated: t -->\n\nProse after.\n"
	got, err := generate(ts, dir, doc)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got, "# Title\n\nProse before, naming `<!-- BEGIN generated: t -->`\nin a line.\n\n<!-- BEGIN generated: t -->\nCommand: ") ||
		!strings.HasSuffix(got, "| op | 110.0 ns |  |  |\n<!-- END generated: t -->\n\nProse after.\n") {
		t.Errorf("generated:\n%s", got)
	}
	again, err := generate(ts, dir, got)
	if err != nil || again != got {
		t.Errorf("generating twice changed the document (%v)", err)
	}
	for name, bad := range map[string]string{
		"missing section":    "no markers\n",
		"duplicated section": strings.Repeat("<!-- BEGIN generated: t -->\n<!-- END generated: t -->\n", 2),
		"unknown section":    "<!-- BEGIN generated: t -->\n<!-- END generated: t -->\n<!-- BEGIN generated: u -->\n<!-- END generated: u -->\n",
		"mismatched end":     "<!-- BEGIN generated: t -->\n<!-- END generated: u -->\n",
	} {
		if _, err := generate(ts, dir, bad); err == nil {
			t.Errorf("%s: generated without error", name)
		}
	}
	if _, err := generate([]table{{name: "absent"}}, dir, doc); err == nil {
		t.Error("a table without a results file generated without error")
	}
}
