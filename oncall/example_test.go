package oncall_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"slices"
	"time"

	"github.com/tendhq/tend/registry"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/history"
	"github.com/tendhq/tend/oncall"
	"github.com/tendhq/tend/statemachine"
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

	// A running Manager records the machine of each kind it drives.
	recordGatewayMachine(ctx, b)

	ops, _ := oncall.New(b, oncall.Config{Actor: "alice"})
	if err := ops.Pause(ctx, "Gateway", "gw-1", "database maintenance"); err != nil {
		fmt.Println(err)
	}
	o, _ := ops.Get(ctx, "Gateway", "gw-1")
	fmt.Println(o.State, o.Phase, o.Operation.Done, "paused by", o.Paused.By+":", o.Paused.Reason)
	h, _ := ops.History(ctx, "Gateway", "gw-1")
	fmt.Println(h[0].Type, h[0].Name, h[0].Actor)

	// No machine drives the history kinds: nothing acts on them.
	err := ops.Pause(ctx, history.KindFor("Gateway"), "gw-1", "")
	fmt.Println(errors.Is(err, oncall.ErrNotDriven))
	// Output:
	// Running Starting [deploy] paused by alice: database maintenance
	// operator pause alice
	// true
}

// A bulk action: preview the documents a selection selects, then act on
// them, at most ten a second, and read each one's outcome.
func ExampleClient_Bulk() {
	ctx := context.Background()
	b, _ := memory.New(memory.Config{Kinds: slices.Concat([]string{"Gateway"}, history.Kinds("Gateway"), registry.Kinds())})
	for _, key := range []string{"gw-1", "gw-2", "gw-3"} {
		team := "a"
		if key == "gw-3" {
			team = "b"
		}
		_, _ = b.Create(ctx, store.Document{Meta: store.Meta{Kind: "Gateway", Key: key, Labels: map[string]string{"team": team}}})
	}
	recordGatewayMachine(ctx, b) // as a running Manager does
	ops, _ := oncall.New(b, oncall.Config{Actor: "alice"})
	sel := oncall.Selection{Kind: "Gateway", Selector: store.MustParseSelector("team=a")}
	views, _ := ops.Select(ctx, sel)
	fmt.Println("would pause", len(views))
	res, _ := ops.Bulk(ctx, oncall.Bulk{
		Selection: sel,
		Action:    oncall.Action{Name: oncall.ActionPause, Reason: "team a's maintenance"},
		Rate:      oncall.Rate{N: 10, Per: time.Second},
		Preview:   oncall.PreviewOf(views),
	})
	for _, o := range res.Outcomes {
		fmt.Println(o.Key, o.Err)
	}
	// Output:
	// would pause 2
	// gw-1 <nil>
	// gw-2 <nil>
}

// A program serves the on-call API; a terminal reaches it with a Remote
// (as tend --server does), with the token.
func ExampleNewServer() {
	ctx := context.Background()
	b, _ := memory.New(memory.Config{Kinds: slices.Concat([]string{"Gateway"}, history.Kinds("Gateway"), registry.Kinds())})
	doc, _ := b.Create(ctx, store.Document{Meta: store.Meta{Kind: "Gateway", Key: "gw-1"}})
	doc.Status = []byte(`{"phase":"Started","target":"Running"}`)
	_, _ = b.UpdateStatus(ctx, doc)

	api, _ := oncall.NewServer(oncall.ServerConfig{Store: b, Prefix: "/oncall/", Token: "s3cret"})
	srv := httptest.NewServer(api) // in a program: beside its probes or console
	defer srv.Close()

	remote, _ := oncall.NewRemote(oncall.RemoteConfig{URL: srv.URL + "/oncall/", Token: "s3cret", Actor: "alice"})
	v, err := remote.Get(ctx, "Gateway", "gw-1")
	fmt.Println(v.Meta.Key, v.Phase, err)
	err = remote.Pause(ctx, "Gateway", "gw-1", "look")
	fmt.Println(errors.Is(err, oncall.ErrForbidden)) // no Authorize: read-only
	_, err = remote.Get(ctx, "Gateway", "gw-2")
	fmt.Println(errors.Is(err, store.ErrNotFound))
	// Output:
	// gw-1 Started <nil>
	// true
	// true
}

// recordGatewayMachine records a machine for the kind Gateway in b, as a
// Manager running a driver of gateways does: actions apply only to the
// documents of a kind a machine drives.
func recordGatewayMachine(ctx context.Context, b store.Backend) {
	m, err := statemachine.New(statemachine.Definition[string, string]{
		Name: "Gateway", States: []string{"Running"}, Initial: "Starting",
		Phases: []statemachine.PhaseSpec[string]{
			{Phase: "Starting", Type: statemachine.Transitional, Steps: []string{"deploy"},
				Completion: []statemachine.Require{statemachine.Is("serving")}, Then: "Started"},
			{Phase: "Started"},
			{Phase: "Fault", Type: statemachine.Fault},
		},
		Settled: []statemachine.Settle[string, string]{{State: "Running", Phase: "Started"}},
	})
	if err != nil {
		panic(err)
	}
	if _, err := registry.Put(ctx, b, registry.Entry{Kind: "Gateway", Machine: m.Descriptor()}); err != nil {
		panic(err)
	}
}
