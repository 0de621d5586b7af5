package postgres_test

import (
	"context"
	"crypto/rand"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tendhq/tend/backends/postgres"
	"github.com/tendhq/tend/store"
	"github.com/tendhq/tend/store/storetest"
)

// TestStress runs storetest's stress property with a restart in the
// middle: every session of the store (its pool's and its watches') is
// terminated, as a server restart would, and the revision sequence jumps
// as a crash makes it jump (PostgreSQL logs a sequence 32 values ahead).
// Terminating sessions rather than restarting the server keeps the shared
// test server up for the other packages testing on it.
func TestStress(t *testing.T) {
	storetest.Stress(t, storetest.StressConfig{
		New: func(t *testing.T, kinds []string) store.Backend {
			pool, app := appPool(t)
			schema := newSchema(t, pool)
			s := newStore(t, postgres.Config{Pool: pool, Schema: schema, Kinds: kinds})
			restart = func(t *testing.T) error { return restartSessions(t.Context(), newPool(t), app, schema) }
			return s
		},
		Restart: func(t *testing.T) error { return restart(t) },
	})
}

// restart is the restart hook of the store TestStress made last.
var restart func(t *testing.T) error

// appPool opens a pool on the test server whose sessions carry an
// application name of their own, returned, so that a test can terminate
// them all.
func appPool(t testing.TB) (*pgxpool.Pool, string) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(serverURL(t))
	if err != nil {
		t.Fatal(err)
	}
	app := "tend_test_" + strings.ToLower(rand.Text())[:12]
	cfg.ConnConfig.RuntimeParams["application_name"] = app
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool, app
}

// restartSessions terminates every session named app, through admin, and
// makes schema's revision sequence skip 32 values.
func restartSessions(ctx context.Context, admin *pgxpool.Pool, app, schema string) error {
	if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`, app); err != nil {
		return err
	}
	seq := pgx.Identifier{schema, "revisions"}.Sanitize()
	_, err := admin.Exec(ctx, `SELECT setval($1, nextval($1) + 32)`, seq)
	return err
}
