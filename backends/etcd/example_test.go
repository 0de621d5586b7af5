package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tendhq/tend/backends/etcd"
	"github.com/tendhq/tend/store"
)

// A store on an etcd cluster: documents with revision preconditions, a
// watch from a list's revision, and a write fenced by a lease. (The
// endpoints here are those of the test's embedded cluster.)
func Example() {
	ctx := context.Background()
	cli, err := clientv3.New(clientv3.Config{Endpoints: shared.endpoints(), DialTimeout: 5 * time.Second})
	if err != nil {
		panic(err)
	}
	defer cli.Close()
	s, err := etcd.New(etcd.Config{Client: cli, Prefix: "/example/", Kinds: []string{"ApiGateway"}})
	if err != nil {
		panic(err)
	}

	gw, err := s.Create(ctx, store.Document{
		Meta: store.Meta{Kind: "ApiGateway", Key: "team-a/gw-1", Labels: map[string]string{"team": "a"}},
		Spec: []byte(`{"state":"Started"}`),
	})
	if err != nil {
		panic(err)
	}
	list, err := s.List(ctx, "ApiGateway", store.ListOptions{Selector: store.MustParseSelector("team=a")})
	if err != nil {
		panic(err)
	}
	fmt.Println("listed:", len(list.Items), list.Items[0].Meta.Key)
	w, err := s.Watch(ctx, "ApiGateway", list.Revision)
	if err != nil {
		panic(err)
	}
	defer w.Close()

	// The controller holds the gateway's lease and writes under its fence.
	l, err := s.AcquireLease(ctx, "shard/0", "replica-1", 10*time.Second)
	if err != nil {
		panic(err)
	}
	fenced := store.WithFence(ctx, store.Fence{Lease: l.Name, Token: l.Fence})
	gw.Status = []byte(`{"phase":"Creating"}`)
	if gw, err = s.UpdateStatus(fenced, gw); err != nil {
		panic(err)
	}
	e, err := w.Next(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("watched:", e.Type, e.Document.Meta.Key, string(e.Document.Status))

	// A stale revision conflicts; a released lease fences its writes off.
	stale := gw
	stale.Meta.Revision--
	_, err = s.UpdateStatus(ctx, stale)
	fmt.Println("stale write conflicts:", errors.Is(err, store.ErrConflict))
	if err := s.ReleaseLease(ctx, l); err != nil {
		panic(err)
	}
	_, err = s.UpdateStatus(fenced, gw)
	fmt.Println("write after release fenced:", errors.Is(err, store.ErrFenced))
	// Output:
	// listed: 1 team-a/gw-1
	// watched: Modified team-a/gw-1 {"phase":"Creating"}
	// stale write conflicts: true
	// write after release fenced: true
}
