package postgres_test

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tendhq/tend/backends/postgres"
	"github.com/tendhq/tend/manager/managertest"
	"github.com/tendhq/tend/store"
)

// BenchmarkUpdateStatus measures the latency of one status write: a
// transaction that locks the row, checks the revision, writes the row and
// logs the change.
func BenchmarkUpdateStatus(b *testing.B) {
	ctx := b.Context()
	s := newStore(b, postgres.Config{Logger: nopLogger})
	d, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: "bench"}})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		d.Status = fmt.Appendf(d.Status[:0], `{"n":%d}`, i)
		if d, err = s.UpdateStatus(ctx, d); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUpdateStatusParallel measures status write throughput with
// concurrent writers, each on its own document (they still serialise on the
// revision counter at commit).
func BenchmarkUpdateStatusParallel(b *testing.B) {
	ctx := b.Context()
	s := newStore(b, postgres.Config{Logger: nopLogger})
	var n atomic.Int64
	b.SetParallelism(4)
	b.RunParallel(func(pb *testing.PB) {
		d, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: fmt.Sprintf("bench-%d", n.Add(1))}})
		if err != nil {
			b.Error(err)
			return
		}
		for i := 0; pb.Next(); i++ {
			d.Status = fmt.Appendf(d.Status[:0], `{"n":%d}`, i)
			if d, err = s.UpdateStatus(ctx, d); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkWatchDelivery measures the time from the start of a status write
// to its event reaching a watch that was waiting for it (woken by NOTIFY),
// reported as ns/delivery; ns/op is the same loop.
func BenchmarkWatchDelivery(b *testing.B) {
	ctx := b.Context()
	s := newStore(b, postgres.Config{Logger: nopLogger})
	d, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: "bench"}})
	if err != nil {
		b.Fatal(err)
	}
	w, err := s.Watch(ctx, "Widget", d.Meta.Revision)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	received := make(chan time.Time)
	go func() {
		for {
			if _, err := w.Next(ctx); err != nil {
				close(received)
				return
			}
			received <- time.Now()
		}
	}()
	var total time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		d.Status = fmt.Appendf(d.Status[:0], `{"n":%d}`, i)
		if d, err = s.UpdateStatus(ctx, d); err != nil {
			b.Fatal(err)
		}
		at, ok := <-received
		if !ok {
			b.Fatal("watch failed")
		}
		total += at.Sub(start)
	}
	b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "ns/delivery")
	w.Close()
	for range received {
	}
}

// BenchmarkConverge measures 10,000 documents going from Creating to
// Started through a gateway-like machine with instant steps, as
// managertest.Converge describes, with 8 and with 32 workers. Run it once
// per measurement:
//
//	go test -run '^$' -bench Converge -benchtime 1x .
func BenchmarkConverge(b *testing.B) {
	pool := newPool(b)
	for _, workers := range []int{8, 32} {
		b.Run(fmt.Sprintf("workers-%d", workers), func(b *testing.B) {
			managertest.Converge(b, managertest.ConvergeConfig{Workers: workers,
				Open: func(b *testing.B, kinds []string) store.Backend {
					return newStore(b, postgres.Config{Pool: pool, Kinds: kinds, Logger: nopLogger})
				},
				ServerCPU: serverCPU(b, pool),
			})
		})
	}
}

// serverCPU returns a function giving the CPU time the PostgreSQL server
// behind pool has used, read from /proc: the postmaster's, its exited
// children's and its running children's (the backends). It returns nil
// when the server is not a process that this machine's /proc shows.
func serverCPU(b *testing.B, pool *pgxpool.Pool) func() (time.Duration, error) {
	var backend int
	if err := pool.QueryRow(b.Context(), "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		b.Fatal(err)
	}
	st, err := procStat(backend)
	if err != nil || st.comm != "postgres" {
		return nil
	}
	postmaster := st.ppid
	return func() (time.Duration, error) {
		pm, err := procStat(postmaster)
		if err != nil {
			return 0, err
		}
		ticks := pm.utime + pm.stime + pm.cutime + pm.cstime
		dirs, err := os.ReadDir("/proc")
		if err != nil {
			return 0, err
		}
		for _, d := range dirs {
			pid, err := strconv.Atoi(d.Name())
			if err != nil {
				continue
			}
			// A process that is gone by now is counted in its parent's
			// cutime and cstime.
			if c, err := procStat(pid); err == nil && c.ppid == postmaster {
				ticks += c.utime + c.stime
			}
		}
		return time.Duration(ticks) * time.Second / userHZ, nil
	}
}

// userHZ is the unit of the times in /proc/PID/stat on Linux.
const userHZ = 100

// stat is what serverCPU reads of /proc/PID/stat.
type stat struct {
	comm                         string
	ppid                         int
	utime, stime, cutime, cstime int64
}

func procStat(pid int) (stat, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return stat{}, err
	}
	// "pid (comm) state ppid ... utime stime cutime cstime ...": fields 14
	// to 17, counted from 1; comm may hold spaces and parentheses.
	open, end := bytes.IndexByte(raw, '('), bytes.LastIndexByte(raw, ')')
	if open < 0 || end < open {
		return stat{}, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	f := strings.Fields(string(raw[end+1:]))
	if len(f) < 15 {
		return stat{}, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	s := stat{comm: string(raw[open+1 : end])}
	if s.ppid, err = strconv.Atoi(f[1]); err != nil {
		return stat{}, err
	}
	for i, v := range []*int64{&s.utime, &s.stime, &s.cutime, &s.cstime} {
		if *v, err = strconv.ParseInt(f[11+i], 10, 64); err != nil {
			return stat{}, err
		}
	}
	return s, nil
}
