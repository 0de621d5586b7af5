package workqueue

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// gather returns the queue's metrics by name, checking the name label.
func gather(t *testing.T, reg *prometheus.Registry, name string) map[string]*dto.Metric {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	got := make(map[string]*dto.Metric)
	for _, f := range families {
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) != 1 || m.GetLabel()[0].GetName() != "name" || m.GetLabel()[0].GetValue() != name {
				t.Fatalf("%s has labels %v, want name=%q", f.GetName(), m.GetLabel(), name)
			}
			got[f.GetName()] = m
		}
	}
	return got
}

func TestMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		limiter, _ := NewExponentialLimiter[string](ExponentialConfig{Base: time.Second})
		q := newQueue(t, Config[string]{Name: "q", MetricsRegisterer: reg, RateLimiter: limiter})
		q.Add("a")
		q.Add("b")
		q.Add("a") // collapses: not counted
		q.AddRateLimited("c")
		time.Sleep(2 * time.Second) // c becomes ready
		synctest.Wait()
		k := get(t, q) // a, after 2s in the queue
		time.Sleep(3 * time.Second)

		m := gather(t, reg, "q")
		want := map[string]float64{
			"workqueue_depth":                             2,
			"workqueue_adds_total":                        3,
			"workqueue_retries_total":                     1,
			"workqueue_unfinished_work_seconds":           3,
			"workqueue_longest_running_processor_seconds": 3,
		}
		for name, v := range want {
			mm, ok := m[name]
			if !ok {
				t.Fatalf("metric %s missing", name)
			}
			var got float64
			switch {
			case mm.Gauge != nil:
				got = mm.Gauge.GetValue()
			case mm.Counter != nil:
				got = mm.Counter.GetValue()
			}
			if got != v {
				t.Errorf("%s = %v, want %v", name, got, v)
			}
		}
		if h := m["workqueue_queue_duration_seconds"].GetHistogram(); h.GetSampleCount() != 1 || h.GetSampleSum() != 2 {
			t.Errorf("queue duration: count %d sum %v, want 1 and 2", h.GetSampleCount(), h.GetSampleSum())
		}

		q.Done(k)
		m = gather(t, reg, "q")
		h := m["workqueue_work_duration_seconds"].GetHistogram()
		if h.GetSampleCount() != 1 || h.GetSampleSum() != 3 {
			t.Errorf("work duration: count %d sum %v, want 1 and 3", h.GetSampleCount(), h.GetSampleSum())
		}
		for _, b := range h.GetBucket() {
			if want := uint64(0); b.GetUpperBound() >= 10 {
				want = 1
				if b.GetCumulativeCount() != want {
					t.Errorf("bucket %v holds %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want)
				}
			} else if b.GetCumulativeCount() != want {
				t.Errorf("bucket %v holds %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want)
			}
		}
		if v := m["workqueue_unfinished_work_seconds"].GetGauge().GetValue(); v != 0 {
			t.Errorf("unfinished work after Done = %v, want 0", v)
		}
	})
}

func TestMetricsRegistration(t *testing.T) {
	reg := prometheus.NewRegistry()
	q := newQueue(t, Config[string]{Name: "q", MetricsRegisterer: reg})
	if _, err := New(Config[string]{Name: "q", MetricsRegisterer: reg}); err == nil {
		t.Fatal("second queue of the same name registered")
	}
	q.ShutDown()
	if _, err := New(Config[string]{Name: "q", MetricsRegisterer: reg}); err != nil {
		t.Fatalf("queue of the same name after ShutDown: %v", err)
	}
}

func TestHistogramBuckets(t *testing.T) {
	var h histogram
	for _, d := range []int64{-5, 0, 10, 11, 1e9, 1e10, 1e10 + 1} {
		h.observe(d)
	}
	want := [len(durationBounds) + 1]uint64{0: 3, 1: 1, 8: 1, 9: 1, 10: 1}
	if h.counts != want {
		t.Fatalf("counts %v, want %v", h.counts, want)
	}
}
