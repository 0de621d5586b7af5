package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tendhq/tend/backends/postgres"
	"github.com/tendhq/tend/store"
)

// TestNoMigrate: a store opened with NoMigrate never changes the database;
// it refuses a missing or older schema with ErrSchemaOutdated and a newer
// one with ErrSchemaTooNew, and opens one at its version.
func TestNoMigrate(t *testing.T) {
	ctx := t.Context()
	pool := newPool(t)
	schema := newSchema(t, pool)
	open := func() error {
		s, err := postgres.New(ctx, postgres.Config{Pool: pool, Schema: schema, Kinds: testKinds, NoMigrate: true})
		if err == nil {
			s.Close()
		}
		return err
	}
	if err := open(); !errors.Is(err, postgres.ErrSchemaOutdated) {
		t.Fatalf("missing schema: got %v, want ErrSchemaOutdated", err)
	}
	var exists bool
	if err := pool.QueryRow(ctx, "SELECT EXISTS (SELECT FROM pg_namespace WHERE nspname = $1)", schema).Scan(&exists); err != nil || exists {
		t.Fatalf("NoMigrate created the schema (%v)", err)
	}
	if err := postgres.MigrateTo(ctx, pool, schema, 2); err != nil {
		t.Fatal(err)
	}
	if err := open(); !errors.Is(err, postgres.ErrSchemaOutdated) {
		t.Fatalf("schema at version 2: got %v, want ErrSchemaOutdated", err)
	}
	if err := postgres.Migrate(ctx, pool, schema); err != nil {
		t.Fatal(err)
	}
	if err := open(); err != nil {
		t.Fatalf("current schema: %v", err)
	}
	if _, err := pool.Exec(ctx, "UPDATE "+schema+".schema_version SET version = $1", postgres.SchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	if err := open(); !errors.Is(err, postgres.ErrSchemaTooNew) {
		t.Fatalf("newer schema: got %v, want ErrSchemaTooNew", err)
	}
}

// TestMigrateFromVersion2 writes documents as version 2 did (the counter
// row gave revisions), migrates, and expects them readable, their history
// watchable, and new revisions after theirs.
func TestMigrateFromVersion2(t *testing.T) {
	ctx := t.Context()
	pool := newPool(t)
	schema := newSchema(t, pool)
	if err := postgres.MigrateTo(ctx, pool, schema, 2); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`UPDATE {s}.revision SET value = 7`,
		`INSERT INTO {s}.documents (kind, key, uid, revision, generation, created_at, updated_at, spec)
			VALUES ('Widget', 'old', 'u1', 7, 1, now(), now(), '{"n":1}')`,
		`INSERT INTO {s}.changes (revision, type, kind, key, uid, doc_revision, generation, created_at, updated_at, spec)
			VALUES (7, 1, 'Widget', 'old', 'u1', 7, 1, now(), now(), '{"n":1}')`,
	} {
		if _, err := pool.Exec(ctx, replaceSchema(q, schema)); err != nil {
			t.Fatal(err)
		}
	}
	s := newStore(t, postgres.Config{Pool: pool, Schema: schema})
	d, err := s.Get(ctx, "Widget", "old")
	if err != nil || d.Meta.Revision != 7 {
		t.Fatalf("after migrating: %+v, %v", d.Meta, err)
	}
	d.Status = []byte(`"new"`)
	if d, err = s.UpdateStatus(ctx, d); err != nil || d.Meta.Revision != 8 {
		t.Fatalf("first write after migrating: revision %d, %v; want 8", d.Meta.Revision, err)
	}
	w, err := s.Watch(ctx, "Widget", 6)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, want := range []int64{7, 8} {
		e, err := w.Next(ctx)
		if err != nil || e.Revision != want {
			t.Fatalf("watch: event at %d (%v), want %d", e.Revision, err, want)
		}
	}
	if res, err := s.List(ctx, "Widget", store.ListOptions{}); err != nil || res.Revision != 8 {
		t.Fatalf("list revision %d (%v), want 8", res.Revision, err)
	}
}

// replaceSchema puts schema for {s} in q.
func replaceSchema(q, schema string) string { return strings.ReplaceAll(q, "{s}", schema) }

// TestLookupsUseThePrimaryKey: on a fresh schema, where the planner has no
// statistics, the generic plans of a document look-up and of the status
// writes' statement reach the document through the whole primary key, not
// through an index that matches only its kind (which read every document
// of the kind on each look-up).
func TestLookupsUseThePrimaryKey(t *testing.T) {
	ctx := t.Context()
	pool := newPool(t)
	schema := newSchema(t, pool)
	s := newStore(t, postgres.Config{Pool: pool, Schema: schema})
	for i := range 50 {
		if _, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: fmt.Sprintf("w%d", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SET plan_cache_mode = force_generic_plan"); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(context.Background(), "RESET plan_cache_mode") //nolint:errcheck // the pool's next user
	for _, c := range []struct {
		name, query string
		args        []any
	}{
		{"look-up", `SELECT key FROM {s}.documents WHERE kind = $1 AND key = $2 FOR UPDATE`, []any{"Widget", "w7"}},
		{"status writes' join", `SELECT c.key FROM unnest($1::text[], $2::text[]) AS i(kind, key)
			JOIN {s}.documents c ON c.kind = i.kind AND c.key = i.key`, []any{[]string{"Widget"}, []string{"w7"}}},
	} {
		var plan strings.Builder
		rows, err := conn.Query(ctx, "EXPLAIN "+replaceSchema(c.query, schema), c.args...)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan.WriteString(line + "\n")
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(plan.String(), "documents_pkey") || strings.Contains(plan.String(), "Filter") {
			t.Errorf("%s: the generic plan does not find the document by its whole primary key:\n%s", c.name, plan.String())
		}
	}
}

// TestStatisticsFollowGrowth: the store refreshes the documents table's
// statistics as the table grows (every session replans its statements
// when they change), without waiting for autovacuum, switched off here on
// the table.
func TestStatisticsFollowGrowth(t *testing.T) {
	ctx := t.Context()
	pool := newPool(t)
	schema := newSchema(t, pool)
	s := newStore(t, postgres.Config{Pool: pool, Schema: schema, Logger: nopLogger})
	if _, err := pool.Exec(ctx, replaceSchema(`ALTER TABLE {s}.documents SET (autovacuum_enabled = false)`, schema)); err != nil {
		t.Fatal(err)
	}
	counted := func() (relpages, pages int64) {
		t.Helper()
		err := pool.QueryRow(ctx, `SELECT relpages, pg_relation_size(oid) / current_setting('block_size')::bigint
			FROM pg_class WHERE oid = $1::regclass`, schema+".documents").Scan(&relpages, &pages)
		if err != nil {
			t.Fatal(err)
		}
		return relpages, pages
	}
	for i := range 3000 {
		if _, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: fmt.Sprintf("w%d", i)},
			Spec: []byte(`{"padding":"` + strings.Repeat("x", 100) + `"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	// The store looks every 1,024 revisions, and analyzes when the
	// table has doubled: the count is at least half the size it had at
	// the last look, at least a quarter of today's.
	if relpages, pages := counted(); relpages == 0 || 4*relpages < pages {
		t.Fatalf("after 3,000 creates the table has %d pages and its statistics count %d", pages, relpages)
	}
}
