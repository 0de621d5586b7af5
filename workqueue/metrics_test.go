package workqueue

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// provider is a MetricsProvider that keeps what it is given.
type provider struct {
	stats     map[string]func() Stats
	untracked []string
}

func (p *provider) Track(name string, stats func() Stats) (func(), error) {
	if p.stats == nil {
		p.stats = map[string]func() Stats{}
	}
	if p.stats[name] != nil {
		return nil, errors.New("tracked twice")
	}
	p.stats[name] = stats
	return func() { delete(p.stats, name); p.untracked = append(p.untracked, name) }, nil
}

func TestStats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var p provider
		limiter, _ := NewExponentialLimiter[string](ExponentialConfig{Base: time.Second})
		q := newQueue(t, Config[string]{Name: "q", Metrics: &p, RateLimiter: limiter})
		q.Add("a")
		q.Add("b")
		q.Add("a") // collapses: not counted
		q.AddRateLimited("c")
		time.Sleep(2 * time.Second) // c becomes ready
		synctest.Wait()
		k := get(t, q) // a, after 2s in the queue
		time.Sleep(3 * time.Second)

		s := p.stats["q"]()
		if s.Depth != 2 || s.Adds != 3 || s.Retries != 1 || s.Unfinished != 3*time.Second || s.LongestRunning != 3*time.Second {
			t.Errorf("stats %+v, want depth 2, 3 adds, 1 retry, 3s unfinished and longest", s)
		}
		if s.QueueDuration.Count() != 1 || s.QueueDuration.Sum != 2*time.Second {
			t.Errorf("queue duration: count %d sum %v, want 1 and 2s", s.QueueDuration.Count(), s.QueueDuration.Sum)
		}

		q.Done(k)
		s = p.stats["q"]()
		if h := s.WorkDuration; h.Count() != 1 || h.Sum != 3*time.Second || h.Counts[9] != 1 {
			t.Errorf("work duration %+v, want one 3s duration in the bucket up to 10s", h)
		}
		if s.Unfinished != 0 {
			t.Errorf("unfinished work after Done = %v, want 0", s.Unfinished)
		}
	})
}

func TestMetricsTracking(t *testing.T) {
	var p provider
	q := newQueue(t, Config[string]{Name: "q", Metrics: &p})
	if _, err := New(Config[string]{Name: "q", Metrics: &p}); err == nil {
		t.Fatal("a second queue of the same name was tracked")
	}
	q.ShutDown()
	q.ShutDown()
	if len(p.untracked) != 1 {
		t.Fatalf("untracked %v after two ShutDowns, want once", p.untracked)
	}
	if _, err := New(Config[string]{Name: "q", Metrics: &p}); err != nil {
		t.Fatalf("queue of the same name after ShutDown: %v", err)
	}
}

func TestHistogramBuckets(t *testing.T) {
	var h Histogram
	for _, d := range []int64{-5, 0, 10, 11, 1e9, 1e10, 1e10 + 1} {
		h.observe(d)
	}
	want := [len(DurationBounds) + 1]uint64{0: 3, 1: 1, 8: 1, 9: 1, 10: 1}
	if h.Counts != want || h.Count() != 7 {
		t.Fatalf("counts %v, want %v", h.Counts, want)
	}
}
