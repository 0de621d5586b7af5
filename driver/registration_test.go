package driver_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tendhq/tend/driver"
	"github.com/tendhq/tend/manager"
	"github.com/tendhq/tend/registry"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/history"
	"github.com/tendhq/tend/oncall"
	sm "github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// gatewayReplica runs a manager named identity of one controller over a
// driver of f's gateways until the returned stop is called.
func gatewayReplica(t *testing.T, f *gwFixture, mode manager.Mode, identity string) (stop func()) {
	t.Helper()
	d := f.driver(t, f.config())
	c, err := controller.New(controller.Config{Name: "gateways", Reconciler: d, Sources: []controller.Source{d.Source()}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := manager.Config{Controllers: []*controller.Controller{c}, Mode: mode, Identity: identity, LeasePrefix: "t/"}
	if mode != manager.Single {
		cfg.Leaser = f.mem
	}
	m, err := manager.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	stopped := false
	return func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("%s: Run: %v", identity, err)
		}
	}
}

func registration(t *testing.T, b store.Reader) (registry.Entry, int64) {
	t.Helper()
	doc, err := b.Get(t.Context(), registry.Kind, "ApiGateway")
	if err != nil {
		t.Fatal(err)
	}
	var r registry.Entry
	if err := json.Unmarshal(doc.Spec, &r); err != nil {
		t.Fatal(err)
	}
	return r, doc.Meta.Revision
}

func presence(t *testing.T, b store.Leaser) []string {
	t.Helper()
	leases, err := b.ListLeases(t.Context(), registry.PresencePrefix("t/", "ApiGateway"))
	if err != nil {
		t.Fatal(err)
	}
	var holders []string
	for _, l := range leases {
		holders = append(holders, l.Holder)
	}
	return holders
}

// Each replica records the machine it drives (once: a second replica with
// the same machine writes nothing) and holds a presence lease while it
// runs, which operators read to know that the kind is served.
func TestManagerRecordsTheMachine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newGWFixture(t, registry.Kind)
		ops, err := oncall.New(f.mem, oncall.Config{Actor: "ann"})
		if err != nil {
			t.Fatal(err)
		}
		stop1 := gatewayReplica(t, f, manager.Single, "r1")
		defer stop1()
		synctest.Wait()
		r, rev := registration(t, f.mem)
		want, _ := json.Marshal(f.m.Descriptor())
		got, _ := json.Marshal(r.Machine)
		if string(got) != string(want) || r.Kind != "ApiGateway" || r.Replica != "r1" || r.Presence != "t/presence/ApiGateway/" ||
			len(r.Finalizers) != 1 || r.Finalizers[0] != driver.DefaultFinalizer || r.RecordedAt.IsZero() {
			t.Fatalf("registration %+v", r)
		}
		if m, err := r.Build(); err != nil || m.Name() != "ApiGateway" {
			t.Fatalf("the recorded machine does not build: %v", err)
		}
		if served, err := ops.Served(t.Context(), "ApiGateway"); err != nil || !served {
			t.Fatalf("served: %v, %v", served, err)
		}

		stop2 := gatewayReplica(t, f, manager.LeaderElection, "r2")
		defer stop2()
		time.Sleep(time.Minute) // leases renewed meanwhile
		synctest.Wait()
		if r, rev2 := registration(t, f.mem); rev2 != rev || r.Replica != "r1" {
			t.Errorf("a second replica with the same machine rewrote the registration (now by %s)", r.Replica)
		}
		if got := presence(t, f.mem); len(got) != 2 {
			t.Errorf("presence leases held by %v, want r1 and r2", got)
		}
		stop1()
		if got := presence(t, f.mem); len(got) != 1 || got[0] != "r2" {
			t.Errorf("presence leases held by %v after r1 stopped, want r2's alone", got)
		}
		stop2()
		if served, err := ops.Served(t.Context(), "ApiGateway"); err != nil || served {
			t.Fatalf("served after every replica stopped: %v, %v", served, err)
		}

		// A new version of the machine is recorded over the old.
		f.edit(t, func(def *sm.Definition[gwState, gwPhase]) { def.Name = "ApiGateway2" })
		stop3 := gatewayReplica(t, f, manager.Single, "r3")
		defer stop3()
		synctest.Wait()
		if r, rev3 := registration(t, f.mem); rev3 == rev || r.Replica != "r3" || r.Machine.Name != "ApiGateway2" {
			t.Errorf("registration of the changed machine: %+v", r)
		}
	})
}

