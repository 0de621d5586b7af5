package bench

import (
	"context"
	"crypto/rand"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tendhq/tend/backends/postgres"
	"github.com/tendhq/tend/backends/postgres/postgrestest"
	"github.com/tendhq/tend/manager"
	"github.com/tendhq/tend/manager/managertest"
)

// The setup both sides of BenchmarkPostgresRiver share, pinned: 10,000
// items, 8 workers, pgxpool's default pool, and River's fetch cooldown at
// its 1 ms minimum.
const (
	pgItems          = 10_000
	pgWorkers        = 8
	riverCooldown    = time.Millisecond
	riverChainLength = 6
)

// BenchmarkPostgresRiver runs tend and River side by side on the
// PostgreSQL server TEND_POSTGRES_URL names, in one run:
//
//   - tend: 10,000 gateways driven Creating → Started by the State/Phase
//     driver (managertest.Converge: six status writes each), with one
//     replica, and with four replicas on one server (replicas-4: each drives
//     a quarter of the documents on a store and pool of its own).
//   - River: a 6-step chain per item, where each job inserts the next in
//     the transaction that completes it (JobCompleteTx), and single no-op
//     jobs.
//
// Items per second, CPU per status write (process plus server, from /proc)
// and transactions per status write (pg_stat_database's xact_commit) are
// reported. Start the server, with durable commits or without, then:
//
//	go test -run '^$' -bench PostgresRiver -benchtime 1x .
func BenchmarkPostgresRiver(b *testing.B) {
	url := os.Getenv("TEND_POSTGRES_URL")
	if url == "" {
		b.Fatal("TEND_POSTGRES_URL is not set: start scripts/servers/postgres.sh")
	}
	admin, err := pgxpool.New(b.Context(), url)
	if err != nil {
		b.Fatal(err)
	}
	defer admin.Close()
	cpu := postgrestest.ServerCPU(b, admin)
	b.Run("tend", func(b *testing.B) {
		b.Run("replicas-1", func(b *testing.B) { tendConverge(b, url, admin, cpu, 1) })
		b.Run("replicas-4", func(b *testing.B) { tendConverge(b, url, admin, cpu, 4) })
	})
	b.Run("river", func(b *testing.B) {
		b.Run("chain-6", func(b *testing.B) { riverRun(b, url, admin, cpu, riverChainLength) })
		b.Run("single", func(b *testing.B) { riverRun(b, url, admin, cpu, 1) })
	})
}

// counters are the server's totals a run reports the difference of.
type counters struct {
	cpu    time.Duration // server CPU
	xacts  int64         // committed transactions in the database
	proc   time.Duration // this process's CPU
	wallAt time.Time
}

func readCounters(b *testing.B, admin *pgxpool.Pool, cpu func() (time.Duration, error)) counters {
	b.Helper()
	var c counters
	if err := admin.QueryRow(b.Context(), `SELECT pg_stat_force_next_flush()`).Scan(new(any)); err != nil {
		b.Fatal(err)
	}
	// The statistics of other sessions reach the view within a second.
	time.Sleep(1100 * time.Millisecond)
	if err := admin.QueryRow(b.Context(), `SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()`).Scan(&c.xacts); err != nil {
		b.Fatal(err)
	}
	if cpu != nil {
		var err error
		if c.cpu, err = cpu(); err != nil {
			b.Fatal(err)
		}
	}
	c.proc = cpuTime(b)
	c.wallAt = time.Now()
	return c
}

// report reports what a run of items items, writes status writes (or jobs
// done), used between before and after; the measuring transactions of
// readCounters itself are left out.
func report(b *testing.B, before, after counters, elapsed time.Duration, items, writes int) {
	b.ReportMetric(float64(items)/elapsed.Seconds(), "items/s")
	b.ReportMetric(float64(writes)/elapsed.Seconds(), "writes/s")
	cpu := (after.cpu - before.cpu) + (after.proc - before.proc)
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(writes), "cpu-ms/write")
	b.ReportMetric(float64(after.xacts-before.xacts-2)/float64(writes), "xacts/write")
}

