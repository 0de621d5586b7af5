package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// unit says how to print the figures of one unit and which way is better.
type unit struct {
	format        func(float64) string
	better, worse string
}

func unitOf(name string) unit {
	switch {
	case name == "ns/op":
		return unit{duration, "faster", "slower"}
	case name == "B/key" || name == "B/op":
		return unit{func(v float64) string { return fmt.Sprintf("%.1f B", v) }, "less", "more"}
	case strings.HasSuffix(name, "-ms"):
		return unit{func(v float64) string { return fmt.Sprintf("%.2f ms", v) }, "earlier", "later"}
	case strings.HasSuffix(name, "-MiB"):
		return unit{func(v float64) string { return fmt.Sprintf("%.0f MiB", v) }, "less", "more"}
	case name == "s/converge":
		return unit{func(v float64) string { return fmt.Sprintf("%.2f s", v) }, "faster", "slower"}
	case name == "ns/document":
		return unit{duration, "faster", "slower"}
	case strings.HasPrefix(name, "ms/"):
		return unit{func(v float64) string { return fmt.Sprintf("%.2f ms", v) }, "faster", "slower"}
	case strings.HasPrefix(name, "x-"):
		return unit{func(v float64) string { return ratio(v) + "×" }, "more", "less"}
	case name == "ns/delivery":
		return unit{duration, "faster", "slower"}
	case strings.HasSuffix(name, "/doc"):
		return unit{func(v float64) string { return fmt.Sprintf("%.2f", v) }, "fewer", "more"}
	case name == "writes-vs-before":
		return unit{func(v float64) string { return fmt.Sprintf("%.2f", v) }, "lower", "higher"}
	case name == "writes/converge":
		return unit{func(v float64) string { return fmt.Sprintf("%.0f", v) }, "fewer", "more"}
	case name == "overhead":
		return unit{func(v float64) string { return fmt.Sprintf("%.2f", v) }, "lower", "higher"}
	case name == "lists":
		return unit{func(v float64) string { return fmt.Sprintf("%.0f", v) }, "fewer", "more"}
	case strings.HasSuffix(name, "cpu-s/converge"):
		return unit{func(v float64) string { return fmt.Sprintf("%.1f s", v) }, "less", "more"}
	}
	return unit{func(v float64) string { return fmt.Sprintf("%.3g %s", v, name) }, "better", "worse"}
}

// duration prints nanoseconds in the largest unit that keeps them ≥ 1.
func duration(ns float64) string {
	switch {
	case ns < 1e3:
		return fmt.Sprintf("%.1f ns", ns)
	case ns < 1e6:
		return fmt.Sprintf("%.2f µs", ns/1e3)
	case ns < 1e9:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	}
	return fmt.Sprintf("%.2f s", ns/1e9)
}

func ratio(r float64) string {
	if r >= 10 {
		return fmt.Sprintf("%.1f", r)
	}
	return fmt.Sprintf("%.2f", r)
}

func allocs(n float64) string {
	if n == 1 {
		return "1 alloc"
	}
	if n != math.Trunc(n) || n < 1000 {
		return fmt.Sprintf("%g allocs", n)
	}
	s := strconv.FormatFloat(n, 'f', 0, 64)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s + " allocs"
}

