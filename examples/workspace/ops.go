package main

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tendhq/tend/examples/workspace/dataplane"
	"github.com/tendhq/tend/store"
)

// ops is what an operator gets from a run besides the scenario's board.
type ops struct {
	// listener, when set, serves the controller's probes (/readyz,
	// /healthz), metrics (/metrics) and each workspace's history
	// (/history/{kind}/{key}) while the scenario runs (-listen).
	listener net.Listener
	// registry receives the metrics served; nil means none.
	registry *prometheus.Registry
	// consoleActions lets the web console the listener serves under
	// /console/ act on workspaces (-console-actions); without it the
	// console is read-only.
	consoleActions bool
	// summaryEvery is how often the summary line is looked at, and
	// printed when it changed. Zero means a second.
	summaryEvery time.Duration
}

// registerer returns o's registry as a prometheus.Registerer, nil when it
// has none.
func (o ops) registerer() prometheus.Registerer {
	if o.registry == nil {
		return nil
	}
	return o.registry
}

// summarize prints to the board, every interval, the summary line of the
// workspaces in coll when it changed, until ctx ends.
func (b *board) summarize(ctx context.Context, coll *store.Collection[dataplane.Spec, dataplane.Status], every time.Duration) error {
	t := time.NewTicker(max(every, time.Millisecond))
	defer t.Stop()
	last := ""
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		wss, _, err := coll.List(ctx, store.ListOptions{})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if line := summary(wss); line != last {
			last = line
			b.mu.Lock()
			fmt.Fprintf(b.out, "          summary: %s\n", line)
			b.mu.Unlock()
		}
	}
}

// summary returns a line of how many workspaces are in each phase, in the
// machine's order, and the failures: workspaces holding one (the ERROR
// phase) and those whose operation is retrying a failed step.
func summary(wss []*dataplane.Workspace) string {
	count := map[dataplane.Phase]int{}
	failed, retrying := 0, 0
	for _, ws := range wss {
		p := ws.Status.Phase
		if p == "" {
			p = dataplane.Pending
		}
		count[p]++
		if ws.Status.Failure != nil {
			failed++
		}
		if op := ws.Status.Operation; op != nil && op.Attempts > 0 {
			retrying++
		}
	}
	var phases []string
	for _, ps := range dataplane.Definition().Phases {
		if n := count[ps.Phase]; n > 0 {
			phases = append(phases, fmt.Sprintf("%s %d", ps.Phase, n))
		}
	}
	if len(phases) == 0 {
		phases = []string{"no workspaces"}
	}
	return fmt.Sprintf("%s | failures: %d held, %d retrying", strings.Join(phases, ", "), failed, retrying)
}
