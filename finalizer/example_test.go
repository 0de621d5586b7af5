package finalizer_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/finalizer"
	"github.com/tendhq/tend/store"
)

// A reconciler gates its work on the finalizer: the first pass adds it, later
// passes apply, and after deletion was requested the cleanup runs and the
// document goes.
func ExampleEnsure() {
	ctx := context.Background()
	s, _ := memory.New(memory.Config{Kinds: []string{"Bucket"}})
	_, _ = s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Bucket", Key: "photos"}})

	reconcile := func() {
		doc, err := s.Get(ctx, "Bucket", "photos")
		if err != nil {
			fmt.Println("gone:", errors.Is(err, store.ErrNotFound))
			return
		}
		obj := finalizer.NewDocument(s, doc)
		state, err := finalizer.Ensure(ctx, obj, "example.com/empty-bucket",
			func(context.Context) error { fmt.Println("apply: create the bucket"); return nil },
			func(context.Context) error { fmt.Println("cleanup: empty and remove the bucket"); return nil })
		d := obj.Document()
		fmt.Println(state, d.Meta.Finalizers, err)
	}

	reconcile()
	_ = s.Delete(ctx, "Bucket", "photos", store.DeleteOptions{})
	reconcile()
	reconcile()
	// Output:
	// apply: create the bucket
	// Present [example.com/empty-bucket] <nil>
	// cleanup: empty and remove the bucket
	// Finalizing [] <nil>
	// gone: true
}

// A failed cleanup leaves the document Terminating with its finalizer; the
// controller records the error where operators look, here printed.
func ExampleCleanupError() {
	ctx := context.Background()
	s, _ := memory.New(memory.Config{Kinds: []string{"Bucket"}})
	_, _ = s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Bucket", Key: "photos",
		Finalizers: []string{"example.com/empty-bucket"}}})
	_ = s.Delete(ctx, "Bucket", "photos", store.DeleteOptions{})

	doc, _ := s.Get(ctx, "Bucket", "photos")
	_, err := finalizer.Ensure(ctx, finalizer.NewDocument(s, doc), "example.com/empty-bucket", nil,
		func(context.Context) error { return errors.New("bucket has a legal hold") })

	var ce *finalizer.CleanupError
	if errors.As(err, &ce) {
		fmt.Println("condition Finalized=false:", ce.Error())
	}
	doc, _ = s.Get(ctx, "Bucket", "photos")
	fmt.Println(doc.Meta.Terminating(), doc.Meta.Finalizers)
	// Output:
	// condition Finalized=false: finalizer example.com/empty-bucket: cleanup failed: bucket has a legal hold
	// true [example.com/empty-bucket]
}
