package postgres_test

import (
	"errors"
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
