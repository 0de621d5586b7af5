package waits

import (
	"testing"
	"time"
)

// TestScheduleDoubles: the first wait at a point is First, each next one as
// long as the wait so far, up to the limit; another point, or a key not seen
// for long, waits short again.
func TestScheduleDoubles(t *testing.T) {
	var s Schedule
	limit := time.Second
	now := time.Unix(0, 0)
	var got []time.Duration
	for range 6 {
		d := s.Next("k", Point("op", "step", 0), now, limit)
		got = append(got, d)
		now = now.Add(d)
	}
	want := []time.Duration{First, First, 2 * First, 4 * First, 8 * First, limit}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("waits %v, want %v", got, want)
		}
	}
	if d := s.Next("k", Point("op", "step", 1), now, limit); d != First {
		t.Errorf("a new attempt waits %v, want %v", d, First)
	}
	if d := s.Next("k", Point("op", "step", 1), now.Add(3*limit), limit); d != First {
		t.Errorf("a key not seen for 3 limits waits %v, want %v", d, First)
	}
}
