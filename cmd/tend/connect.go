package main

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/tendhq/tend/registry"

	"github.com/jackc/pgx/v5/pgxpool"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/tendhq/tend/backends/etcd"
	"github.com/tendhq/tend/backends/kube"
	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/backends/postgres"
	"github.com/tendhq/tend/history"
	"github.com/tendhq/tend/oncall"
	"github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// conn is a connection to a store, with the machines its controllers
// registered.
type conn struct {
	client api
	// regs are the registrations, by kind.
	regs map[string]registry.Entry
	// kinds are the registered kinds, sorted.
	kinds []string
	// shared is false for a memory snapshot: no controller sees the
	// command's writes until the snapshot is loaded again.
	shared bool
	// save writes the actions done back where they came from (the
	// snapshot file), or is nil.
	save  func() error
	close func()
}

// opener opens a backend holding kinds.
type opener struct {
	open   func(ctx context.Context, kinds []string) (store.Backend, error)
	base   []string // the kinds to open with before the registrations are read
	shared bool
	save   func(b store.Backend) error
	close  func()
}

// connect opens the store o names, reads its registrations and opens it
// again with their kinds.
func (o *options) connect(ctx context.Context) (*conn, error) {
	if o.server != "" {
		return o.connectServer(ctx)
	}
	spec := o.store
	if spec == "" {
		spec = os.Getenv("TEND_STORE")
	}
	op, err := parseStore(ctx, spec)
	if err != nil {
		return nil, err
	}
	// A store that does not answer (etcd retries unreachable endpoints
	// until its context ends) fails the command instead of hanging it.
	cctx, cancel := context.WithTimeout(ctx, o.connectTimeout)
	defer cancel()
	c, err := op.connect(cctx, o.actorName())
	if err != nil {
		op.close()
		return nil, err
	}
	return c, nil
}

func (op *opener) connect(ctx context.Context, actor string) (*conn, error) {
	slices.Sort(op.base)
	op.base = slices.Compact(op.base)
	first, err := op.open(ctx, op.base)
	if err != nil {
		return nil, err
	}
	client, err := oncall.New(first, oncall.Config{Actor: actor})
	if err != nil {
		return nil, err
	}
	regs, err := client.Registrations(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the registered machines: %w", err)
	}
	c := &conn{regs: map[string]registry.Entry{}, shared: op.shared, close: op.close}
	kinds := slices.Clone(op.base)
	for _, r := range regs {
		c.regs[r.Kind] = r
		c.kinds = append(c.kinds, r.Kind)
		kinds = append(kinds, r.Kind, history.KindFor(r.Kind))
	}
	slices.Sort(c.kinds)
	slices.Sort(kinds)
	kinds = slices.Compact(kinds)
	b, err := op.open(ctx, kinds)
	if err != nil {
		return nil, err
	}
	if c.client, err = oncall.New(b, oncall.Config{Actor: actor}); err != nil {
		return nil, err
	}
	if op.save != nil {
		c.save = func() error { return op.save(b) }
	}
	return c, nil
}

// registration returns the registration of kind, and its machine.
func (c *conn) registration(kind string) (registry.Entry, *statemachine.Machine[string, string], error) {
	r, ok := c.regs[kind]
	if !ok {
		known := "no kind is registered"
		if len(c.kinds) > 0 {
			known = "registered: " + strings.Join(c.kinds, ", ")
		}
		return r, nil, fmt.Errorf("%w: %s (%s)", registry.ErrUnregistered, kind, known)
	}
	m, err := r.Build()
	return r, m, err
}

// parseStore reads a --store value.
func parseStore(ctx context.Context, spec string) (*opener, error) {
	scheme, rest, _ := strings.Cut(spec, ":")
	switch {
	case spec == "":
		return nil, usagef("no store: set --store or TEND_STORE (memory:PATH, postgres://…, etcd://HOST:PORT, kube)")
	case scheme == "memory":
		return openMemory(rest)
	case scheme == "postgres" || scheme == "postgresql":
		return openPostgres(ctx, spec)
	case scheme == "etcd":
		return openEtcd(spec)
	case scheme == "kube":
		return openKube(rest)
	}
	return nil, usagef("--store %q: unknown kind of store (memory:PATH, postgres://…, etcd://HOST:PORT, kube)", spec)
}