// render returns the generated section of t from its results.
func render(t table, res *results) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "Command: `%s`\n\n", res.command)
	machine := []string{res.config["goos"] + "/" + res.config["goarch"]}
	if cpu := res.config["cpu"]; cpu != "" {
		machine = append(machine, cpu)
	}
	if res.machine != "" {
		machine = append(machine, res.machine)
	}
	fmt.Fprintf(&b, "Machine: %s. Each figure is the median of %d runs in [`bench/results/%s.txt`](../bench/results/%s.txt).\n\n",
		strings.Join(machine, ", "), res.runs(), t.name, t.name)

	head := append([]string{"benchmark"}, t.columns...)
	for _, c := range t.columns[1:] {
		head = append(head, t.columns[0]+" vs "+c)
	}
	head = append(head, "target", "met")
	writeRow(&b, head)
	sep := make([]string, len(head))
	for i := range sep {
		sep[i] = "---"
	}
	writeRow(&b, sep)

	for _, r := range t.rows {
		if len(r.bench) != len(t.columns) {
			return "", fmt.Errorf("%s: row %q names %d benchmarks for %d columns", t.name, r.label, len(r.bench), len(t.columns))
		}
		u := unitOf(r.unit)
		cells := []string{r.label}
		values := make([]float64, len(r.bench))
		for i, name := range r.bench {
			values[i] = math.NaN()
			if name == "" {
				cells = append(cells, "")
				continue
			}
			v, err := res.median(name, r.unit)
			if err != nil {
				return "", fmt.Errorf("%s: %w", t.name, err)
			}
			values[i] = v
			cell := u.format(v)
			if r.allocs {
				a, err := res.median(name, "allocs/op")
				if err != nil {
					return "", fmt.Errorf("%s: %w", t.name, err)
				}
				cell += ", " + allocs(a)
			}
			cells = append(cells, cell)
		}
		for i := range t.columns[1:] {
			cells = append(cells, compare(values[0], values[i+1], u))
		}
		target, met, err := evaluate(measured{table: t, row: r, values: values, res: res})
		if err != nil {
			return "", fmt.Errorf("%s: %w", t.name, err)
		}
		writeRow(&b, append(cells, target, met))
	}
	return b.String(), nil
}

// compare says how many times better tend's figure is than other's.
func compare(tend, other float64, u unit) string {
	if math.IsNaN(tend) || math.IsNaN(other) || tend == 0 || other == 0 {
		return ""
	}
	if r := other / tend; r >= 1 {
		return ratio(r) + "× " + u.better
	}
	return ratio(tend/other) + "× **" + u.worse + "**"
}

// evaluate returns the target and met cells of a row.
func evaluate(m measured) (target, met string, err error) {
	if len(m.row.target) == 0 {
		return "", "", nil
	}
	var texts, notes []string
	all := true
	for _, c := range m.row.target {
		texts = append(texts, c.text(m.row.unit))
		ok, note, err := c.eval(m)
		if err != nil {
			return "", "", err
		}
		all = all && ok
		if note != "" {
			notes = append(notes, note)
		}
	}
	met = "yes"
	if !all {
		met = "**no**"
	}
	if len(notes) > 0 {
		met += " (" + strings.Join(notes, ", ") + ")"
	}
	return strings.Join(texts, ", "), met, nil
}

func writeRow(b *strings.Builder, cells []string) {
	b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
}

// marker matches a generated section, its markers each at the start of a
// line: the name, the text between the markers, and the name of the end.
var marker = regexp.MustCompile(`(?ms)^<!-- BEGIN generated: ([\w-]+) -->\n(.*?)^<!-- END generated: ([\w-]+) -->`)

// generate returns doc with the generated section of every table in ts
// rewritten from the raw results in dir. Every table must have exactly one
// section, and every section a table.
func generate(ts []table, dir, doc string) (string, error) {
	sections := map[string]string{}
	for _, t := range ts {
		f, err := os.Open(filepath.Join(dir, t.name+".txt"))
		if err != nil {
			return "", err
		}
		res, err := parse(f)
		f.Close()
		if err != nil {
			return "", fmt.Errorf("%s.txt: %w", t.name, err)
		}
		if sections[t.name], err = render(t, res); err != nil {
			return "", err
		}
	}
	seen := map[string]int{}
	var bad error
	out := marker.ReplaceAllStringFunc(doc, func(s string) string {
		m := marker.FindStringSubmatch(s)
		name := m[1]
		seen[name]++
		body, ok := sections[name]
		switch {
		case m[3] != name:
			bad = fmt.Errorf("section %s ends with the marker of %s", name, m[3])
		case !ok:
			bad = fmt.Errorf("section %s has no table", name)
		}
		return "<!-- BEGIN generated: " + name + " -->\n" + body + "<!-- END generated: " + name + " -->"
	})
	if bad != nil {
		return "", bad
	}
	for _, t := range ts {
		if seen[t.name] != 1 {
			return "", fmt.Errorf("the document has %d sections %s, want 1", seen[t.name], t.name)
		}
	}
	return out, nil
}
