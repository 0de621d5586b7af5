package infra_test

import (
	"context"
	"crypto/rand"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/examples/gateway/infra"
	"github.com/tendhq/tend/examples/gateway/platform"
	"github.com/tendhq/tend/examples/internal/servertest"
	"github.com/tendhq/tend/store"
)

func TestMain(m *testing.M) {
	// client-go keeps one cached HTTP/2 connection per API server for the
	// life of the process.
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*ClientConn).readLoop"))
}

// newPool opens a pool on the test server that scripts/test.sh starts and
// names in TEND_POSTGRES_URL. Without it the test fails in CI and is
// skipped elsewhere.
func newPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), servertest.Env(t, "TEND_POSTGRES_URL", "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// newPostgres returns a Postgres on the test server.
func newPostgres(t *testing.T) (*infra.Postgres, *pgxpool.Pool) {
	t.Helper()
	pool := newPool(t)
	p, err := infra.NewPostgres(infra.PostgresConfig{Pool: pool})
	if err != nil {
		t.Fatal(err)
	}
	return p, pool
}

// suffix returns a name part no other test run uses.
func suffix() string { return strings.ToLower(rand.Text()[:10]) }

// catalog reports whether the database and the role exist, and whether the
// role owns the database.
func catalog(t *testing.T, pool *pgxpool.Pool, db infra.Database) (database, role, owns bool) {
	t.Helper()
	err := pool.QueryRow(t.Context(), `SELECT
		EXISTS (SELECT 1 FROM pg_database WHERE datname = $1),
		EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $2),
		EXISTS (SELECT 1 FROM pg_database d JOIN pg_roles r ON d.datdba = r.oid
			WHERE d.datname = $1 AND r.rolname = $2)`, db.Name, db.User).Scan(&database, &role, &owns)
	if err != nil {
		t.Fatal(err)
	}
	return database, role, owns
}

func TestPostgres(t *testing.T) {
	p, pool := newPostgres(t)
	ctx := t.Context()
	db := infra.Database{Name: "gw_" + suffix()}
	db.User = db.Name + "_user"
	t.Cleanup(func() { p.DropDatabase(context.Background(), db) })

	exists := func(want bool) {
		t.Helper()
		ok, err := p.DatabaseExists(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		if ok != want {
			t.Fatalf("DatabaseExists = %v, want %v", ok, want)
		}
	}
	exists(false)

	// Concurrent and repeated creations all succeed and create one of each.
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range cap(errs) {
		wg.Go(func() { errs <- p.EnsureDatabase(ctx, db) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent EnsureDatabase: %v", err)
		}
	}
	if err := p.EnsureDatabase(ctx, db); err != nil {
		t.Fatalf("EnsureDatabase again: %v", err)
	}
	if database, role, owns := catalog(t, pool, db); !database || !role || !owns {
		t.Fatalf("after EnsureDatabase: database %v, role %v, owned by the role %v", database, role, owns)
	}
	exists(true)

	// A session connected to the database does not stop the drop.
	cfg := pool.Config().ConnConfig.Copy()
	cfg.Database = db.Name
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())

	for range 2 {
		if err := p.DropDatabase(ctx, db); err != nil {
			t.Fatalf("DropDatabase: %v", err)
		}
	}
	if database, role, _ := catalog(t, pool, db); database || role {
		t.Fatalf("after DropDatabase: database %v, role %v", database, role)
	}
	exists(false)

	// A role left alone by a drop interrupted before it is still reported.
	if _, err := pool.Exec(ctx, "CREATE ROLE "+pgx.Identifier{db.User}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	exists(true)
	if err := p.DropDatabase(ctx, db); err != nil {
		t.Fatal(err)
	}
	exists(false)
}

func TestPostgresInvalid(t *testing.T) {
	if _, err := infra.NewPostgres(infra.PostgresConfig{}); !errors.Is(err, infra.ErrInvalid) {
		t.Fatalf("NewPostgres without a pool: got %v, want ErrInvalid", err)
	}
	p, pool := newPostgres(t)
	for _, db := range []infra.Database{
		{Name: "", User: "u"},
		{Name: "d", User: ""},
		{Name: `x"; DROP DATABASE postgres; --`, User: "u"},
		{Name: "d", User: "Upper"},
		{Name: "1d", User: "u"},
		{Name: strings.Repeat("d", 64), User: "u"},
		{Name: "d-e", User: "u"},
	} {
		t.Run(db.Name+"/"+db.User, func(t *testing.T) {
			for op, call := range map[string]func() error{
				"ensure": func() error { return p.EnsureDatabase(t.Context(), db) },
				"drop":   func() error { return p.DropDatabase(t.Context(), db) },
				"exists": func() error { _, err := p.DatabaseExists(t.Context(), db); return err },
			} {
				if err := call(); !errors.Is(err, infra.ErrInvalid) {
					t.Errorf("%s: got %v, want ErrInvalid", op, err)
				}
			}
		})
	}
	var n int
	if err := pool.QueryRow(t.Context(), "SELECT count(*) FROM pg_database WHERE datname = 'postgres'").Scan(&n); err != nil || n != 1 {
		t.Fatalf("database postgres: count %d, %v", n, err)
	}
}

// TestPostgresCascade runs a gateway through its creation and deletion
// cascade with its database on the test server: the Database step creates
// the database and its role, and deletion drops both.
func TestPostgresCascade(t *testing.T) {
	dbs, pool := newPostgres(t)
	st, err := memory.New(memory.Config{Kinds: platform.Kinds()})
	if err != nil {
		t.Fatal(err)
	}
	sim, err := infra.NewSim(infra.SimConfig{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := platform.New(platform.Config{Store: st, Cluster: sim, Databases: dbs, Poll: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}()

	id := "acme-" + suffix()
	db := databaseOf(id)
	t.Cleanup(func() { dbs.DropDatabase(context.Background(), db) })
	gws := p.Collections().Gateways
	waitFor := func(what string, ok func(*platform.Gateway, error) bool) {
		t.Helper()
		for gw, err := gws.Get(ctx, id); !ok(gw, err); gw, err = gws.Get(ctx, id) {
			if ctx.Err() != nil {
				t.Fatalf("timed out waiting for %s (last: %+v, %v)", what, gw, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	if _, err := p.CreateGateway(ctx, id, platform.GatewaySpec{State: platform.Running}); err != nil {
		t.Fatal(err)
	}
	waitFor("Started", func(gw *platform.Gateway, err error) bool {
		return err == nil && gw.Status.Phase == platform.GatewayStarted
	})
	if database, role, owns := catalog(t, pool, db); !database || !role || !owns {
		t.Fatalf("gateway Started: database %v, role %v, owned by the role %v", database, role, owns)
	}

	if _, err := p.SetGatewayState(ctx, id, platform.Deleted); err != nil {
		t.Fatal(err)
	}
	waitFor("removal", func(_ *platform.Gateway, err error) bool { return errors.Is(err, store.ErrNotFound) })
	if database, role, _ := catalog(t, pool, db); database || role {
		t.Fatalf("gateway removed: database %v, role %v", database, role)
	}
}
