package store_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/store"
)

// GatewaySpec is the user's intent for a gateway.
type GatewaySpec struct {
	State string `json:"state"`
}

// GatewayStatus is the controller's progress on a gateway.
type GatewayStatus struct {
	Phase string `json:"phase"`
}

// A Collection reads and writes the user's Go types; the user writes the
// spec and the controller the status, each with its own revision
// precondition.
func ExampleCollection() {
	ctx := context.Background()
	backend, err := memory.New(memory.Config{Kinds: []string{"ApiGateway"}})
	if err != nil {
		panic(err)
	}
	gateways, err := store.NewCollection[GatewaySpec, GatewayStatus](backend, "ApiGateway", store.CollectionConfig{})
	if err != nil {
		panic(err)
	}

	// The user records an intent.
	gw, err := gateways.Create(ctx, &store.Object[GatewaySpec, GatewayStatus]{
		Meta: store.Meta{Key: "team-a/gw-1", Labels: map[string]string{"team": "a"}},
		Spec: GatewaySpec{State: "Running"},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("created generation", gw.Generation, "state", gw.Spec.State)

	// The controller records its progress.
	gw.Status.Phase = "Creating"
	gw, err = gateways.UpdateStatus(ctx, gw)
	if err != nil {
		panic(err)
	}

	// The user changes the intent from a copy read earlier: the write is
	// refused, because the document changed since.
	stale := *gw
	stale.Revision--
	stale.Spec.State = "Stopped"
	_, err = gateways.UpdateSpec(ctx, &stale)
	fmt.Println("stale write conflicts:", errors.Is(err, store.ErrConflict))

	// Re-read and retry.
	fresh, err := gateways.Get(ctx, "team-a/gw-1")
	if err != nil {
		panic(err)
	}
	fresh.Spec.State = "Stopped"
	fresh, err = gateways.UpdateSpec(ctx, fresh)
	if err != nil {
		panic(err)
	}
	fmt.Println("generation", fresh.Generation, "state", fresh.Spec.State, "phase", fresh.Status.Phase)

	list, _, err := gateways.List(ctx, store.ListOptions{Selector: store.MustParseSelector("team=a")})
	if err != nil {
		panic(err)
	}
	fmt.Println("team a has", len(list), "gateway")
	// Output:
	// created generation 1 state Running
	// stale write conflicts: true
	// generation 2 state Stopped phase Creating
	// team a has 1 gateway
}

// A watch started at a list's revision delivers every later change, in
// order.
func ExampleCollection_Watch() {
	ctx := context.Background()
	backend, err := memory.New(memory.Config{Kinds: []string{"ApiGateway"}})
	if err != nil {
		panic(err)
	}
	gateways, err := store.NewCollection[GatewaySpec, GatewayStatus](backend, "ApiGateway", store.CollectionConfig{})
	if err != nil {
		panic(err)
	}
	_, rev, err := gateways.List(ctx, store.ListOptions{})
	if err != nil {
		panic(err)
	}
	w, err := gateways.Watch(ctx, rev)
	if err != nil {
		panic(err)
	}
	defer w.Close()

	gw, _ := gateways.Create(ctx, &store.Object[GatewaySpec, GatewayStatus]{
		Meta: store.Meta{Key: "gw-1"}, Spec: GatewaySpec{State: "Running"},
	})
	gw.Status.Phase = "Started"
	_, _ = gateways.UpdateStatus(ctx, gw)
	_ = gateways.Delete(ctx, "gw-1", store.DeleteOptions{})

	for range 3 {
		e, err := w.Next(ctx)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%v %s phase=%q\n", e.Type, e.Object.Key, e.Object.Status.Phase)
	}
	// Output:
	// Added gw-1 phase=""
	// Modified gw-1 phase="Started"
	// Deleted gw-1 phase="Started"
}

// Selectors use the syntax of Kubernetes label selectors and print in a
// canonical form.
func ExampleParseSelector() {
	sel, err := store.ParseSelector("tier in (web, edge), env==prod, !canary")
	if err != nil {
		panic(err)
	}
	fmt.Println(sel)
	fmt.Println(sel.Matches(map[string]string{"env": "prod", "tier": "edge"}))
	fmt.Println(sel.Matches(map[string]string{"env": "prod", "tier": "edge", "canary": "true"}))
	for _, r := range sel.Requirements() {
		fmt.Println(r.Key, r.Operator, r.Values)
	}
	// Output:
	// !canary,env=prod,tier in (edge,web)
	// true
	// false
	// canary ! []
	// env = [prod]
	// tier in [edge web]
}

// ListPage reads a large kind a page at a time; each page's Continue token
// asks for the next.
func ExampleCollection_ListPage() {
	ctx := context.Background()
	backend, err := memory.New(memory.Config{Kinds: []string{"ApiGateway"}})
	if err != nil {
		panic(err)
	}
	gateways, err := store.NewCollection[GatewaySpec, GatewayStatus](backend, "ApiGateway", store.CollectionConfig{})
	if err != nil {
		panic(err)
	}
	for _, key := range []string{"gw-4", "gw-2", "gw-5", "gw-1", "gw-3"} {
		if _, err := gateways.Create(ctx, &store.Object[GatewaySpec, GatewayStatus]{Meta: store.Meta{Key: key}}); err != nil {
			panic(err)
		}
	}

	opts := store.ListOptions{Limit: 2}
	for {
		page, err := gateways.ListPage(ctx, opts)
		if err != nil {
			panic(err)
		}
		for _, gw := range page.Items {
			fmt.Print(gw.Key, " ")
		}
		fmt.Println("| more:", page.Continue != "")
		if page.Continue == "" {
			break
		}
		opts.Continue = page.Continue
	}
	// Output:
	// gw-1 gw-2 | more: true
	// gw-3 gw-4 | more: true
	// gw-5 | more: false
}
