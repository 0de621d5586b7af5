package cascade_test

import (
	"context"
	"fmt"

	"github.com/tendhq/tend/manager"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/cascade"
	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/store"
)

// A gateway owns two routes. Deleted in the foreground, it stays until the
// garbage collector, a controller run by a Manager, has deleted both
// routes, so once it is gone they are too.
func Example() {
	ctx := context.Background()
	s, _ := memory.New(memory.Config{Kinds: []string{"Gateway", "Route"}})
	gw, _ := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Gateway", Key: "gw"}})
	for _, key := range []string{"gw/a", "gw/b"} {
		_, _ = s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Route", Key: key, Owners: []store.OwnerRef{
			{Kind: "Gateway", Key: "gw", UID: gw.Meta.UID, Controller: true, BlockOwnerDeletion: true},
		}}})
	}

	gc, err := cascade.NewController(cascade.Config{Backend: s})
	if err != nil {
		fmt.Println(err)
		return
	}
	mgr, err := manager.New(manager.Config{Controllers: []*controller.Controller{gc}})
	if err != nil {
		fmt.Println(err)
		return
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- mgr.Run(runCtx) }()

	watch, _ := s.Watch(ctx, "Gateway", gw.Meta.Revision)
	defer watch.Close()
	_ = cascade.Delete(ctx, s, "Gateway", "gw", cascade.Foreground)
	for {
		ev, err := watch.Next(ctx)
		if err != nil {
			fmt.Println(err)
			return
		}
		m := &ev.Document.Meta
		fmt.Println(ev.Type, m.Key, "terminating:", m.Terminating(), m.Finalizers)
		if ev.Type == store.Deleted {
			break
		}
	}
	routes, _ := s.List(ctx, "Route", store.ListOptions{})
	fmt.Println("routes left:", len(routes.Items))

	stop()
	fmt.Println("manager stopped:", <-done)
	// Output:
	// Modified gw terminating: false [tend.dev/foreground-deletion]
	// Modified gw terminating: true [tend.dev/foreground-deletion]
	// Deleted gw terminating: true []
	// routes left: 0
	// manager stopped: <nil>
}

// Delete records the policy on the owner as a finalizer; a running garbage
// collector ([NewController]) completes it. Here the gateway waits, Terminating, for its dependents to be
// orphaned.
func ExampleDelete() {
	ctx := context.Background()
	s, _ := memory.New(memory.Config{Kinds: []string{"Gateway"}})
	_, _ = s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Gateway", Key: "gw"}})

	_ = cascade.Delete(ctx, s, "Gateway", "gw", cascade.Orphan)
	doc, _ := s.Get(ctx, "Gateway", "gw")
	fmt.Println(doc.Meta.Terminating(), doc.Meta.Finalizers)

	// Deleting again under another policy is refused.
	fmt.Println(cascade.Delete(ctx, s, "Gateway", "gw", cascade.Background))
	// Output:
	// true [tend.dev/orphan]
	// cascade: document already terminating under another policy: Gateway "gw" is terminating under Orphan, not Background
}
