package driver_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/history"
	sm "github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// triggerLog records the triggers of each reconcile of a driver, joined
// with ",".
type triggerLog struct {
	mu  sync.Mutex // guards got
	got []string
}

func (l *triggerLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	got := l.got
	l.got = nil
	return got
}

// triggerScenario drives a gateway through its life under a controller in
// fake time, with extra sources beside the driver's own, and returns what
// it found wrong with the triggers of its reconciles: created (spec 1), a
// step failing once (retry), paused and resumed by an operator (command),
// settled with its health checked (drift), its intent changed (spec 2), and
// deleted (delete), never queued by the
// driver's own writes, the echoes of its removal included; every history
// entry the driver wrote names its reconcile's triggers.
func triggerScenario(t *testing.T, extra func(f *gwFixture) []controller.Source) []string {
	var p problems
	synctest.Test(t, func(t *testing.T) {
		f, rec := operatorFixture(t)
		f.edit(t, func(def *sm.Definition[gwState, gwPhase]) { // Started checks its health every 10 minutes
			def.Phases[3].Health = []sm.Require{sm.Is("deployment_available")}
			def.Phases[3].Repair = phStarting
			def.Phases[3].HealthEvery = 10 * time.Minute
		})
		failed := false
		f.world.hook = func(r stepRun) (sm.Outcome, error) {
			if r.step == "create_database" && !failed {
				failed = true
				return 0, errors.New("quota exceeded")
			}
			return 0, nil
		}
		d := f.driver(t, operatorConfig(f, rec))
		log := &triggerLog{}
		sources := []controller.Source{d.Source()}
		if extra != nil {
			sources = append(sources, extra(f)...)
		}
		c, err := controller.New(controller.Config{Name: "gateways", Sources: sources,
			Reconciler: controller.ReconcilerFunc(func(ctx context.Context, key string) (controller.Result, error) {
				ts, dropped := controller.TriggersFrom(ctx)
				log.mu.Lock()
				log.got = append(log.got, strings.Join(controller.TriggerStrings(ts, dropped), ","))
				log.mu.Unlock()
				return d.Reconcile(ctx, key)
			})})
		if err != nil {
			t.Fatal(err)
		}
		ctx, stop := context.WithCancel(t.Context())
		done := run(c, ctx)
		synctest.Wait()
		only := func(step string, got []string, allowed ...string) {
			for _, g := range got {
				for _, one := range strings.Split(g, ",") {
					if !slices.Contains(allowed, one) {
						p.add("%s: a reconcile triggered by %q (all: %q), want only %q", step, g, got, allowed)
						return
					}
				}
			}
		}

		f.create(t, "gw", gwRunning)
		time.Sleep(time.Minute)
		got := log.take()
		if len(got) == 0 || got[0] != "spec 1" {
			p.add("create: reconciles %q, want the first by spec 1", got)
		}
		if !slices.Contains(got, "retry") {
			p.add("create: reconciles %q, want one by retry after the failed step", got)
		}
		only("create", got, "spec 1", "retry", "requeue", "timer", "drift")
		if ph := f.get(t, "gw").Status.Phase; ph != phStarted {
			t.Fatalf("phase %s after a minute, want Started", ph)
		}

		operate(t, f, "gw", func(st *sm.Status[gwState, gwPhase]) { st.Paused = &sm.Pause{By: "ann"} })
		synctest.Wait()
		operate(t, f, "gw", func(st *sm.Status[gwState, gwPhase]) { st.Paused = nil })
		time.Sleep(time.Minute)
		got = log.take()
		if !slices.Contains(got, "command") {
			p.add("pause and resume: reconciles %q, want one by command", got)
		}
		// A health check still pending joins the next reconcile (the
		// queue's rule): drift may come with the others.
		only("pause and resume", got, "command", "timer", "requeue", "drift")

		time.Sleep(10 * time.Minute)
		got = log.take()
		if len(got) == 0 || !slices.Contains(got, "drift") {
			p.add("settled for 10 minutes: reconciles %q, want a health check by drift", got)
		}
		only("settled", got, "drift")

		obj := f.get(t, "gw")
		obj.Spec.State = gwStopped
		if _, err := f.coll.UpdateSpec(t.Context(), obj); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		got = log.take()
		if len(got) == 0 || !slices.Contains(strings.Split(got[0], ","), "spec 2") {
			p.add("intent changed: reconciles %q, want the first by spec 2", got)
		}
		only("intent changed", got, "spec 2", "requeue", "timer", "drift")

		if err := f.coll.Delete(t.Context(), "gw", store.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		got = log.take()
		if n := strings.Count(strings.Join(got, ";"), "delete"); len(got) == 0 || got[0] != "delete" || n != 1 {
			p.add("deletion: reconciles %q, want the first by delete and no other", got)
		}
		only("deletion", got, "delete", "requeue", "timer", "drift")
		if _, err := f.coll.Get(t.Context(), "gw"); !errors.Is(err, store.ErrNotFound) {
			p.add("the gateway was not removed: %v", err)
		}

		stop()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		rec.Flush(t.Context())
		entries := readHistory(t, f.mem, "gw")
		if len(entries) == 0 {
			p.add("no history")
		}
		for _, e := range entries {
			if e.ReconcileID != "" && len(e.Triggers) == 0 {
				p.add("history entry %s of reconcile %s names no trigger", e, e.ReconcileID)
				break
			}
		}
		if i := slices.IndexFunc(entries, func(e history.Entry) bool { return slices.Contains(e.Triggers, "spec 1") }); i < 0 {
			p.add("no history entry names the trigger spec 1")
		}
	})
	return p.all()
}

// TestDriverTriggers checks the trigger of each kind the driver's source
// and its requeues give, that its own writes (its removal's included)
// trigger nothing, and that its history entries carry them.
func TestDriverTriggers(t *testing.T) {
	if p := triggerScenario(t, nil); len(p) > 0 {
		t.Fatal(strings.Join(p, "\n"))
	}
}

// TestDriverTriggersCatchesEchoes plants a defect, a plain watch of the
// gateways beside the driver's own source, which queues the driver's own
// writes, and checks that the scenario sees it.
func TestDriverTriggersCatchesEchoes(t *testing.T) {
	p := triggerScenario(t, func(f *gwFixture) []controller.Source {
		return []controller.Source{controller.For(f.mem, "ApiGateway")}
	})
	if len(p) == 0 {
		t.Fatal("a watch queueing the driver's own writes passed the scenario")
	}
	t.Logf("found: %s", strings.Join(p, "\n"))
}
