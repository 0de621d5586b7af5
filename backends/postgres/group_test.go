package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tendhq/tend/backends/postgres"
	"github.com/tendhq/tend/store"
)

// blockGroup starts a status write to a document that another session has
// locked, so that it leads a group commit that waits, and returns a
// function releasing the lock and waiting for that write. Writes made
// meanwhile queue for the next group.
func blockGroup(t *testing.T, s *postgres.Store, pool *pgxpool.Pool, schema string) func() {
	t.Helper()
	ctx := t.Context()
	d, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: "leader"}})
	if err != nil {
		t.Fatal(err)
	}
	blocker, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A test failing before it releases the lock must not hang.
	t.Cleanup(func() { blocker.Rollback(context.Background()) }) //nolint:errcheck // released already, usually
	if _, err := blocker.Exec(ctx, "SELECT 1 FROM "+schema+".documents WHERE key = 'leader' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		d.Status = []byte(`"leader"`)
		_, err := s.UpdateStatus(ctx, d)
		done <- err
	}()
	waitUntil(t, func() bool {
		var n int
		err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'
			AND query LIKE '%"' || $1 || '".documents%'`, schema).Scan(&n)
		return err == nil && n > 0
	})
	return func() {
		t.Helper()
		if err := blocker.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatalf("the leading write: %v", err)
		}
	}
}

// waitUntil polls cond until it holds, or fails the test after 20 seconds.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 20 s")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestGroupResults queues a group mixing good, conflicting, fenced,
// missing and invalid writes and two writes to one document, and checks
// that each caller gets the result it would get alone, and that the good
// ones committed in one transaction.
func TestGroupResults(t *testing.T) {
	ctx := t.Context()
	pool := newPool(t)
	schema := newSchema(t, pool)
	s := newStore(t, postgres.Config{Pool: pool, Schema: schema})
	docs := map[string]store.Document{}
	for _, k := range []string{"good", "conflict", "fenced", "twice"} {
		d, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: k}})
		if err != nil {
			t.Fatal(err)
		}
		docs[k] = d
	}
	lease, err := s.AcquireLease(ctx, "shard", "me", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	stale := store.WithFence(ctx, store.Fence{Lease: "shard", Token: lease.Fence + 1})
	held := store.WithFence(ctx, store.Fence{Lease: "shard", Token: lease.Fence})

	release := blockGroup(t, s, pool, schema)
	type write struct {
		name string
		ctx  context.Context
		doc  store.Document
		want error // nil: written
	}
	with := func(k string, status string, rev int64) store.Document {
		d := docs[k]
		d.Status = []byte(status)
		if rev != 0 {
			d.Meta.Revision = rev
		}
		return d
	}
	writes := []write{
		{"good, fenced by a held lease", held, with("good", `"a"`, 0), nil},
		{"stale revision", ctx, with("conflict", `"b"`, docs["conflict"].Meta.Revision-1), store.ErrConflict},
		{"lost lease", stale, with("fenced", `"c"`, 0), store.ErrFenced},
		{"missing document", ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: "none", Revision: 1}, Status: []byte(`"d"`)}, store.ErrNotFound},
		{"missing document, lost lease", stale, store.Document{Meta: store.Meta{Kind: "Widget", Key: "none"}, Status: []byte(`"d"`)}, store.ErrFenced},
		{"first of two", ctx, with("twice", `"e"`, 0), nil},
		{"second of two, same revision", ctx, with("twice", `"f"`, 0), store.ErrConflict},
		{"invalid key", ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: ""}, Status: []byte(`"g"`)}, store.ErrInvalid},
	}
	results := make([]chan error, len(writes))
	revs := make([]int64, len(writes))
	queued := 0
	for i, w := range writes {
		results[i] = make(chan error, 1)
		go func() {
			got, err := s.UpdateStatus(w.ctx, w.doc)
			revs[i] = got.Meta.Revision
			results[i] <- err
		}()
		if w.want != store.ErrInvalid {
			queued++
			waitUntil(t, func() bool { return postgres.Queued(s) == queued })
		}
	}
	release()
	for i, w := range writes {
		err := <-results[i]
		if w.want == nil && err != nil || w.want != nil && !errors.Is(err, w.want) {
			t.Errorf("%s: got %v, want %v", w.name, err, w.want)
		}
		var se *store.Error
		if err != nil && (!errors.As(err, &se) || se.Key != w.doc.Meta.Key) {
			t.Errorf("%s: error %v does not name the document", w.name, err)
		}
	}
	for _, k := range []string{"conflict", "fenced"} {
		if got, err := s.Get(ctx, "Widget", k); err != nil || got.Status != nil {
			t.Errorf("%s: stored status %q (%v), want none", k, got.Status, err)
		}
	}
	got, err := s.Get(ctx, "Widget", "twice")
	if err != nil || string(got.Status) != `"e"` {
		t.Errorf("twice: stored status %q (%v), want the first write's", got.Status, err)
	}
	var txs int
	if err := pool.QueryRow(ctx, "SELECT count(DISTINCT xmin::text) FROM "+schema+".documents WHERE key IN ('good', 'twice')").Scan(&txs); err != nil {
		t.Fatal(err)
	}
	if txs != 1 || revs[0] == revs[5] {
		t.Errorf("the good writes committed in %d transactions at revisions %d and %d, want one group, two revisions", txs, revs[0], revs[5])
	}
}

// TestGroupAckAfterCommit makes the commit of a group fail after its
// statement returned its rows (a deferred constraint trigger refuses one
// status at commit): no write of the group may be acknowledged, and none
// stored.
func TestGroupAckAfterCommit(t *testing.T) {
	ctx := t.Context()
	pool := newPool(t)
	schema := newSchema(t, pool)
	s := newStore(t, postgres.Config{Pool: pool, Schema: schema})
	if _, err := pool.Exec(ctx, fmt.Sprintf(`
		CREATE FUNCTION %[1]s.refuse() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.status = '"refused"'::bytea THEN RAISE EXCEPTION 'refused at commit'; END IF;
			RETURN NULL;
		END $$;
		CREATE CONSTRAINT TRIGGER refuse AFTER UPDATE ON %[1]s.documents
			DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION %[1]s.refuse();`, schema)); err != nil {
		t.Fatal(err)
	}
	a, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: "b"}})
	if err != nil {
		t.Fatal(err)
	}
	// Alone, then in a group with a write that would succeed alone.
	b.Status = []byte(`"refused"`)
	if _, err := s.UpdateStatus(ctx, b); err == nil {
		t.Fatal("a write whose commit failed was acknowledged")
	}
	release := blockGroup(t, s, pool, schema)
	a.Status = []byte(`"fine"`)
	errs := make(chan error, 2)
	for i, d := range []store.Document{a, b} {
		go func() {
			_, err := s.UpdateStatus(ctx, d)
			errs <- err
		}()
		waitUntil(t, func() bool { return postgres.Queued(s) == i+1 })
	}
	release()
	for range 2 {
		if err := <-errs; err == nil {
			t.Error("a write of a group whose commit failed was acknowledged")
		}
	}
	for _, k := range []string{"a", "b"} {
		if got, err := s.Get(ctx, "Widget", k); err != nil || got.Status != nil {
			t.Errorf("%s: stored status %q (%v) after a failed commit", k, got.Status, err)
		}
	}
}

// TestGroupServerKilled terminates the store's sessions 30 times while writers write in groups, each to a document of its own. Every
// acknowledged write must be stored; a write that failed definitely must
// be absent; one whose outcome is unknown may be either, and retrying it
// is safe: it conflicts if it committed.
func TestGroupServerKilled(t *testing.T) {
	ctx := t.Context()
	pool, app := appPool(t)
	schema := newSchema(t, pool)
	s := newStore(t, postgres.Config{Pool: pool, Schema: schema, Logger: nopLogger})
	admin := newPool(t)

	const writers, writes = 6, 80
	stop := make(chan struct{})
	killed := make(chan int)
	go func() {
		n := 0
		defer func() { killed <- n }()
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(20+7*(n%5)) * time.Millisecond):
			}
			if n == 30 {
				<-stop
				return
			}
			if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`, app); err == nil {
				n++
			}
		}
	}()
	type outcome struct{ acked, definite, unknown, retried int }
	results := make(chan outcome, writers)
	errs := make(chan error, writers)
	for i := range writers {
		go func() {
			var o outcome
			key := fmt.Sprintf("w%d", i)
			for {
				_, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: key}})
				if err == nil || errors.Is(err, store.ErrAlreadyExists) {
					break
				}
				if !errors.Is(err, postgres.ErrUnavailable) {
					errs <- err
					return
				}
			}
			d := getSurely(ctx, s, key)
			for j := range writes {
				next := d
				next.Status = fmt.Appendf(nil, `{"n":%d}`, j)
				got, err := s.UpdateStatus(ctx, next)
				stored := getSurely(ctx, s, key)
				committed := string(stored.Status) == string(next.Status)
				switch {
				case err == nil:
					o.acked++
					if !committed || got.Meta.Revision != stored.Meta.Revision {
						errs <- fmt.Errorf("%s write %d acknowledged at %d but not stored (%s at %d)", key, j, got.Meta.Revision, stored.Status, stored.Meta.Revision)
						return
					}
				case errors.Is(err, postgres.ErrCommitUnknown):
					o.unknown++
					// Retrying is safe: it conflicts if the write committed.
					for {
						_, rerr := s.UpdateStatus(ctx, next)
						if committed && rerr != nil && !errors.Is(rerr, store.ErrConflict) && !errors.Is(rerr, postgres.ErrUnavailable) {
							errs <- fmt.Errorf("%s write %d: retry of a committed write: %v", key, j, rerr)
							return
						}
						if committed && rerr == nil {
							errs <- fmt.Errorf("%s write %d: a committed write was written again", key, j)
							return
						}
						if rerr == nil || errors.Is(rerr, store.ErrConflict) {
							break
						}
					}
					o.retried++
				default:
					o.definite++
					if committed {
						errs <- fmt.Errorf("%s write %d failed definitely (%v) but is stored", key, j, err)
						return
					}
				}
				d = getSurely(ctx, s, key)
			}
			results <- o
		}()
	}
	var total outcome
	for range writers {
		select {
		case err := <-errs:
			close(stop)
			<-killed
			t.Fatal(err)
		case o := <-results:
			total.acked += o.acked
			total.definite += o.definite
			total.unknown += o.unknown
			total.retried += o.retried
		}
	}
	close(stop)
	n := <-killed
	t.Logf("%d kills: %d writes acknowledged, %d failed definitely, %d unknown (retried)", n, total.acked, total.definite, total.unknown)
	if n == 0 || total.acked == 0 {
		t.Fatalf("the run tested nothing: %d kills, %+v", n, total)
	}
}

