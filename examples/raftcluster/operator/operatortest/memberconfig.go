package operatortest

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tendhq/tend/examples/raftcluster/operator"
)

// TestMemberConfig checks the contract of [operator.MemberConfig] on the
// implementation newConfig returns, a fresh one for each subtest: Create
// leaves an existing configuration of the same cluster as it is, Update
// rewrites it and creates it when missing, and a configuration left by an
// earlier cluster of the same key (another uid) is not read as the new
// cluster's, and is taken over by its writes. The clusters it names need
// not exist; their keys are made unique per call, so an implementation on
// a shared server may be reused.
func TestMemberConfig(t *testing.T, newConfig func(t *testing.T) operator.MemberConfig) {
	t.Helper()
	run := time.Now().UnixNano() % 1e9
	var n atomic.Int64
	ref := func(name, uid string) operator.ClusterRef {
		return operator.ClusterRef{Key: fmt.Sprintf("team/%s-%d-%d", name, run, n.Add(1)), UID: uid}
	}
	const (
		three = "m1=http://127.0.0.1:1,m2=http://127.0.0.1:2,m3=http://127.0.0.1:3"
		four  = three + ",m4=http://127.0.0.1:4"
	)
	ctx := context.Background()

	t.Run("missing", func(t *testing.T) {
		mc := newConfig(t)
		if got, err := mc.InitialCluster(ctx, ref("c", "uid-1")); !errors.Is(err, operator.ErrNoMemberConfig) {
			t.Fatalf("InitialCluster of a cluster never configured = %q, %v; want ErrNoMemberConfig", got, err)
		}
	})

	t.Run("create is idempotent", func(t *testing.T) {
		mc := newConfig(t)
		c := ref("c", "uid-1")
		must(t, mc.Create(ctx, c, three))
		want(t, mc, c, three)
		// A second Create, as a bootstrap step run again after a crash,
		// succeeds and leaves the recorded membership alone.
		must(t, mc.Create(ctx, c, four))
		want(t, mc, c, three)
	})

	t.Run("update", func(t *testing.T) {
		mc := newConfig(t)
		c := ref("c", "uid-1")
		must(t, mc.Create(ctx, c, three))
		must(t, mc.Update(ctx, c, four))
		want(t, mc, c, four)
		must(t, mc.Update(ctx, c, four))
		want(t, mc, c, four)
		must(t, mc.Update(ctx, c, three))
		want(t, mc, c, three)
	})

	t.Run("update creates", func(t *testing.T) {
		mc := newConfig(t)
		c := ref("c", "uid-1")
		must(t, mc.Update(ctx, c, four))
		want(t, mc, c, four)
	})

	t.Run("earlier cluster of the same key", func(t *testing.T) {
		mc := newConfig(t)
		old := ref("c", "uid-old")
		c := operator.ClusterRef{Key: old.Key, UID: "uid-new"}
		must(t, mc.Create(ctx, old, three))
		if got, err := mc.InitialCluster(ctx, c); !errors.Is(err, operator.ErrNoMemberConfig) {
			t.Fatalf("InitialCluster of a new cluster reads the earlier one's: %q, %v", got, err)
		}
		must(t, mc.Create(ctx, c, four))
		want(t, mc, c, four)
		if got, err := mc.InitialCluster(ctx, old); !errors.Is(err, operator.ErrNoMemberConfig) {
			t.Fatalf("InitialCluster of the earlier cluster after the new one took over = %q, %v", got, err)
		}
		// Update takes over too.
		must(t, mc.Update(ctx, old, three))
		want(t, mc, old, three)
	})

	t.Run("clusters are independent", func(t *testing.T) {
		mc := newConfig(t)
		a, b := ref("a", "uid-a"), ref("b", "uid-b")
		must(t, mc.Create(ctx, a, three))
		must(t, mc.Create(ctx, b, four))
		want(t, mc, a, three)
		want(t, mc, b, four)
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// want checks that mc holds initial for c.
func want(t *testing.T, mc operator.MemberConfig, c operator.ClusterRef, initial string) {
	t.Helper()
	got, err := mc.InitialCluster(context.Background(), c)
	if err != nil {
		t.Fatalf("InitialCluster(%s): %v", c.Key, err)
	}
	if got != initial {
		t.Fatalf("InitialCluster(%s) = %q, want %q", c.Key, got, initial)
	}
}