// A store without the machines' kind records no machine, and the replica
// runs as usual, still present.
func TestManagerWithoutMachinesKind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, err := memory.New(memory.Config{Kinds: []string{"ApiGateway"}})
		if err != nil {
			t.Fatal(err)
		}
		f := newGWFixtureOn(t, mem, mem)
		stop := gatewayReplica(t, f, manager.Single, "r1")
		defer stop()
		f.create(t, "gw", gwRunning)
		synctest.Wait()
		if got := presence(t, mem); len(got) != 1 {
			t.Errorf("presence leases %v, want r1's", got)
		}
		if st := f.get(t, "gw").Status; st.Phase != phStarted {
			t.Errorf("phase %v, want Started", st.Phase)
		}
	})
}

// An operator acts through oncall.Client on a gateway that a replica
// drives: the client reads the document without the gateway's Go types,
// finds it failing, retries it, waits for the controller's outcome, and
// pauses and resumes it.
func TestOperatorClientEndToEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newGWFixture(t, registry.Kind, history.KindFor("ApiGateway"))
		rec, stopRec := recording(t, f.mem, history.RecorderConfig{})
		defer stopRec()
		c := &calls{start: time.Now()}
		failing(f, "create_database", errors.New("quota exceeded"), c, func() {})
		cfg := f.config()
		cfg.History = rec
		d := f.driver(t, cfg)
		ctrl, err := controller.New(controller.Config{Name: "gateways", Reconciler: d, Sources: []controller.Source{d.Source()}})
		if err != nil {
			t.Fatal(err)
		}
		m, err := manager.New(manager.Config{Controllers: []*controller.Controller{ctrl}, Identity: "r1"})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- m.Run(ctx) }()
		defer func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		}()
		f.create(t, "gw", gwRunning)
		time.Sleep(3 * time.Second)

		ops, err := oncall.New(f.mem, oncall.Config{Actor: "ann"})
		if err != nil {
			t.Fatal(err)
		}
		machine, err := ops.Machine(t.Context(), "ApiGateway")
		if err != nil {
			t.Fatal(err)
		}
		obj, err := ops.Get(t.Context(), "ApiGateway", "gw")
		if err != nil {
			t.Fatal(err)
		}
		if step, failed := obj.FailedStep(machine); !failed || step != "create_database" || obj.Phase != "Creating" {
			t.Fatalf("the client reads %s failing at %q (%v)", obj.Phase, step, failed)
		}
		before := len(c.times())
		cmd, err := ops.Retry(t.Context(), "ApiGateway", "gw")
		if err != nil {
			t.Fatal(err)
		}
		e, err := ops.Wait(t.Context(), "ApiGateway", "gw", cmd.ID)
		if err != nil || e.Outcome != "applied" || e.Actor != "ann" {
			t.Fatalf("waiting for the retry: %+v, %v", e, err)
		}
		if got := c.times(); len(got) < before+1 || got[before] != 3*time.Second {
			t.Errorf("calls after the retry at 3 s: %v, want one at once", got[before:])
		}

		if err := ops.Pause(t.Context(), "ApiGateway", "gw", "quota being raised"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		paused := len(c.times())
		time.Sleep(time.Hour)
		if got := len(c.times()); got != paused {
			t.Errorf("%d calls while paused for an hour", got-paused)
		}
		failing(f, "nothing", nil, c, func() {}) // the quota was raised
		if err := ops.Resume(t.Context(), "ApiGateway", "gw"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if obj, err := ops.Get(t.Context(), "ApiGateway", "gw"); err != nil || obj.Phase != "Started" {
			t.Fatalf("after the resume: %s, %v: want Started at once", obj.Phase, err)
		}
	})
}