// getSurely reads the widget key, which exists, again until a read
// succeeds (sessions are being terminated) or ctx ends.
func getSurely(ctx context.Context, s *postgres.Store, key string) store.Document {
	for {
		d, err := s.Get(ctx, "Widget", key)
		if err == nil || ctx.Err() != nil {
			return d
		}
	}
}

// TestGroupKilledMidGroup terminates the session of a group while its
// statement waits for a lock, on every attempt: each write of the group
// fails with ErrUnavailable, an outcome known (the server reported the
// statement's end before any row), and none is stored; retried, each
// succeeds once.
func TestGroupKilledMidGroup(t *testing.T) {
	ctx := t.Context()
	pool := newPool(t)
	schema := newSchema(t, pool)
	s := newStore(t, postgres.Config{Pool: pool, Schema: schema, Logger: nopLogger})
	var docs []store.Document
	for _, k := range []string{"a", "b", "locked"} {
		d, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: k}})
		if err != nil {
			t.Fatal(err)
		}
		d.Status = []byte(`"new"`)
		docs = append(docs, d)
	}
	blocker, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Rollback(context.Background()) //nolint:errcheck // released below
	if _, err := blocker.Exec(ctx, "SELECT 1 FROM "+schema+".documents WHERE key = 'locked' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	release := blockGroup(t, s, pool, schema)
	errs := make(chan error, len(docs))
	for i, d := range docs {
		go func() {
			_, err := s.UpdateStatus(ctx, d)
			errs <- err
		}()
		waitUntil(t, func() bool { return postgres.Queued(s) == i+1 })
	}
	// A read of a rides on the same group.
	read := make(chan store.Document, 1)
	go func() {
		d, err := s.Get(ctx, "Widget", "a")
		if err != nil {
			t.Errorf("a read riding on a group killed on every attempt: %v (it reads again, alone)", err)
		}
		read <- d
	}()
	waitUntil(t, func() bool { return postgres.Queued(s) == len(docs)+1 })
	release() // the group of a, b, locked and the read now waits for the blocker
	killed := []int32{}
	for range 3 { // every attempt
		killWaiting(t, pool, schema, &killed)
	}
	for range docs {
		if err := <-errs; !errors.Is(err, postgres.ErrUnavailable) || errors.Is(err, postgres.ErrCommitUnknown) {
			t.Errorf("a write of a group killed on every attempt: got %v, want ErrUnavailable, outcome known", err)
		}
	}
	if d := <-read; d.Status != nil {
		t.Errorf("the read returned status %q, of a write that never committed", d.Status)
	}
	if err := blocker.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		if got, err := s.Get(ctx, "Widget", d.Meta.Key); err != nil || got.Status != nil {
			t.Errorf("%s: stored %q (%v) after a write that failed", d.Meta.Key, got.Status, err)
		}
		if _, err := s.UpdateStatus(ctx, d); err != nil {
			t.Errorf("%s: retry: %v", d.Meta.Key, err)
		}
		if _, err := s.UpdateStatus(ctx, d); !errors.Is(err, store.ErrConflict) {
			t.Errorf("%s: second retry: got %v, want ErrConflict", d.Meta.Key, err)
		}
	}
}

