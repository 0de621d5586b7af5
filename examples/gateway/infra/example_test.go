package infra_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/tendhq/tend/examples/gateway/infra"
)

// Resources live in namespaces, deleting is idempotent, and every change is
// logged in order.
func ExampleSim() {
	ctx := context.Background()
	sim, err := infra.NewSim(infra.SimConfig{})
	if err != nil {
		fmt.Println(err)
		return
	}
	dep := infra.Resource{Ref: infra.Ref{Kind: infra.Deployment, Namespace: "acme", Name: "acme"}}
	fmt.Println(errors.Is(sim.Apply(ctx, dep), infra.ErrNotFound)) // no namespace yet
	_ = sim.Apply(ctx, infra.Resource{Ref: infra.Ref{Kind: infra.Namespace, Name: "acme"}})
	_ = sim.Apply(ctx, dep)
	o, _ := sim.Get(ctx, dep.Ref)
	fmt.Println(o.Ref, "ready:", o.Ready)
	_ = sim.Delete(ctx, dep.Ref)
	fmt.Println(sim.Delete(ctx, dep.Ref)) // already gone: still a success
	for _, op := range sim.Ops() {
		fmt.Println(op)
	}
	// Output:
	// true
	// Deployment acme/acme ready: true
	// <nil>
	// #1 apply Namespace acme
	// #2 apply Deployment acme/acme
	// #3 delete Deployment acme/acme
	// #4 gone Deployment acme/acme
}
