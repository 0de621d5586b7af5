package platform_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/examples/gateway/infra"
	"github.com/tendhq/tend/examples/gateway/platform"
	sm "github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// A gateway is created, started, and deleted through its ordered cascade; a
// change of intent while it is being deleted is refused.
func Example() {
	st, _ := memory.New(memory.Config{Kinds: platform.Kinds()})
	sim, _ := infra.NewSim(infra.SimConfig{DeleteDelay: 200 * time.Millisecond})
	p, err := platform.New(platform.Config{Store: st, Cluster: sim, Databases: sim, Poll: time.Millisecond})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- p.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()

	gws := p.Collections().Gateways
	waitFor := func(ok func(*platform.Gateway, error) bool) {
		for gw, err := gws.Get(ctx, "acme"); !ok(gw, err); gw, err = gws.Get(ctx, "acme") {
			time.Sleep(time.Millisecond)
		}
	}
	if _, err := p.CreateGateway(ctx, "acme", platform.GatewaySpec{State: platform.Running}); err != nil {
		fmt.Println(err)
		return
	}
	waitFor(func(gw *platform.Gateway, err error) bool {
		return err == nil && gw.Status.Phase == platform.GatewayStarted
	})
	fmt.Println("acme is Started")

	if _, err := p.SetGatewayState(ctx, "acme", platform.Deleted); err != nil {
		fmt.Println(err)
		return
	}
	waitFor(func(gw *platform.Gateway, err error) bool {
		return err == nil && gw.Status.Phase == platform.GatewayDeleting || errors.Is(err, store.ErrNotFound)
	})
	if _, err := p.SetGatewayState(ctx, "acme", platform.Running); errors.Is(err, sm.ErrIntentRefused) {
		fmt.Println("Running refused while Deleting")
	}
	waitFor(func(_ *platform.Gateway, err error) bool { return errors.Is(err, store.ErrNotFound) })
	fmt.Println("acme removed; resources left:", len(sim.Resources()), "databases left:", len(sim.DatabaseNames()))
	fmt.Println("order held:", platform.CheckOrder(sim.Ops()) == nil)
	// Output:
	// acme is Started
	// Running refused while Deleting
	// acme removed; resources left: 0 databases left: 0
	// order held: true
}
