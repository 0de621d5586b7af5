package memory_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/store"
)

// The memory store is a complete backend: documents, watches and leases in
// one process.
func Example() {
	ctx := context.Background()
	s, err := memory.New(memory.Config{Kinds: []string{"ApiGateway"}})
	if err != nil {
		panic(err)
	}
	doc, err := s.Create(ctx, store.Document{
		Meta: store.Meta{Kind: "ApiGateway", Key: "team-a/gw-1", Finalizers: []string{"example.com/dns"}},
		Spec: []byte(`{"state":"Running"}`),
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("revision", doc.Meta.Revision, "generation", doc.Meta.Generation)

	// Deleting a document with a finalizer only marks it Terminating.
	if err := s.Delete(ctx, "ApiGateway", "team-a/gw-1", store.DeleteOptions{}); err != nil {
		panic(err)
	}
	doc, _ = s.Get(ctx, "ApiGateway", "team-a/gw-1")
	fmt.Println("terminating:", doc.Meta.Terminating())

	// Removing the last finalizer removes it.
	doc.Meta.Finalizers = nil
	if _, err := s.UpdateSpec(ctx, doc); err != nil {
		panic(err)
	}
	_, err = s.Get(ctx, "ApiGateway", "team-a/gw-1")
	fmt.Println("removed:", errors.Is(err, store.ErrNotFound))

	// Leases carry fences that grow with each new holder.
	a, _ := s.AcquireLease(ctx, "tend/leader", "replica-1", 15*time.Second)
	_, err = s.AcquireLease(ctx, "tend/leader", "replica-2", 15*time.Second)
	fmt.Println("held:", errors.Is(err, store.ErrLeaseHeld))
	_ = s.ReleaseLease(ctx, a)
	b, _ := s.AcquireLease(ctx, "tend/leader", "replica-2", 15*time.Second)
	fmt.Println("fences:", a.Fence, b.Fence)
	// Output:
	// revision 1 generation 1
	// terminating: true
	// removed: true
	// held: true
	// fences: 1 2
}

// A snapshot lets a program stop and start again where it was. Use
// Store.SnapshotFile to write one to a file atomically.
func ExampleStore_Snapshot() {
	ctx := context.Background()
	s, err := memory.New(memory.Config{Kinds: []string{"ApiGateway"}})
	if err != nil {
		panic(err)
	}
	if _, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "ApiGateway", Key: "gw-1"}}); err != nil {
		panic(err)
	}
	var saved bytes.Buffer
	if err := s.Snapshot(&saved); err != nil {
		panic(err)
	}

	restored, err := memory.New(memory.Config{Kinds: []string{"ApiGateway"}, Restore: &saved})
	if err != nil {
		panic(err)
	}
	res, _ := restored.List(ctx, "ApiGateway", store.ListOptions{})
	fmt.Println(len(res.Items), "document at revision", res.Revision)

	_, err = memory.New(memory.Config{Kinds: []string{"ApiGateway"}, Restore: bytes.NewReader([]byte(`{"format":`))})
	fmt.Println(errors.Is(err, memory.ErrBadSnapshot))
	// Output:
	// 1 document at revision 1
	// true
}
