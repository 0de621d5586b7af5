package postgres_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/tendhq/tend/backends/postgres"
	"github.com/tendhq/tend/internal/servertest"
	"github.com/tendhq/tend/manager/managertest"
	"github.com/tendhq/tend/store"
	"github.com/tendhq/tend/store/storetest"
)

func TestMain(m *testing.M) {
	managertest.ReplicaMain(failover)
	// pgxpool's background health checks stop when the pools close; the
	// leak check runs after every test's cleanup.
	goleak.VerifyTestMain(m)
}

// serverURL returns the URL of the test server that scripts/test.sh starts.
// Without it the test fails in CI and is skipped elsewhere.
func serverURL(t testing.TB) string {
	t.Helper()
	return servertest.Env(t, "TEND_POSTGRES_URL", "postgres")
}

// newPool opens a pool on the test server, closed when the test ends.
func newPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), serverURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// newSchema returns a schema name no other test uses, dropped when the test
// ends.
func newSchema(t testing.TB, pool *pgxpool.Pool) string {
	t.Helper()
	schema := "t_" + strings.ToLower(rand.Text())
	t.Cleanup(func() {
		drop := "DROP SCHEMA IF EXISTS " + pgx.Identifier{schema}.Sanitize() + " CASCADE"
		_, err := pool.Exec(context.Background(), drop)
		if err != nil {
			// A test that terminates sessions may leave one dead in the
			// pool, which the pool learns only by using it.
			_, err = pool.Exec(context.Background(), drop)
		}
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return schema
}

// testKinds are the kinds the tests other than the conformance suite use.
var testKinds = []string{"Widget", "Gadget"}

// nopLogger asks newStore for a store that does not log.
var nopLogger = zap.NewNop()

// newStore returns a store on its own schema of the test server.
func newStore(t testing.TB, cfg postgres.Config) *postgres.Store {
	t.Helper()
	if cfg.Pool == nil {
		cfg.Pool = newPool(t)
	}
	if cfg.Schema == "" {
		cfg.Schema = newSchema(t, cfg.Pool)
	}
	if cfg.Kinds == nil {
		cfg.Kinds = testKinds
	}
	if cfg.Logger == nil {
		cfg.Logger = zaptest.NewLogger(t)
	} else if cfg.Logger == nopLogger {
		cfg.Logger = nil
	}
	s, err := postgres.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func TestConformance(t *testing.T) {
	pool := newPool(t)
	storetest.Run(t, func(t *testing.T, kinds []string) store.Backend {
		return newStore(t, postgres.Config{Pool: pool, Kinds: kinds})
	})
}

func TestMigrate(t *testing.T) {
	ctx := t.Context()
	pool := newPool(t)
	schema := newSchema(t, pool)
	version := func() int {
		t.Helper()
		var v int
		if err := pool.QueryRow(ctx, "SELECT version FROM "+schema+".schema_version").Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}

	t.Run("concurrent first runs", func(t *testing.T) {
		errs := make(chan error, 4)
		for range cap(errs) {
			go func() { errs <- postgres.Migrate(ctx, pool, schema) }()
		}
		for range cap(errs) {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		if v := version(); v != postgres.SchemaVersion {
			t.Fatalf("schema version %d, want %d", v, postgres.SchemaVersion)
		}
	})

	t.Run("idempotent and keeps data", func(t *testing.T) {
		s := newStore(t, postgres.Config{Pool: pool, Schema: schema})
		created, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: "a"}, Spec: []byte(`{"n":1}`)})
		if err != nil {
			t.Fatal(err)
		}
		if err := postgres.Migrate(ctx, pool, schema); err != nil {
			t.Fatal(err)
		}
		again := newStore(t, postgres.Config{Pool: pool, Schema: schema})
		got, err := again.Get(ctx, "Widget", "a")
		if err != nil {
			t.Fatal(err)
		}
		if got.Meta.UID != created.Meta.UID || got.Meta.Revision != created.Meta.Revision {
			t.Fatalf("after a second migration got %+v, want %+v", got.Meta, created.Meta)
		}
		if v := version(); v != postgres.SchemaVersion {
			t.Fatalf("schema version %d, want %d", v, postgres.SchemaVersion)
		}
	})

	t.Run("newer schema refused", func(t *testing.T) {
		if _, err := pool.Exec(ctx, "UPDATE "+schema+".schema_version SET version = $1", postgres.SchemaVersion+1); err != nil {
			t.Fatal(err)
		}
		err := postgres.Migrate(ctx, pool, schema)
		if !errors.Is(err, postgres.ErrSchemaTooNew) {
			t.Fatalf("Migrate on a newer schema: got %v, want ErrSchemaTooNew", err)
		}
		_, err = postgres.New(ctx, postgres.Config{Pool: pool, Schema: schema, Kinds: testKinds})
		if !errors.Is(err, postgres.ErrSchemaTooNew) {
			t.Fatalf("New on a newer schema: got %v, want ErrSchemaTooNew", err)
		}
		if v := version(); v != postgres.SchemaVersion+1 {
			t.Fatalf("refused migration changed the version to %d", v)
		}
	})
}

func TestConfig(t *testing.T) {
	pool := newPool(t)
	for _, tc := range []struct {
		name string
		cfg  postgres.Config
	}{
		{"bad kind", postgres.Config{Pool: pool, Kinds: []string{"widget"}}},
		{"duplicate kind", postgres.Config{Pool: pool, Kinds: []string{"Widget", "Widget"}}},
		{"no pool or URL", postgres.Config{Kinds: []string{"Widget"}}},
		{"bad schema", postgres.Config{Pool: pool, Kinds: []string{"Widget"}, Schema: "Robert'); DROP"}},
		{"negative history", postgres.Config{Pool: pool, Kinds: []string{"Widget"}, History: -1}},
		{"negative poll", postgres.Config{Pool: pool, Kinds: []string{"Widget"}, PollInterval: -time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := postgres.New(t.Context(), tc.cfg); err == nil {
				t.Fatal("New accepted the config")
			}
		})
	}
}

// A store made with no kinds serves none until AddKinds gives them, which
// takes only well-formed kinds and keeps those it holds.
func TestAddKinds(t *testing.T) {
	ctx := t.Context()
	s := newStore(t, postgres.Config{Kinds: []string{}})
	if _, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: "a"}}); !errors.Is(err, store.ErrUnknownKind) {
		t.Fatalf("Create of a kind not added: %v, want ErrUnknownKind", err)
	}
	if err := s.AddKinds("widget"); err == nil {
		t.Fatal("AddKinds took a malformed kind")
	}
	if err := s.AddKinds("Widget", "Gadget", "Widget"); err != nil {
		t.Fatal(err)
	}
	if got, want := s.Kinds(), []string{"Gadget", "Widget"}; !slices.Equal(got, want) {
		t.Fatalf("Kinds() = %v, want %v", got, want)
	}
	if _, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Gadget", Key: "a"}}); err != nil {
		t.Fatalf("Create of an added kind: %v", err)
	}
}

// TestHistory checks that writes discard history older than Config.History
// revisions, and that a watch from before it fails with ErrCompacted.
func TestHistory(t *testing.T) {
	ctx := t.Context()
	s := newStore(t, postgres.Config{History: 4})
	d, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 11 {
		d.Status = fmt.Appendf(nil, "%d", i)
		if d, err = s.UpdateStatus(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	// Revision 12 pruned everything up to revision 8.
	if _, err := s.Watch(ctx, "Widget", 7); !errors.Is(err, store.ErrCompacted) {
		t.Fatalf("watch from pruned history: got %v, want ErrCompacted", err)
	}
	w, err := s.Watch(ctx, "Widget", 8)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for want := int64(9); want <= d.Meta.Revision; want++ {
		e, err := w.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if e.Revision != want {
			t.Fatalf("event at revision %d, want %d", e.Revision, want)
		}
	}
}
