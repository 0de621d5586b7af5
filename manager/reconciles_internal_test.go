package manager

import (
	"errors"
	"testing"
	"time"

	"github.com/tendhq/tend/controller"
)

// TestReconcileLogAllocatesNothing checks that recording a reconcile of a
// key the log holds, or of a new key that evicts another, allocates
// nothing.
func TestReconcileLogAllocatesNothing(t *testing.T) {
	l := newReconcileLog(8, 2)
	triggers := []controller.Trigger{{Kind: controller.TriggerSpec, Generation: 2}, {Kind: controller.TriggerRetry}}
	r := controller.Reconciled{Key: "a", ReconcileID: "r-1", Triggers: triggers, Start: time.Now(),
		Duration: time.Millisecond, Result: "error", Err: errors.New("boom")}
	keys := []string{"a", "b", "c"}
	for _, k := range keys {
		r.Key = k
		l.record("Widget", &r)
	}
	i := 0
	record := l.recorder("Widget") // what the controller calls
	if n := testing.AllocsPerRun(1000, func() {
		r.Key = keys[i%3]
		i++
		record(r)
	}); n != 0 {
		t.Errorf("recording a reconcile allocates %.1f times, want 0", n)
	}
}

// TestReconcileLogKeepsTheLast checks the bounds: the last perKey
// reconciles of a key, oldest first, for the maxKeys keys reconciled most
// recently.
func TestReconcileLogKeepsTheLast(t *testing.T) {
	l := newReconcileLog(3, 2)
	rec := func(key, id string, ts ...controller.Trigger) {
		l.record("Widget", &controller.Reconciled{Key: key, ReconcileID: id, Triggers: ts, Result: "success"})
	}
	spec := controller.Trigger{Kind: controller.TriggerSpec, Generation: 1}
	for _, id := range []string{"1", "2", "3", "4", "5"} {
		rec("a", id, spec)
	}
	rec("b", "6")
	got := l.get("Widget", "a")
	if len(got) != 3 || got[0].ReconcileID != "3" || got[2].ReconcileID != "5" || len(got[2].Triggers) != 1 || got[2].Triggers[0] != "spec 1" {
		t.Errorf("a: %+v, want reconciles 3, 4, 5 triggered by spec 1", got)
	}
	rec("a", "7") // a is now the most recent; c evicts b
	rec("c", "8")
	if l.get("Widget", "b") != nil || l.get("Widget", "a") == nil || l.get("Widget", "c") == nil {
		t.Errorf("after c: a %v, b %v, c %v; want b evicted", l.get("Widget", "a"), l.get("Widget", "b"), l.get("Widget", "c"))
	}
	if l.get("Other", "a") != nil {
		t.Error("another controller's key a reports Widget's reconciles")
	}
	if newReconcileLog(-1, 0) != nil {
		t.Error("a negative ReconcilesPerKey keeps reconciles")
	}
}
