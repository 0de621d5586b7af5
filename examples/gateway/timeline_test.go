package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tendhq/tend/examples/gateway/infra"
)

// The timeline reads operations, steps, failures and backoff from the
// statuses written: a failure is a write with a new attempt count or retry
// time, and a write that only repeats one is not counted twice.
func TestTimelineRecords(t *testing.T) {
	tl := newTimeline()
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	op := func(attempts int, retryIn time.Duration, now time.Duration) *opSeen {
		o := &opSeen{ID: "op1", Phase: "Deleting", Attempts: attempts}
		if attempts > 0 {
			o.RetryAt = at(now + retryIn)
		}
		return o
	}
	const gw = "ApiGateway"
	tl.record(gw, "gw-1", op(0, 0, 0), "delete_stages", at(0))
	tl.record(gw, "gw-1", op(1, 5*time.Millisecond, 10*time.Millisecond), "delete_stages", at(10*time.Millisecond))
	tl.record(gw, "gw-1", op(2, 10*time.Millisecond, 20*time.Millisecond), "delete_stages", at(20*time.Millisecond))
	// The same failure written again (another field of the status changed).
	tl.record(gw, "gw-1", &opSeen{ID: "op1", Phase: "Deleting", Attempts: 2, RetryAt: at(30 * time.Millisecond)}, "delete_stages", at(25*time.Millisecond))
	tl.record(gw, "gw-1", op(0, 0, 0), "delete_stages", at(40*time.Millisecond)) // progressed
	tl.record(gw, "gw-1", op(1, 5*time.Millisecond, 50*time.Millisecond), "delete_stages", at(50*time.Millisecond))
	tl.record(gw, "gw-1", op(0, 0, 0), "delete_instance", at(time.Second))
	tl.record(gw, "gw-1", op(0, 0, 0), "", at(1500*time.Millisecond))
	tl.record(gw, "gw-1", nil, "", at(2*time.Second))
	tl.record("RuntimeDomain", "gw-1", op(1, 20*time.Millisecond, 100*time.Millisecond), "delete_routes", at(100*time.Millisecond))

	b := tl.breakdown(at(3 * time.Second))
	if b.Slowest == nil || b.Slowest.Kind != "RuntimeDomain" || b.Slowest.End != at(3*time.Second) {
		t.Fatalf("slowest: %v, want the domain's operation, still open, closed at the end", b.Slowest)
	}
	if b.Failed != 4 || b.Backoff != 40*time.Millisecond {
		t.Errorf("failed %d, backoff %v; want 4 and 40ms", b.Failed, b.Backoff)
	}
	if b.Streak == nil || b.Streak.Name != "delete_stages" || b.Streak.InARow != 2 || b.Streak.Failed != 3 {
		t.Fatalf("longest run: %+v, want delete_stages, 2 in a row, 3 failed", b.Streak)
	}
	var gwOp *opSpan
	for _, o := range tl.ops {
		if o.Kind == gw {
			gwOp = o
		}
	}
	want := "ApiGateway gw-1 Deleting 2.00s: delete_stages 1.00s (3 failed, 2 in a row, 0.02s backoff), delete_instance 0.50s, 1 more 0.50s"
	if got := gwOp.String(); got != want {
		t.Errorf("operation:\n got %s\nwant %s", got, want)
	}
}

func TestPercentile(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 30; i++ {
		ds = append(ds, time.Duration(i)*time.Second)
	}
	for _, tt := range []struct {
		values []time.Duration
		p      int
		want   time.Duration
	}{
		{ds, 50, 15 * time.Second},
		{ds, 90, 27 * time.Second},
		{ds, 100, 30 * time.Second},
		{ds[:1], 50, time.Second},
		{ds[:1], 90, time.Second},
		{ds[:10], 90, 9 * time.Second},
		{ds[:10], 50, 5 * time.Second},
	} {
		if got := percentile(tt.values, tt.p); got != tt.want {
			t.Errorf("p%d of %d values = %v, want %v", tt.p, len(tt.values), got, tt.want)
		}
	}
}

// measure plays one run per seed and reports each, then the median, p90 and
// maximum, under fake time.
func TestMeasure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out bytes.Buffer
		opts := options{Gateways: 5, FailureRate: 0.3, Delay: 50 * time.Millisecond, Latency: time.Millisecond,
			Seed: 4, Timeout: 10 * time.Minute}
		if err := measure(context.Background(), opts, 3, &out); err != nil {
			t.Fatalf("%v\n%s", err, out.String())
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		var rows []string
		for _, l := range lines {
			if f := strings.Fields(l); len(f) > 0 && (f[0] == "4" || f[0] == "5" || f[0] == "6") {
				rows = append(rows, l)
			}
		}
		if len(rows) != 3 {
			t.Fatalf("want a row for each of seeds 4, 5 and 6:\n%s", out.String())
		}
		for _, r := range rows {
			if strings.Contains(r, "FAILED") || !strings.Contains(r, "Deleting") && !strings.Contains(r, "Starting") &&
				!strings.Contains(r, "Creating") && !strings.Contains(r, "Stopping") {
				t.Errorf("row without a slowest operation: %s", r)
			}
		}
		if last := lines[len(lines)-1]; !strings.HasPrefix(last, "time to converge over 3 runs: median ") {
			t.Errorf("last line %q, want the summary", last)
		}
	})
}

// The demo caps its backoff at ten polls, far below the platform's default
// of 2 s: the slowest runs at a high failure rate spent nearly all their
// time waiting out that cap (README.md, "Where the time goes").
func TestPlatformConfigCapsBackoff(t *testing.T) {
	for _, tt := range []struct {
		name             string
		opts             options
		w                *world
		poll, maxBackoff time.Duration
	}{
		{"default delay", options{Delay: 300 * time.Millisecond}, &world{}, 50 * time.Millisecond, 500 * time.Millisecond},
		{"short delay", options{Delay: 40 * time.Millisecond}, &world{}, 10 * time.Millisecond, 100 * time.Millisecond},
		{"no delay", options{}, &world{}, 5 * time.Millisecond, 50 * time.Millisecond},
		{"cluster", options{Delay: 300 * time.Millisecond}, &world{kube: &infra.Kube{}}, 100 * time.Millisecond, time.Second},
		{"chosen cap", options{Delay: 300 * time.Millisecond, MaxBackoff: 2 * time.Second}, &world{}, 50 * time.Millisecond, 2 * time.Second},
	} {
		cfg := platformConfig(tt.opts, nil, tt.w)
		if cfg.Poll != tt.poll || cfg.MaxBackoff != tt.maxBackoff {
			t.Errorf("%s: poll %v, backoff cap %v; want %v and %v", tt.name, cfg.Poll, cfg.MaxBackoff, tt.poll, tt.maxBackoff)
		}
	}
}
