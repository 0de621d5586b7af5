package main

import (
	"context"
	"crypto/rand"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tendhq/tend/backends/postgres"
	"github.com/tendhq/tend/internal/servertest"
)

// postgresURL returns the URL of the test server, TEND_POSTGRES_URL.
// Without it the test fails in CI and is skipped elsewhere.
func postgresURL(t testing.TB) string {
	t.Helper()
	return servertest.Env(t, "TEND_POSTGRES_URL", "postgres")
}

// postgresStore returns a store on a schema of its own of the test server,
// dropped when the test ends, and its --store value.
func postgresStore(t testing.TB) (*postgres.Store, string) {
	t.Helper()
	return postgresStoreOf(t, testKinds)
}

// postgresStoreOf is postgresStore, with the kinds given.
func postgresStoreOf(t testing.TB, kinds []string) (*postgres.Store, string) {
	t.Helper()
	ctx := context.Background()
	u := postgresURL(t)
	pool, err := pgxpool.New(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	schema := "t_" + strings.ToLower(rand.Text())
	t.Cleanup(func() {
		if _, err := pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	s, err := postgres.New(ctx, postgres.Config{Pool: pool, Schema: schema, Kinds: kinds})
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	q := parsed.Query()
	q.Set("schema", schema)
	parsed.RawQuery = q.Encode()
	return s, parsed.String()
}

func TestReadPostgres(t *testing.T) {
	s, spec := postgresStore(t)
	produce(t, s)
	golden(t, "read", transcript(t, spec, readCommands...))
}

func TestRoundTripPostgres(t *testing.T) {
	s, spec := postgresStore(t)
	produce(t, s)
	roundTrip(t, s, spec)
}

func TestWatchPostgres(t *testing.T) {
	s, spec := postgresStore(t)
	produce(t, s)
	testWatch(t, s, spec)
}

func TestActionsPostgres(t *testing.T) {
	s, spec := postgresStore(t)
	produce(t, s)
	golden(t, "actions", transcript(t, spec, actionCommands...))
}

// TestServedPostgres checks the commands against a kind its controller
// serves: --wait sees the controller carry out or refuse each command, and
// a finalizer stays unless forced.
func TestServedPostgres(t *testing.T) {
	s, spec := postgresStore(t)
	produce(t, s)
	run := startController(t, s, true)
	defer run.stop()
	waitServed(t, spec)
	golden(t, "served", transcript(t, spec,
		[]string{"retry", "Widget", "w-failing", "--yes", "--wait", "--timeout", "30s"},
		[]string{"move", "Widget", "w-fault", "Ready", "--yes", "--wait", "--timeout", "30s"},
		[]string{"get", "Widget", "w-fault"},
		[]string{"request", "Widget", "w-down", "rebuild", "--yes", "--wait", "--timeout", "30s"},
		[]string{"pause", "Widget", "w-ready", "--yes"},
		[]string{"request", "Widget", "w-ready", "rebuild", "--yes", "--wait", "--timeout", "1s"},
		[]string{"resume", "Widget", "w-ready", "--yes"},
		[]string{"remove-finalizer", "Widget", "w-ready", "tend.dev/machine", "--yes"},
		[]string{"remove-finalizer", "Widget", "w-ready", "tend.dev/machine", "--yes", "--force"},
	))
}

// TestNoSchemaPostgres: tend does not create the schema a mistyped name
// would.
func TestNoSchemaPostgres(t *testing.T) {
	u, err := url.Parse(postgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("schema", "t_no_such_schema")
	u.RawQuery = q.Encode()
	r := tend(t, "--store", u.String(), "get")
	if r.code != exitNotFound || !strings.Contains(r.stderr, `no schema "t_no_such_schema"`) {
		t.Errorf("get on a schema that does not exist: exit %d, %q", r.code, r.stderr)
	}
}