// TestGroupReadsRide checks that a Get and a watch's read that find a group
// committing wait for it and ride on the next group, and see what the
// group before them committed, and that a write queued beside them in
// that group is acknowledged as usual.
func TestGroupReadsRide(t *testing.T) {
	ctx := t.Context()
	pool := newPool(t)
	schema := newSchema(t, pool)
	s := newStore(t, postgres.Config{Pool: pool, Schema: schema})
	other, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: "other"}})
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Watch(ctx, "Widget", other.Meta.Revision)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	release := blockGroup(t, s, pool, schema)

	got := make(chan store.Document, 1)
	go func() {
		d, err := s.Get(ctx, "Widget", "leader")
		if err != nil {
			t.Error(err)
		}
		got <- d
	}()
	waitUntil(t, func() bool { return postgres.Queued(s) == 1 })
	events := make(chan store.Event, 2)
	go func() {
		for range 2 { // the leader's creation, then its status
			e, err := w.Next(ctx)
			if err != nil {
				t.Error(err)
			}
			events <- e
		}
	}()
	waitUntil(t, func() bool { return postgres.Queued(s) == 2 })
	wrote := make(chan error, 1)
	go func() {
		other.Status = []byte(`"beside"`)
		_, err := s.UpdateStatus(ctx, other)
		wrote <- err
	}()
	waitUntil(t, func() bool { return postgres.Queued(s) == 3 })
	select {
	case <-got:
		t.Fatal("a read returned while the group before it was still committing")
	case <-events:
		t.Fatal("a watch read while the group before it was still committing")
	default:
	}

	release()
	if d := <-got; string(d.Status) != `"leader"` {
		t.Errorf("the riding read returned status %q, want the leading write's", d.Status)
	}
	<-events
	if e := <-events; e.Document.Meta.Key != "leader" || string(e.Document.Status) != `"leader"` {
		t.Errorf("the riding watch read %s %q, want the leading write", e.Document.Meta.Key, e.Document.Status)
	}
	if err := <-wrote; err != nil {
		t.Errorf("the write beside the reads: %v", err)
	}
	if d, err := s.Get(ctx, "Widget", "other"); err != nil || string(d.Status) != `"beside"` {
		t.Errorf("the write beside the reads stored %q (%v)", d.Status, err)
	}
}
