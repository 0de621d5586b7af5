package driver_test

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// TestWaitStartsShort: a condition that holds 300 ms after its step ran is
// observed within 400 ms, not after the 5 s WaitInterval.
func TestWaitStartsShort(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newGWFixture(t)
		f.world.startDelay = 300 * time.Millisecond
		stop := running(t, f.driver(t, f.config()), nil, nil)
		defer stop()
		f.create(t, "gw", gwRunning)
		time.Sleep(400 * time.Millisecond)
		synctest.Wait()
		if p := f.get(t, "gw").Status.Phase; p != phStarted {
			t.Fatalf("phase %v 400 ms after the deployment step, want Started", p)
		}
	})
}

// TestWaitBacksOff: a condition that does not hold is observed again after
// 100 ms, then after as long as the wait has lasted, up to WaitInterval.
func TestWaitBacksOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newGWFixture(t)
		f.world.startDelay = time.Hour
		cfg := f.config()
		cfg.WaitInterval = time.Second
		d := f.driver(t, cfg)
		f.create(t, "gw", gwRunning)
		var waits []time.Duration
		for range 8 {
			res, err := d.Reconcile(t.Context(), "gw")
			if err != nil {
				t.Fatal(err)
			}
			waits = append(waits, res.RequeueAfter)
			time.Sleep(res.RequeueAfter)
		}
		ms := time.Millisecond
		want := []time.Duration{100 * ms, 100 * ms, 200 * ms, 400 * ms, 800 * ms, time.Second, time.Second, time.Second}
		if !slices.Equal(waits, want) {
			t.Fatalf("waits %v, want %v", waits, want)
		}
		if p := f.get(t, "gw").Status.Phase; p != phStarting {
			t.Fatalf("phase %v, want Starting", p)
		}
	})
}
