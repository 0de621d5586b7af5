package platform

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tendhq/tend/manager"

	"github.com/tendhq/tend/examples/gateway/infra"
)

// steps records the gateway steps that ran to completion, in order.
type steps struct {
	mu  sync.Mutex
	ran []string
}

func (s *steps) observe(ev stepEvent) {
	if ev.Outcome == 0 || ev.Kind != KindApiGateway {
		return
	}
	s.mu.Lock()
	s.ran = append(s.ran, ev.Step)
	s.mu.Unlock()
}

func (s *steps) since(n int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.ran[n:])
}

func (s *steps) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ran)
}

// cycles counts the stop-then-start cycles in ran: each is a Stopping (one
// or more calls of delete_instance, which reports progress until the
// instance is gone) then a Starting.
func cycles(ran []string) int {
	n, stopped := 0, false
	for _, s := range ran {
		switch s {
		case StepDeleteInstance:
			stopped = true
		case StepCreateInstance:
			if stopped {
				n++
			}
			stopped = false
		}
	}
	return n
}

// Each write of Restarting is one restart, served once: writing it again
// restarts again, and Running then Restarting back to back is one restart,
// never lost. The State a user reads afterwards is still Restarting, and the
// gateway is Started.
func TestRestartRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, infra.SimConfig{})
		var s steps
		p := e.start(manager.Config{}, s.observe)
		defer p.stop()
		ctx := context.Background()
		e.populate(p.Platform, "gw")

		restart := func(what string, states ...GatewayState) {
			t.Helper()
			before := s.count()
			for _, st := range states {
				if _, err := p.SetGatewayState(ctx, "gw", st); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(5 * time.Second)
			synctest.Wait()
			if !e.settled(p.Platform, "gw", Restarting) {
				t.Fatalf("%s: not settled in Restarting", what)
			}
			if got := cycles(s.since(before)); got != 1 {
				t.Fatalf("%s: %d stop-then-start cycles (%v), want 1", what, got, s.since(before))
			}
		}
		restart("first restart", Restarting)
		restart("Restarting written again", Restarting)
		restart("Running then Restarting back to back", Running, Restarting)

		gw, err := p.docs.Gateways.Get(ctx, "gw")
		if err != nil {
			t.Fatal(err)
		}
		if gw.Spec.State != Restarting || gw.Status.Phase != GatewayStarted || len(gw.Status.Requests) != 1 ||
			len(gw.Status.Requests[0].Served) != 1 || gw.Status.Requests[0].Served[0] != gw.Spec.Restart {
			t.Fatalf("spec %+v, status %+v: want Restarting, Started, the last token served", gw.Spec, gw.Status.Status)
		}
	})
}

// Drift: a Deployment deleted behind the controller's back is made again.
func TestDeploymentDeletedOutOfBandIsRecreated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, infra.SimConfig{})
		p := e.start(manager.Config{}, nil)
		defer p.stop()
		e.populate(p.Platform, "gw")
		if err := e.sim.Delete(context.Background(), deploymentRef("gw")); err != nil {
			t.Fatal(err)
		}
		e.waitFor("the Deployment made again", func() bool {
			obs, err := e.sim.Get(context.Background(), deploymentRef("gw"))
			return err == nil && obs.Ready && !obs.Terminating && e.settled(p.Platform, "gw", Running)
		})
	})
}

// A custom domain's certificate is renewed by a timer RenewBefore it
// expires, across a restart of the controllers, and again after that.
func TestCertificateRenewedByTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, infra.SimConfig{})
		start := func() *running {
			p, err := New(Config{Store: e.st, Cluster: e.sim, Databases: e.sim, Poll: 20 * time.Millisecond,
				CertificateLifetime: 90 * 24 * time.Hour, RenewBefore: 30 * 24 * time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- p.Run(ctx) }()
			return &running{Platform: p, stop: func() { cancel(); <-done }}
		}
		p := start()
		defer func() { p.stop() }()
		e.populate(p.Platform, "gw")
		issued := time.Now()
		expires := func() time.Time {
			d, err := p.docs.Domains.Get(context.Background(), "gw")
			if err != nil {
				t.Fatal(err)
			}
			return d.Status.CertificateExpires
		}
		first := expires()
		if d := first.Sub(issued); d > 90*24*time.Hour || d < 90*24*time.Hour-time.Minute {
			t.Fatalf("certificate expires %v after issue, want 90 days", first.Sub(issued))
		}
		time.Sleep(30 * 24 * time.Hour)
		p.stop() // a restart a month in: the timer's due time is in the status
		p = start()
		time.Sleep(30*24*time.Hour - time.Minute) // just before 60 days
		synctest.Wait()
		if got := expires(); !got.Equal(first) {
			t.Fatalf("renewed early, at %v", got.Sub(first))
		}
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		second := expires()
		if d := second.Sub(first); d < 59*24*time.Hour || d > 60*24*time.Hour+time.Hour {
			t.Fatalf("after 60 days the certificate expires %v later than the first, want renewed at 60 days", d)
		}
		time.Sleep(60 * 24 * time.Hour)
		synctest.Wait()
		if d := expires().Sub(second); d < 59*24*time.Hour || d > 60*24*time.Hour+time.Hour {
			t.Fatalf("second renewal %v after the first, want 60 days", d)
		}
	})
}