// openMemory reads a snapshot file written by memory.Store.SnapshotFile.
// Actions are written back to the file, atomically.
func openMemory(path string) (*opener, error) {
	if path == "" {
		return nil, usagef("--store memory:PATH: the path of a snapshot file is missing")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	kinds, err := memory.SnapshotKinds(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &opener{
		base: slices.Concat(registry.Kinds(), kinds),
		open: func(_ context.Context, kinds []string) (store.Backend, error) {
			s, err := memory.New(memory.Config{Kinds: kinds, Restore: bytes.NewReader(data)})
			if err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			return s, nil
		},
		save:  func(b store.Backend) error { return b.(*memory.Store).SnapshotFile(path) },
		close: func() {},
	}, nil
}

// openPostgres connects to PostgreSQL. The query parameter schema names the
// store's schema; the others go to the driver.
func openPostgres(ctx context.Context, spec string) (*opener, error) {
	u, err := url.Parse(spec)
	if err != nil {
		return nil, usagef("--store: %v", err)
	}
	q := u.Query()
	schema := q.Get("schema")
	q.Del("schema")
	u.RawQuery = q.Encode()
	pool, err := pgxpool.New(ctx, u.String())
	if err != nil {
		return nil, usagef("--store: %v", err)
	}
	// Opening a store creates its schema; tend only reads one that exists,
	// so that a mistyped name is not a new, empty store.
	if schema == "" {
		schema = postgres.DefaultSchema
	}
	var exists bool
	if err := pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM information_schema.schemata WHERE schema_name = $1)", schema).Scan(&exists); err != nil {
		pool.Close()
		return nil, err
	}
	if !exists {
		pool.Close()
		return nil, fmt.Errorf("%w: PostgreSQL has no schema %q (set another with ?schema=)", errNoStore, schema)
	}
	return &opener{
		base:   registry.Kinds(),
		shared: true,
		open: func(ctx context.Context, kinds []string) (store.Backend, error) {
			return postgres.New(ctx, postgres.Config{Pool: pool, Schema: schema, Kinds: kinds, NoMigrate: true})
		},
		close: pool.Close,
	}, nil
}

// openEtcd connects to etcd: etcd://HOST:PORT[,HOST:PORT…][/PREFIX].
func openEtcd(spec string) (*opener, error) {
	hosts, prefix, _ := strings.Cut(strings.TrimPrefix(spec, "etcd://"), "/")
	if hosts == "" || !strings.HasPrefix(spec, "etcd://") {
		return nil, usagef("--store %q: want etcd://HOST:PORT[,HOST:PORT…][/PREFIX]", spec)
	}
	if prefix != "" {
		prefix = "/" + strings.TrimSuffix(prefix, "/") + "/"
	}
	var endpoints []string
	for _, h := range strings.Split(hosts, ",") {
		endpoints = append(endpoints, "http://"+h)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, err
	}
	return &opener{
		base:   registry.Kinds(),
		shared: true,
		open: func(_ context.Context, kinds []string) (store.Backend, error) {
			return etcd.New(etcd.Config{Client: cli, Prefix: prefix, Kinds: kinds})
		},
		close: func() { cli.Close() },
	}, nil
}

// openKube connects to the API server of a kubeconfig (the default one
// when path is empty), in its context's namespace.
func openKube(path string) (*opener, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if path != "" {
		rules.ExplicitPath = path
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
	rest, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("--store kube: %w", err)
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, fmt.Errorf("--store kube: %w", err)
	}
	return &opener{
		base:   registry.Kinds(),
		shared: true,
		open: func(_ context.Context, kinds []string) (store.Backend, error) {
			return kube.New(kube.Config{REST: rest, Kinds: kinds, Namespace: ns})
		},
		close: func() {},
	}, nil
}
