package expectations

import "testing"

// BenchmarkCountsCycle measures one expect, observe, check cycle on a key, the cost a controller pays per dependent.
func BenchmarkCountsCycle(b *testing.B) {
	c, err := NewCounts[int](CountsConfig{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		key := i % 1024
		c.ExpectCreations(key, 1)
		c.CreationObserved(key)
		c.SatisfiedExpectations(key)
	}
}

// BenchmarkNamesCycle is BenchmarkCountsCycle with one named dependent.
func BenchmarkNamesCycle(b *testing.B) {
	n, err := NewNames[int, int](NamesConfig{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		key := i % 1024
		n.ExpectCreations(key, i)
		n.CreationObserved(key, i)
		n.SatisfiedExpectations(key)
	}
}

// BenchmarkGateCycle measures one write, one observed watch event and one check.
func BenchmarkGateCycle(b *testing.B) {
	var g Gate[int]
	b.ReportAllocs()
	for i := 1; b.Loop(); i++ {
		key := i % 1024
		g.Wrote(key, int64(i))
		g.Observed(int64(i))
		g.Ready(key)
	}
}
