package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tendhq/tend/backends/etcd"
	"github.com/tendhq/tend/store"
)

// TestCompactedByEtcd: when etcd itself compacts (as its auto-compaction
// does), a watch from a discarded revision fails with store.ErrCompacted,
// and so does every later Next.
func TestCompactedByEtcd(t *testing.T) {
	s, cli := newStore(t, "Widget")
	ctx := t.Context()
	d, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: "k"}})
	if err != nil {
		t.Fatal(err)
	}
	from := d.Meta.Revision
	for i := range 3 {
		d.Status = fmt.Appendf(nil, `{"i":%d}`, i)
		if d, err = s.UpdateStatus(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cli.Compact(ctx, d.Meta.Revision); err != nil {
		t.Fatal(err)
	}
	w, err := s.Watch(ctx, "Widget", from)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for range 2 {
		if _, err := w.Next(ctx); !errors.Is(err, store.ErrCompacted) {
			t.Fatalf("next on a watch from compacted revision %d: got %v, want ErrCompacted", from, err)
		}
	}
	// From the compaction revision on, history is there.
	w2, err := s.Watch(ctx, "Widget", d.Meta.Revision-1)
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	e, err := w2.Next(ctx)
	if err != nil || e.Revision != d.Meta.Revision {
		t.Fatalf("watch from before the compaction revision: got %v at %d, want the change at %d", err, e.Revision, d.Meta.Revision)
	}
}

// TestPagesAtOneRevision: the pages of a list are read at the first page's
// revision, so a document created, changed or removed between pages does
// not show in later ones; once etcd compacts that revision, the next page
// fails with store.ErrCompacted.
func TestPagesAtOneRevision(t *testing.T) {
	s, cli := newStore(t, "Widget")
	ctx := t.Context()
	for _, key := range []string{"a", "b", "c", "d"} {
		if _, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: key}}); err != nil {
			t.Fatal(err)
		}
	}
	first, err := s.List(ctx, "Widget", store.ListOptions{Limit: 2})
	if err != nil || len(first.Items) != 2 || first.Continue == "" {
		t.Fatalf("first page: %+v, %v", first, err)
	}
	if err := s.Delete(ctx, "Widget", "c", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	d, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: "bb"}})
	if err != nil {
		t.Fatal(err)
	}
	next, err := s.List(ctx, "Widget", store.ListOptions{Limit: 2, Continue: first.Continue})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, d := range next.Items {
		keys = append(keys, d.Meta.Key)
	}
	if fmt.Sprint(keys) != "[c d]" || next.Continue != "" || next.Revision != first.Revision {
		t.Fatalf("second page: keys %q at %d, continue %q; want [c d] at %d, the snapshot of the first page", keys, next.Revision, next.Continue, first.Revision)
	}
	if _, err := cli.Compact(ctx, d.Meta.Revision); err != nil {
		t.Fatal(err)
	}
	if _, err := s.List(ctx, "Widget", store.ListOptions{Limit: 2, Continue: first.Continue}); !errors.Is(err, store.ErrCompacted) {
		t.Fatalf("page at a compacted revision: got %v, want ErrCompacted", err)
	}
}

// TestWatchExactlyOnce: concurrent writers make many changes; a watch read
// while they write and one read afterwards each deliver every change
// exactly once, in revision order, and nothing else. Index keys written in
// the same transactions do not show up as events.
func TestWatchExactlyOnce(t *testing.T) {
	s, _ := newStore(t, "Widget")
	ctx := t.Context()
	start, err := s.List(ctx, "Widget", store.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	live, err := s.Watch(ctx, "Widget", start.Revision)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	after, err := s.Watch(ctx, "Widget", start.Revision)
	if err != nil {
		t.Fatal(err)
	}
	defer after.Close()

	const writers, docs, updates = 4, 10, 40
	var mu sync.Mutex // guards want
	want := map[int64]store.EventType{}
	record := func(rev int64, typ store.EventType) {
		mu.Lock()
		want[rev] = typ
		mu.Unlock()
	}
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			errs <- func() error {
				for i := range docs {
					key := fmt.Sprintf("w%d/d%d", w, i)
					d, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: key,
						Labels: map[string]string{"writer": fmt.Sprint(w)}, Finalizers: []string{"example.com/keep"}}})
					if err != nil {
						return err
					}
					record(d.Meta.Revision, store.Added)
					for u := range updates / docs {
						d.Status = fmt.Appendf(nil, `{"u":%d}`, u)
						if d, err = s.UpdateStatus(ctx, d); err != nil {
							return err
						}
						record(d.Meta.Revision, store.Modified)
					}
					d.Meta.Labels = map[string]string{"writer": "done"}
					d.Meta.Finalizers = nil
					if d, err = s.UpdateSpec(ctx, d); err != nil {
						return err
					}
					record(d.Meta.Revision, store.Modified)
					if i%2 == 0 {
						if err := s.Delete(ctx, "Widget", key, store.DeleteOptions{Revision: d.Meta.Revision}); err != nil {
							return err
						}
					}
				}
				return nil
			}()
		})
	}
	type seen struct {
		revs    []int64
		deleted int
		err     error
	}
	read := func(w store.Watch, n int) seen {
		var out seen
		for range n {
			e, err := w.Next(ctx)
			if err != nil {
				out.err = err
				return out
			}
			if e.Type == store.Deleted {
				out.deleted++
				continue
			}
			out.revs = append(out.revs, e.Revision)
			mu.Lock()
			typ, ok := want[e.Revision]
			mu.Unlock()
			if ok && typ != e.Type {
				out.err = fmt.Errorf("event at %d is %v, want %v", e.Revision, e.Type, typ)
				return out
			}
		}
		return out
	}
	total := writers * docs * (1 + updates/docs + 1)
	deletes := writers * docs / 2
	liveSeen := make(chan seen, 1)
	go func() { liveSeen <- read(live, total+deletes) }()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for name, got := range map[string]seen{"live": <-liveSeen, "after": read(after, total+deletes)} {
		if got.err != nil {
			t.Fatalf("%s watch: %v", name, got.err)
		}
		if got.deleted != deletes {
			t.Errorf("%s watch: %d deletions, want %d", name, got.deleted, deletes)
		}
		if len(got.revs) != total {
			t.Fatalf("%s watch: %d events, want %d", name, len(got.revs), total)
		}
		for i, rev := range got.revs {
			if _, ok := want[rev]; !ok {
				t.Fatalf("%s watch: event at %d matches no write", name, rev)
			}
			if i > 0 && rev <= got.revs[i-1] {
				t.Fatalf("%s watch: revision %d after %d", name, rev, got.revs[i-1])
			}
		}
	}
}

