package main

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// results is one raw results file: its header and every value measured,
// by benchmark name (as printed, with the GOMAXPROCS suffix) and unit.
type results struct {
	command string // from "# command: ..."
	machine string // from "# machine: ..."
	config  map[string]string
	values  map[string]map[string][]float64 // name → unit → one value per run
}

// parse reads the output of go test -bench, headed by the comment lines
// record.sh writes. Lines that are neither comments, configuration nor
// benchmark results (PASS, ok ...) are skipped, as the benchmark format says.
func parse(r io.Reader) (*results, error) {
	res := &results{config: map[string]string{}, values: map[string]map[string][]float64{}}
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		switch {
		case strings.HasPrefix(text, "# command: "):
			res.command = strings.TrimPrefix(text, "# command: ")
		case strings.HasPrefix(text, "# machine: "):
			res.machine = strings.TrimPrefix(text, "# machine: ")
		case strings.HasPrefix(text, "Benchmark"):
			f := strings.Fields(text)
			if len(f) < 4 || len(f)%2 != 0 {
				return nil, fmt.Errorf("line %d: malformed result %q", line, text)
			}
			name := strings.TrimPrefix(f[0], "Benchmark")
			if res.values[name] == nil {
				res.values[name] = map[string][]float64{}
			}
			for i := 2; i < len(f); i += 2 {
				v, err := strconv.ParseFloat(f[i], 64)
				if err != nil {
					return nil, fmt.Errorf("line %d: %w", line, err)
				}
				res.values[name][f[i+1]] = append(res.values[name][f[i+1]], v)
			}
		default:
			if k, v, ok := strings.Cut(text, ": "); ok && k != "" && !strings.ContainsAny(k, " \t") {
				res.config[k] = strings.TrimSpace(v)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if res.command == "" {
		return nil, fmt.Errorf(`no "# command: " line`)
	}
	return res, nil
}

// median returns the median of the runs of the benchmark named name (without
// the "Benchmark" prefix and GOMAXPROCS suffix) in unit.
func (r *results) median(name, unit string) (float64, error) {
	var runs []float64
	found := false
	for full, units := range r.values {
		if !sameBenchmark(full, name) {
			continue
		}
		if found {
			return 0, fmt.Errorf("benchmark %s is ambiguous", name)
		}
		found = true
		runs = units[unit]
	}
	if !found {
		return 0, fmt.Errorf("no benchmark %s", name)
	}
	if len(runs) == 0 {
		return 0, fmt.Errorf("benchmark %s reports no %s", name, unit)
	}
	return median(runs), nil
}

// runs returns how many times each benchmark ran: the fewest values any
// benchmark has in any of its units.
func (r *results) runs() int {
	n := 0
	for _, units := range r.values {
		most := 0
		for _, v := range units {
			most = max(most, len(v))
		}
		if n == 0 || most < n {
			n = most
		}
	}
	return n
}

// sameBenchmark reports whether the printed name full is the benchmark name:
// name itself, or name followed by the "-N" go test appends when GOMAXPROCS
// is not 1.
func sameBenchmark(full, name string) bool {
	if full == name {
		return true
	}
	suffix, ok := strings.CutPrefix(full, name+"-")
	if !ok || suffix == "" {
		return false
	}
	for _, c := range suffix {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func median(v []float64) float64 {
	s := slices.Sorted(slices.Values(v))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