// tendConverge drives pgItems gateways Creating → Started with replicas
// replicas on one server, each a store, pool and controller of its own
// with pgWorkers workers, driving its share of the documents on a schema
// of its own.
func tendConverge(b *testing.B, url string, admin *pgxpool.Pool, cpu func() (time.Duration, error), replicas int) {
	for range b.N {
		ctx, cancel := context.WithCancel(b.Context())
		type replica struct {
			s       *postgres.Store
			counted *managertest.WriteCounter
			c       *manager.Manager
			reg     *prometheus.Registry
		}
		var rs []replica
		for range replicas {
			schema := "bench_" + strings.ToLower(rand.Text())[:10]
			b.Cleanup(func() { admin.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE") }) //nolint:errcheck // best effort
			// The documents are created through a store of their own,
			// closed before the run: a session reports its transactions
			// to pg_stat_database when it ends, not at once.
			setup, err := postgres.New(ctx, postgres.Config{URL: url, Schema: schema, Kinds: []string{"ApiGateway"}})
			if err != nil {
				b.Fatal(err)
			}
			gws, _, _ := gatewayController(b, setup, pgWorkers)
			createGateways(ctx, b, gws, pgItems/replicas)
			setup.Close()
			s, err := postgres.New(ctx, postgres.Config{URL: url, Schema: schema, Kinds: []string{"ApiGateway"}, NoMigrate: true})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(s.Close)
			counted := &managertest.WriteCounter{Backend: s}
			_, c, reg := gatewayController(b, counted, pgWorkers)
			rs = append(rs, replica{s, counted, c, reg})
		}
		before := readCounters(b, admin, cpu)
		start := time.Now()
		var wg sync.WaitGroup
		for _, r := range rs {
			wg.Go(func() {
				if err := r.c.Run(ctx); err != nil {
					b.Error(err)
				}
			})
		}
		for {
			n := 0
			for _, r := range rs {
				n += started(b, r.reg)
			}
			if n >= pgItems/replicas*replicas {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		elapsed := time.Since(start)
		writes := 0
		for _, r := range rs {
			writes += int(r.counted.Writes())
		}
		cancel()
		wg.Wait()
		for _, r := range rs {
			r.s.Close() // its sessions report their transactions as they end
		}
		report(b, before, readCounters(b, admin, cpu), elapsed, pgItems/replicas*replicas, writes)
	}
}

// chainArgs is a River job: step of a chain of riverChainLength.
type chainArgs struct {
	Step int `json:"step"`
	Last int `json:"last"`
}

func (chainArgs) Kind() string { return "chain" }

// chainWorker works chainArgs: a step before the last inserts the next and
// completes itself in one transaction; the last completes and is counted.
type chainWorker struct {
	river.WorkerDefaults[chainArgs]
	pool *pgxpool.Pool
	done *atomic.Int64
}

func (w *chainWorker) Work(ctx context.Context, job *river.Job[chainArgs]) error {
	if job.Args.Step == job.Args.Last {
		w.done.Add(1)
		return nil
	}
	tx, err := w.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // after Commit it does nothing
	client := river.ClientFromContext[pgx.Tx](ctx)
	if _, err := client.InsertTx(ctx, tx, chainArgs{Step: job.Args.Step + 1, Last: job.Args.Last}, nil); err != nil {
		return err
	}
	if _, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// riverRun runs pgItems chains of length steps on River (steps 1: single
// no-op jobs) with pgWorkers workers, pgxpool's default pool and the fetch
// cooldown at its minimum, on a schema of its own. Each job is a write.
func riverRun(b *testing.B, url string, admin *pgxpool.Pool, cpu func() (time.Duration, error), steps int) {
	for range b.N {
		ctx, cancel := context.WithCancel(b.Context())
		defer cancel()
		schema := "river_" + strings.ToLower(rand.Text())[:10]
		b.Cleanup(func() { admin.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE") }) //nolint:errcheck // best effort
		if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
			b.Fatal(err)
		}
		cfg, err := pgxpool.ParseConfig(url)
		if err != nil {
			b.Fatal(err)
		}
		cfg.ConnConfig.RuntimeParams["search_path"] = schema
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			b.Fatal(err)
		}
		defer pool.Close()
		driver := riverpgxv5.New(pool)
		migrator, err := rivermigrate.New(driver, &rivermigrate.Config{Schema: schema})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
			b.Fatal(err)
		}
		var done atomic.Int64
		workers := river.NewWorkers()
		river.AddWorker(workers, &chainWorker{pool: pool, done: &done})
		client, err := river.NewClient(driver, &river.Config{
			Schema:        schema,
			FetchCooldown: riverCooldown,
			Queues:        map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: pgWorkers}},
			Workers:       workers,
			Logger:        slog.New(slog.DiscardHandler),
		})
		if err != nil {
			b.Fatal(err)
		}
		params := make([]river.InsertManyParams, pgItems)
		for i := range params {
			params[i] = river.InsertManyParams{Args: chainArgs{Step: 1, Last: steps}}
		}
		for chunk := range slices.Chunk(params, 1000) {
			if _, err := client.InsertMany(ctx, chunk); err != nil {
				b.Fatal(err)
			}
		}
		// A session reports its transactions to pg_stat_database when it
		// ends, not at once: end the inserting sessions before the run,
		// and every session of the run before reading its count.
		pool.Reset()
		before := readCounters(b, admin, cpu)
		start := time.Now()
		if err := client.Start(ctx); err != nil {
			b.Fatal(err)
		}
		for done.Load() < pgItems {
			time.Sleep(20 * time.Millisecond)
		}
		elapsed := time.Since(start)
		if err := client.Stop(ctx); err != nil {
			b.Fatal(err)
		}
		pool.Reset()
		after := readCounters(b, admin, cpu)
		report(b, before, after, elapsed, pgItems, pgItems*steps)
	}
}