// TestTooLargeForOneTransaction: a document whose index keys exceed what
// one etcd transaction carries is refused as invalid and nothing is
// written.
func TestTooLargeForOneTransaction(t *testing.T) {
	s, cli := newStore(t, "Widget")
	ctx := t.Context()
	labels := map[string]string{}
	for i := range 200 {
		labels[fmt.Sprintf("l%d", i)] = "v"
	}
	resp, err := cli.Get(ctx, "/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	before := resp.Count
	_, err = s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: "big", Labels: labels}})
	if !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("create with 200 labels: got %v, want ErrInvalid", err)
	}
	if _, err := s.Get(ctx, "Widget", "big"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get after refused create: got %v, want ErrNotFound", err)
	}
	if resp, err = cli.Get(ctx, "/", clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil || resp.Count != before {
		t.Fatalf("refused create left keys: %d then %d (%v)", before, resp.Count, err)
	}
}

// TestNewerFormatRefused: a document stored by a newer format is refused
// with a clear error matching store.ErrDecode.
func TestNewerFormatRefused(t *testing.T) {
	s, cli := newStore(t, "Widget")
	ctx := t.Context()
	d, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: "k"}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Get(ctx, "/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range resp.Kvs {
		if kv.ModRevision == d.Meta.Revision && len(kv.Value) > 0 {
			v := append([]byte{99}, kv.Value[1:]...)
			if _, err := cli.Put(context.Background(), string(kv.Key), string(v)); err != nil {
				t.Fatal(err)
			}
		}
	}
	_, err = s.Get(ctx, "Widget", "k")
	if !errors.Is(err, store.ErrDecode) {
		t.Fatalf("get of a newer format: got %v, want ErrDecode", err)
	}
	t.Log(err)
}

// TestRememberedDocumentIsChecked: a store that remembers a document at a
// revision another store has since written over does not write from its
// stale copy: each write with the old revision, one that would change
// nothing included, fails with ErrConflict and leaves the other store's
// write in place, and a write after a fresh read keeps it.
func TestRememberedDocumentIsChecked(t *testing.T) {
	ctx := t.Context()
	cli := shared.client(t)
	prefix := fmt.Sprintf("/test-%d/", prefixes.Add(1))
	open := func() *etcd.Store {
		s, err := etcd.New(etcd.Config{Client: cli, Prefix: prefix, Kinds: []string{"Widget"}})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b := open(), open()
	stale, err := a.Create(ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: "k"}, Spec: []byte(`{"n":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	d, err := b.Get(ctx, "Widget", "k")
	if err != nil {
		t.Fatal(err)
	}
	d.Spec = []byte(`{"n":2}`)
	if d, err = b.UpdateSpec(ctx, d); err != nil {
		t.Fatal(err)
	}
	up := stale
	up.Status = []byte(`{"phase":"Creating"}`)
	if _, err := a.UpdateStatus(ctx, up); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("status write from a stale revision: got %v, want ErrConflict", err)
	}
	// A write that would change nothing is checked too.
	if _, err := a.UpdateStatus(ctx, stale); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("unchanged status write from a stale revision: got %v, want ErrConflict", err)
	}
	if _, err := a.UpdateSpec(ctx, stale); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("unchanged spec write from a stale revision: got %v, want ErrConflict", err)
	}
	up = stale
	up.Spec = []byte(`{"n":3}`)
	if _, err := a.UpdateSpec(ctx, up); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("spec write from a stale revision: got %v, want ErrConflict", err)
	}
	if err := a.Delete(ctx, "Widget", "k", store.DeleteOptions{Revision: stale.Meta.Revision}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("delete from a stale revision: got %v, want ErrConflict", err)
	}
	got, err := a.Get(ctx, "Widget", "k")
	if err != nil {
		t.Fatal(err)
	}
	if got.Meta.Revision != d.Meta.Revision || string(got.Spec) != `{"n":2}` || got.Status != nil {
		t.Fatalf("after refused stale writes: revision %d, spec %s, status %q; want %d, {\"n\":2}, none",
			got.Meta.Revision, got.Spec, got.Status, d.Meta.Revision)
	}
	got.Status = []byte(`{"phase":"Created"}`)
	if got, err = a.UpdateStatus(ctx, got); err != nil {
		t.Fatal(err)
	}
	stored, err := b.Get(ctx, "Widget", "k")
	if err != nil {
		t.Fatal(err)
	}
	if stored.Meta.Revision != got.Meta.Revision || string(stored.Spec) != `{"n":2}` || string(stored.Status) != `{"phase":"Created"}` {
		t.Fatalf("after a status write from a fresh read: revision %d, spec %s, status %s; want %d, {\"n\":2}, {\"phase\":\"Created\"}",
			stored.Meta.Revision, stored.Spec, stored.Status, got.Meta.Revision)
	}
}
