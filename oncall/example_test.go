package oncall_test

import (
	"context"
	"fmt"
	"slices"

	"github.com/tendhq/tend/registry"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/history"
	"github.com/tendhq/tend/oncall"
	"github.com/tendhq/tend/store"
)

// An operator holds a document, reads it back as any tool would without
// the user's types, and finds the action in its history.
func Example() {
	ctx := context.Background()
	b, _ := memory.New(memory.Config{Kinds: slices.Concat([]string{"Gateway"}, history.Kinds("Gateway"), registry.Kinds())})
	doc, _ := b.Create(ctx, store.Document{Meta: store.Meta{Kind: "Gateway", Key: "gw-1"}, Spec: []byte(`{"state":"Running"}`)})
	doc.Status = []byte(`{"phase":"Starting","target":"Running","operation":{"id":"op-1","phase":"Starting","from":"Created","done":["deploy"]}}`)
	_, _ = b.UpdateStatus(ctx, doc)

	ops, _ := oncall.New(b, oncall.Config{Actor: "alice"})
	if err := ops.Pause(ctx, "Gateway", "gw-1", "database maintenance"); err != nil {
		fmt.Println(err)
	}
	o, _ := ops.Get(ctx, "Gateway", "gw-1")
	fmt.Println(o.State, o.Phase, o.Operation.Done, "paused by", o.Paused.By+":", o.Paused.Reason)
	h, _ := ops.History(ctx, "Gateway", "gw-1")
	fmt.Println(h[0].Type, h[0].Name, h[0].Actor)
	// Output:
	// Running Starting [deploy] paused by alice: database maintenance
	// operator pause alice
}
