package operator_test

import (
	"context"
	"crypto/rand"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tendhq/tend/backends/postgres"
	"github.com/tendhq/tend/examples/internal/servertest"
	"github.com/tendhq/tend/examples/raftcluster/operator"
	"github.com/tendhq/tend/store"
)

// postgresStore is the PostgreSQL server of TEND_POSTGRES_URL, which
// scripts/servers/postgres.sh exports, on a schema of the test's own
// (dropped when it ends), with the member configuration in a document of
// the same store. Without the server the test is skipped, except under CI,
// where it fails.
func postgresStore(t *testing.T) (store.Backend, operator.MemberConfig) {
	t.Helper()
	url := servertest.Env(t, "TEND_POSTGRES_URL", "postgres")
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	schema := "raftcluster_" + strings.ToLower(rand.Text())
	b, err := postgres.New(ctx, postgres.Config{Pool: pool, Schema: schema,
		Kinds: []string{operator.KindCluster, operator.KindMember, operator.KindMemberConfig}})
	if err != nil {
		pool.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		b.Close()
		if _, err := pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
		pool.Close()
	})
	mc, err := operator.NewDocumentMemberConfig(b)
	if err != nil {
		t.Fatal(err)
	}
	return b, mc
}
