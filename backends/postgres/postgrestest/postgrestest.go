// Package postgrestest holds what benchmarks of the PostgreSQL backend, in
// this module and in others, share: the server's CPU time read from /proc.
package postgrestest

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// ServerCPU returns a function giving the CPU time the PostgreSQL server
// behind pool has used, read from /proc: the postmaster's, its exited
// children's and its running children's (the backends). It returns nil
// when the server is not a process that this machine's /proc shows.
func ServerCPU(tb testing.TB, pool *pgxpool.Pool) func() (time.Duration, error) {
	var backend int
	if err := pool.QueryRow(tb.Context(), "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		tb.Fatal(err)
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
