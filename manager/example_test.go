package manager_test

import (
	"context"
	"fmt"
	"log"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/manager"
	"github.com/tendhq/tend/store"
)

// Drive wires a kind in one statement: the driver, its controller, the
// machine's registration and the kinds the store needs.
func ExampleDrive() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	backend, err := memory.New(memory.Config{})
	if err != nil {
		log.Fatal(err)
	}
	mgr, err := manager.New(manager.Config{Store: backend})
	if err != nil {
		log.Fatal(err)
	}
	on, off, lit := (&lamps{lit: map[string]bool{}}).bind()
	desks, err := manager.Drive[lampSpec, lampStatus](mgr, lampMachine(on, off, lit)).
		Steps(on, off).Conditions(lit).Workers(2).Complete()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("kinds:", backend.Kinds())

	done := make(chan error, 1)
	go func() { done <- mgr.Run(ctx) }()
	w, err := desks.Collection().WatchNow(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer w.Close()
	if _, err := desks.Create(ctx, &lamp{Meta: store.Meta{Key: "desk"}, Spec: lampSpec{State: "On"}}); err != nil {
		log.Fatal(err)
	}
	for {
		ev, err := w.Next(ctx)
		if err != nil {
			log.Fatal(err)
		}
		if ev.Object.Status.Phase == "Lit" {
			fmt.Println(ev.Object.Key, ev.Object.Status.Phase)
			break
		}
	}
	cancel()
	if err := <-done; err != nil {
		log.Fatal(err)
	}
	// Output:
	// kinds: [Lamp TendMachine]
	// desk Lit
}
