package main

import (
	"fmt"
	"math"
	"slices"
)

// A check is one target of a row, evaluated against the row's medians.
type check struct {
	text func(unit string) string
	eval func(m measured) (met bool, note string, err error)
}

// measured is what a check sees: the row, its table, the medians of its
// columns (NaN where a column has no benchmark) and the whole results file.
type measured struct {
	table  table
	row    row
	values []float64
	res    *results
}

// better requires tend to be at least times better than the column named
// other: faster, smaller or earlier, by the row's unit. times 1 means no
// worse.
func better(other string, times float64) check {
	return check{
		text: func(unit string) string {
			u := unitOf(unit)
			if times == 1 {
				return fmt.Sprintf("no %s than %s", u.worse, other)
			}
			return fmt.Sprintf("≥ %g× %s than %s", times, u.better, other)
		},
		eval: func(m measured) (bool, string, error) {
			i := slices.Index(m.table.columns, other)
			if i < 0 || math.IsNaN(m.values[i]) {
				return false, "", fmt.Errorf("%s: no %s figure to compare with", m.row.label, other)
			}
			return m.values[i]/m.values[0] >= times, "", nil
		},
	}
}

// atMost requires tend's figure to be no more than limit.
func atMost(limit float64) check {
	return check{
		text: func(unit string) string { return "≤ " + unitOf(unit).format(limit) },
		eval: func(m measured) (bool, string, error) { return m.values[0] <= limit, "", nil },
	}
}

// below requires tend's figure to be less than limit.
func below(limit float64) check {
	return check{
		text: func(unit string) string { return "< " + unitOf(unit).format(limit) },
		eval: func(m measured) (bool, string, error) { return m.values[0] < limit, "", nil },
	}
}

// maxAllocs requires tend's allocs/op to be at most n.
func maxAllocs(n float64) check {
	return check{
		text: func(string) string {
			if n == 0 {
				return "0 allocs"
			}
			return fmt.Sprintf("≤ %g allocs", n)
		},
		eval: func(m measured) (bool, string, error) {
			a, err := m.res.median(m.row.bench[0], "allocs/op")
			return a <= n, "", err
		},
	}
}

// within requires tend's figure to be at most times the figure of tend's
// benchmark base (described as what), and notes the ratio.
func within(base, what string, times float64) check {
	return check{
		text: func(string) string { return fmt.Sprintf("≤ %g× %s", times, what) },
		eval: func(m measured) (bool, string, error) {
			b, err := m.res.median(base, m.row.unit)
			if err != nil {
				return false, "", err
			}
			r := m.values[0] / b
			return r <= times, ratio(r) + "×", nil
		},
	}
}
