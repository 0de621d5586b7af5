package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"
)

// measure plays the scenario once for each of n seeds from opts.Seed on, one
// run after the other (side by side they would slow each other down), and
// writes to out one line per run, with the time to converge and where it
// went, then the median, p90 and maximum of the runs that converged. It fails
// when a run did not converge or broke an invariant.
func measure(ctx context.Context, opts options, n int, out io.Writer) error {
	opts.Refresh, opts.TTY = 0, false
	fmt.Fprintf(out, "%d seeds from %d, %d gateways, failure rate %g, delay %v, latency %v\n\n",
		n, opts.Seed, opts.Gateways, opts.FailureRate, opts.Delay, opts.Latency)
	// Fixed widths rather than a tabwriter: a line is written as each run
	// ends.
	const row = "%4v  %9v  %7v  %12v  %13v  %-36v  %v\n"
	fmt.Fprintf(out, row, "SEED", "CONVERGED", "STARTED", "STEPS FAILED", "PROBES FAILED", "LONGEST RETRY RUN", "SLOWEST OPERATION")
	var times []time.Duration
	var failed []error
	for i := range n {
		seed := opts.Seed + uint64(i)
		o := opts
		o.Seed = seed
		rep, err := run(ctx, o, io.Discard)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err == nil && len(rep.Violations) > 0:
			err = fmt.Errorf("invariants broken: %w", errors.Join(rep.Violations...))
		case err == nil && !rep.Converged:
			err = errors.New("did not converge")
		}
		if err != nil {
			failed = append(failed, fmt.Errorf("seed %d: %w", seed, err))
			fmt.Fprintf(out, "%4d  FAILED: %v\n", seed, err)
			continue
		}
		times = append(times, rep.Elapsed)
		b := rep.Breakdown
		streak, slowest := "-", "-"
		if b.Streak != nil {
			streak = fmt.Sprintf("%d (%s backoff, %s)", b.Streak.InARow, seconds(b.Streak.Backoff), b.Streak.label())
		}
		if b.Slowest != nil {
			slowest = b.Slowest.String()
		}
		fmt.Fprintf(out, row, seed, seconds(rep.Elapsed), seconds(rep.StartedAfter), rep.Retried,
			fmt.Sprintf("%d of %d", rep.ProbesFailed, rep.Probes), streak, slowest)
	}
	fmt.Fprintln(out)
	if len(times) > 0 {
		slices.Sort(times)
		fmt.Fprintf(out, "time to converge over %d runs: median %s, p90 %s, max %s\n", len(times),
			seconds(percentile(times, 50)), seconds(percentile(times, 90)), seconds(times[len(times)-1]))
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d runs failed: %w", len(failed), n, errors.Join(failed...))
	}
	return nil
}

// percentile returns the p-th percentile of sorted by the nearest-rank
// method: the smallest value with at least p% of the values at or below it.
func percentile(sorted []time.Duration, p int) time.Duration {
	rank := (p*len(sorted) + 99) / 100
	return sorted[max(rank, 1)-1]
}
