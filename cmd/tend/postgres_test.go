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
	golden(t, "served", transcript(t, spec, servedCommands...))
}

// servedCommands act on documents whose controller runs.
var servedCommands = [][]string{
	{"retry", "Widget", "w-failing", "--yes", "--wait", "--timeout", "30s"},
	{"move", "Widget", "w-fault", "Ready", "--yes", "--wait", "--timeout", "30s"},
	{"get", "Widget", "w-fault"},
	{"request", "Widget", "w-down", "rebuild", "--yes", "--wait", "--timeout", "30s"},
	{"pause", "Widget", "w-ready", "--yes"},
	{"request", "Widget", "w-ready", "rebuild", "--yes", "--wait", "--timeout", "1s"},
	{"resume", "Widget", "w-ready", "--yes"},
	{"remove-finalizer", "Widget", "w-ready", "tend.dev/machine", "--yes"},
	{"remove-finalizer", "Widget", "w-ready", "tend.dev/machine", "--yes", "--force"},
}

// TestServedServerPostgres is TestServedPostgres through the on-call API
// of a program whose controller runs: --wait waits on the server, and the
// errors keep their exit codes across the wire.
func TestServedServerPostgres(t *testing.T) {
	s, spec := postgresStore(t)
	produce(t, s)
	run := startController(t, s, true)
	defer run.stop()
	waitServed(t, spec)
	url := apiServer(t, s, true, nil)
	golden(t, "served", transcriptWith(t, tokenEnv, []string{"--server", url}, url, servedCommands...))
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
