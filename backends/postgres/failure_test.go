package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tendhq/tend/backends/postgres"
	"github.com/tendhq/tend/store"
)

// TestConnectionLoss terminates the server session of a write while the write
// waits inside its transaction. The write is retried on a new connection when
// the session is lost once, and fails with ErrUnavailable, having written
// nothing, when every attempt loses its session.
func TestConnectionLoss(t *testing.T) {
	for _, tc := range []struct {
		name  string
		kills int
		want  error
	}{
		{"lost once, retried", 1, nil},
		{"lost every attempt", 3, postgres.ErrUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			pool := newPool(t)
			schema := newSchema(t, pool)
			s := newStore(t, postgres.Config{Pool: pool, Schema: schema})
			d, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: "a"}})
			if err != nil {
				t.Fatal(err)
			}
			// Another session locks the document, so the write blocks in
			// its transaction after it began.
			blocker, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer blocker.Rollback(context.Background()) //nolint:errcheck // released below
			if _, err := blocker.Exec(ctx, "SELECT 1 FROM "+schema+".documents WHERE key = 'a' FOR UPDATE"); err != nil {
				t.Fatal(err)
			}
			result := make(chan error, 1)
			go func() {
				next := d
				next.Status = []byte(`{"phase":"Running"}`)
				_, err := s.UpdateStatus(ctx, next)
				result <- err
			}()
			killed := []int32{}
			for range tc.kills {
				killWaiting(t, pool, schema, &killed)
			}
			if err := blocker.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			err = <-result
			if !errors.Is(err, tc.want) && (tc.want != nil || err != nil) {
				t.Fatalf("update status: got %v, want %v", err, tc.want)
			}
			got, gerr := s.Get(ctx, "Widget", "a")
			if gerr != nil {
				t.Fatal(gerr)
			}
			var changes int
			if err := pool.QueryRow(ctx, "SELECT count(*) FROM "+schema+".changes").Scan(&changes); err != nil {
				t.Fatal(err)
			}
			if tc.want == nil {
				if got.Meta.Revision != d.Meta.Revision+1 || string(got.Status) != `{"phase":"Running"}` || changes != 2 {
					t.Fatalf("after a retried write: revision %d, status %q, %d changes; want %d, the new status, 2",
						got.Meta.Revision, got.Status, changes, d.Meta.Revision+1)
				}
				return
			}
			var se *store.Error
			if !errors.As(err, &se) || se.Op != "update status" || se.Kind != "Widget" || se.Key != "a" {
				t.Fatalf("error %v does not name the operation and document", err)
			}
			if got.Meta.Revision != d.Meta.Revision || got.Status != nil || changes != 1 {
				t.Fatalf("a failed write left revision %d, status %q, %d changes; want %d, none, 1",
					got.Meta.Revision, got.Status, changes, d.Meta.Revision)
			}
		})
	}
}

// killWaiting terminates a session waiting for a lock on schema's
// documents, once one waits, other than those in killed; it adds it there.
func killWaiting(t *testing.T, pool *pgxpool.Pool, schema string, killed *[]int32) {
	t.Helper()
	for {
		var pid *int32
		err := pool.QueryRow(t.Context(), `SELECT max(pid) FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE '%"' || $1 || '".documents%FOR UPDATE%' AND pid <> ALL($2)`,
			schema, *killed).Scan(&pid)
		if err != nil {
			t.Fatal(err)
		}
		if pid != nil {
			if _, err := pool.Exec(t.Context(), "SELECT pg_terminate_backend($1)", *pid); err != nil {
				t.Fatal(err)
			}
			*killed = append(*killed, *pid)
			return
		}
		select {
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		case <-time.After(5 * time.Millisecond): // poll for the waiting session
		}
	}
}
