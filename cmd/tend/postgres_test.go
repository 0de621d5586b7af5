package main

import (
	"context"
	"crypto/rand"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tendhq/tend/backends/postgres"
)

// postgresURL returns the URL of the test server, TEND_POSTGRES_URL.
// Without it the test fails in CI and is skipped elsewhere.
func postgresURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("TEND_POSTGRES_URL")
	if u == "" {
		msg := "TEND_POSTGRES_URL is not set: run `make test` (or source scripts/servers/postgres.sh) to start a PostgreSQL server"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return u
}

// postgresStore returns a store on a schema of its own of the test server,
// dropped when the test ends, and its --store value.
func postgresStore(t testing.TB) (*postgres.Store, string) {
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
	s, err := postgres.New(ctx, postgres.Config{Pool: pool, Schema: schema, Kinds: testKinds})
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
