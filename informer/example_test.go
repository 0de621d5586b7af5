package informer_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/informer"
	"github.com/tendhq/tend/store"
)

// An informer lists a kind, then follows its changes: its cache answers
// reads, and each subscriber receives every change with the document
// before and after it.
func ExampleInformer() {
	ctx, cancel := context.WithCancel(context.Background())
	s, _ := memory.New(memory.Config{Kinds: []string{"Widget"}})
	_, _ = s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: "a", Labels: map[string]string{"env": "prod"}},
		Spec: []byte(`{"size":1}`)})

	inf, _ := informer.New(s, "Widget", informer.Config{})
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	_ = inf.WaitForSync(ctx)

	sub, snapshot := inf.Subscribe()
	defer sub.Close()
	fmt.Println("cached:", len(snapshot), "document")

	a, _ := s.Get(ctx, "Widget", "a")
	a.Spec = []byte(`{"size":2}`)
	_, _ = s.UpdateSpec(ctx, a)
	e, _ := sub.Next(ctx)
	fmt.Printf("%v %s: %s -> %s\n", e.Type, e.Document.Meta.Key, e.Old.Spec, e.Document.Spec)

	prod, _, _ := inf.List(store.ListOptions{Selector: store.MustParseSelector("env=prod")})
	fmt.Println("env=prod:", len(prod))

	cancel()
	fmt.Println("run:", <-done)
	// Output:
	// cached: 1 document
	// Modified a: {"size":1} -> {"size":2}
	// env=prod: 1
	// run: <nil>
}

// A factory hands every consumer of a kind the same informer, so a process
// holds one watch per kind however many controllers follow it.
func ExampleFactory() {
	ctx, cancel := context.WithCancel(context.Background())
	s, _ := memory.New(memory.Config{Kinds: []string{"Widget"}})
	f, _ := informer.NewFactory(s, informer.FactoryConfig{})

	first, _ := f.For("Widget")
	second, _ := f.For("Widget")
	fmt.Println("same informer:", first == second)

	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	_ = f.WaitForSync(ctx)
	_, _ = s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: "a"}})

	// A Factory is also a ListWatcher whose List reads the cache.
	for {
		res, _ := f.List(ctx, "Widget", store.ListOptions{})
		if len(res.Items) == 1 {
			fmt.Println("listed from the cache:", res.Items[0].Meta.Key)
			break
		}
	}
	cancel()
	fmt.Println("run:", <-done)
	// Output:
	// same informer: true
	// listed from the cache: a
	// run: <nil>
}

// Indexes computed by functions of the user's are kept up to date with the
// cache.
func ExampleInformer_AddIndex() {
	ctx, cancel := context.WithCancel(context.Background())
	s, _ := memory.New(memory.Config{Kinds: []string{"Widget"}})
	for _, k := range []string{"team-a/x", "team-a/y", "team-b/z"} {
		_, _ = s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: k}})
	}
	inf, _ := informer.New(s, "Widget", informer.Config{})
	_ = inf.AddIndex("team", func(d *store.Document) []string {
		team, _, _ := strings.Cut(d.Meta.Key, "/")
		return []string{team}
	})
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	_ = inf.WaitForSync(ctx)

	docs, _ := inf.ByIndex("team", "team-a")
	for _, d := range docs {
		fmt.Println(d.Meta.Key)
	}
	cancel()
	<-done
	// Output:
	// team-a/x
	// team-a/y
}
