package queueprom_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/tendhq/tend/workqueue"
	"github.com/tendhq/tend/workqueue/queueprom"
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

// The queue's numbers reach Prometheus under client-go's names, read at
// each scrape.
func TestMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		limiter, _ := workqueue.NewExponentialLimiter[string](workqueue.ExponentialConfig{Base: time.Second})
		metrics := queueprom.New(queueprom.Config{Registerer: reg})
		q, err := workqueue.New(workqueue.Config[string]{Name: "q", Metrics: metrics, RateLimiter: limiter})
		if err != nil {
			t.Fatal(err)
		}
		defer q.ShutDown()
		q.Add("a")
		q.Add("b")
		q.AddRateLimited("c")
		time.Sleep(2 * time.Second)
		synctest.Wait()
		k, _ := q.Get() // a, after 2s in the queue
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
			got := mm.GetGauge().GetValue() + mm.GetCounter().GetValue()
			if got != v {
				t.Errorf("%s = %v, want %v", name, got, v)
			}
		}
		if h := m["workqueue_queue_duration_seconds"].GetHistogram(); h.GetSampleCount() != 1 || h.GetSampleSum() != 2 {
			t.Errorf("queue duration: count %d sum %v, want 1 and 2", h.GetSampleCount(), h.GetSampleSum())
		}
		q.Done(k)
		h := gather(t, reg, "q")["workqueue_work_duration_seconds"].GetHistogram()
		if h.GetSampleCount() != 1 || h.GetSampleSum() != 3 {
			t.Errorf("work duration: count %d sum %v, want 1 and 3", h.GetSampleCount(), h.GetSampleSum())
		}
		for _, b := range h.GetBucket() {
			want := uint64(0)
			if b.GetUpperBound() >= 10 {
				want = 1
			}
			if b.GetCumulativeCount() != want {
				t.Errorf("bucket %v holds %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want)
			}
		}
	})
}

// A second live queue of one name is refused; after ShutDown the name is
// free again.
func TestRegistration(t *testing.T) {
	p := queueprom.New(queueprom.Config{Registerer: prometheus.NewRegistry()})
	q, err := workqueue.New(workqueue.Config[string]{Name: "q", Metrics: p})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := workqueue.New(workqueue.Config[string]{Name: "q", Metrics: p}); err == nil {
		t.Fatal("second queue of the same name registered")
	}
	q.ShutDown()
	q2, err := workqueue.New(workqueue.Config[string]{Name: "q", Metrics: p})
	if err != nil {
		t.Fatalf("queue of the same name after ShutDown: %v", err)
	}
	q2.ShutDown()
	if _, err := workqueue.New(workqueue.Config[string]{Name: "q", Metrics: queueprom.New(queueprom.Config{})}); !errors.Is(err, queueprom.ErrNoRegisterer) {
		t.Fatalf("no registerer: %v", err)
	}
}
