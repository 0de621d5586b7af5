// Command gateway runs the API gateway platform of the reference example on
// the embedded default (the in-memory store and a simulated cluster) through a
// scripted scenario: it creates several gateways, starts them, stops one,
// restarts one and deletes two while failures are injected, shows every
// gateway's State, Phase and cascade step as it happens, and exits non-zero if
// the scenario does not converge or an invariant breaks.
//
//	go run ./examples/gateway -gateways 8 -failure-rate 0.1 -delay 100ms
//
// With -kubeconfig the cluster is a real Kubernetes cluster (the databases
// stay simulated), and every gateway is deleted at the end:
//
//	go run ./examples/gateway -kubeconfig ~/.kube/config -audit-log /var/log/kube-audit.log
//
// With -listen it serves, while the scenario runs, the controllers' probes
// (/readyz, /healthz), their metrics (/metrics), each document's history
// as JSON (/history/{kind}/{key}): why a gateway is in its phase, and the
// web console (/console/), read-only unless -console-actions is given,
// and, with $TEND_TOKEN set, the on-call API for tend --server (/oncall/):
//
//	go run ./examples/gateway -listen 127.0.0.1:8080 &
//	curl -s 127.0.0.1:8080/history/ApiGateway/gw-01
//	open http://127.0.0.1:8080/console/
//	tend --server http://127.0.0.1:8080/oncall/ get ApiGateway
//
// With -seeds it measures instead: it plays the scenario once per seed and
// prints each time to converge, where it went, and the median, p90 and
// maximum:
//
//	go run ./examples/gateway -seeds 30 -failure-rate 0.45
//
// See README.md beside this file.
package main

//go:generate go test -run ^TestREADMEDiagrams$ -update .

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

func main() {
	if err := mainErr(); err != nil {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		os.Exit(1)
	}
}

// cli is what the command line asks for.
type cli struct {
	opts      options
	listen    string
	traceFile string
	traceOTLP bool
	seeds     int
}

// parseFlags reads the command line's arguments (without the program's
// name) and checks them.
func parseFlags(args []string, stderr io.Writer) (cli, error) {
	var c cli
	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
	fs.SetOutput(stderr)
	opts := &c.opts
	fs.IntVar(&opts.Gateways, "gateways", 6, "number of gateways to create (at least 5 to see every action)")
	fs.Float64Var(&opts.FailureRate, "failure-rate", 0.15, "probability that an infrastructure call fails")
	fs.DurationVar(&opts.Delay, "delay", 300*time.Millisecond, "how long a resource takes to become ready or to disappear")
	fs.DurationVar(&opts.Latency, "latency", time.Millisecond, "latency of every infrastructure call")
	fs.Uint64Var(&opts.Seed, "seed", 1, "seed of the injected failures")
	fs.DurationVar(&opts.Timeout, "timeout", 50*time.Second, "give up if the scenario has not converged by then")
	fs.DurationVar(&opts.MaxBackoff, "max-backoff", 0, "cap the delay before a failed step is retried (default ten polls: 500ms at the default delay; the platform's own default is 2s)")
	fs.StringVar(&c.listen, "listen", "", "serve the probes (/readyz, /healthz), the metrics (/metrics), each document's history (/history/{kind}/{key}, JSON), the web console (/console/) and, when $TEND_TOKEN is set, the on-call API for tend --server (/oncall/) on this address while the scenario runs, for example 127.0.0.1:8080")
	fs.BoolVar(&opts.ConsoleActions, "console-actions", false, "with -listen, let the console act on documents (pause, resume, retry, skip, move, request, remove a finalizer) for anyone who reaches the address; without it the console is read-only")
	fs.BoolVar(&opts.Stay, "stay", false, "with -listen, keep the controllers running and the address serving after the scenario, until interrupted (Ctrl-C), to look around the console")
	fs.StringVar(&opts.Kubeconfig, "kubeconfig", "", "run the cluster on the Kubernetes cluster this kubeconfig names (the databases stay simulated)")
	fs.StringVar(&c.traceFile, "trace-file", "", "write every span (reconciles, steps, observers) as JSON to this file; - for standard output")
	fs.BoolVar(&c.traceOTLP, "trace-otlp", false, "export every span over OTLP/gRPC to $OTEL_EXPORTER_OTLP_ENDPOINT (default https://localhost:4317)")
	fs.StringVar(&opts.AuditLog, "audit-log", "", "with -kubeconfig: the API server's audit log (JSON lines), to check the ordering rules on")
	fs.IntVar(&c.seeds, "seeds", 0, "play the scenario once for each of this many seeds from -seed on, without the table, and print each time to converge, then the median, p90 and maximum")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	switch {
	case fs.NArg() > 0:
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	case opts.AuditLog != "" && opts.Kubeconfig == "":
		return c, errors.New("-audit-log needs -kubeconfig")
	case c.seeds < 0:
		return c, fmt.Errorf("-seeds %d is negative", c.seeds)
	case opts.MaxBackoff < 0:
		return c, fmt.Errorf("-max-backoff %v is negative", opts.MaxBackoff)
	case c.seeds > 0 && c.listen != "":
		return c, errors.New("-seeds does not go with -listen: each run would register its metrics again")
	case opts.ConsoleActions && c.listen == "":
		return c, errors.New("-console-actions needs -listen")
	case opts.Stay && c.listen == "":
		return c, errors.New("-stay needs -listen")
	}
	return c, checkListen(c.listen)
}

func mainErr() error {
	c, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	opts := c.opts

	fi, err := os.Stdout.Stat()
	opts.TTY = err == nil && fi.Mode()&os.ModeCharDevice != 0
	opts.Refresh = time.Second
	if opts.TTY {
		opts.Refresh = 100 * time.Millisecond
	}

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	if c.seeds > 0 {
		return measure(ctx, opts, c.seeds, os.Stdout)
	}

	if c.listen != "" {
		reg := prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		opts.Registerer, opts.Gatherer = reg, reg
		ln, err := net.Listen("tcp", c.listen)
		if err != nil {
			return err
		}
		defer ln.Close()
		opts.Listener = ln
		opts.Token = os.Getenv("TEND_TOKEN")
	}

	if c.traceFile != "" || c.traceOTLP {
		tp, shutdown, err := newTracerProvider(ctx, c.traceFile, c.traceOTLP)
		if err != nil {
			return err
		}
		defer func() {
			if err := shutdown(); err != nil {
				fmt.Fprintln(os.Stderr, "gateway: exporting spans:", err)
			}
		}()
		opts.TracerProvider = tp
	}

	rep, err := run(ctx, opts, os.Stdout)
	fmt.Println()
	fmt.Printf("documents settled   %d (gateways and runtime domains), %d gateways removed, %d documents left\n",
		rep.Settled, rep.Removed, rep.Documents)
	fmt.Printf("steps               %d run, %d retried after %d injected infrastructure failures\n", rep.Steps, rep.Retried, rep.Injected)
	fmt.Printf("probes              %d run, %d failed (each run again after the poll interval)\n", rep.Probes, rep.ProbesFailed)
	fmt.Printf("store writes        %d\n", rep.Writes)
	fmt.Printf("time to converge    %v (every gateway Started after %v)\n", rep.Elapsed.Round(time.Millisecond), rep.StartedAfter.Round(time.Millisecond))
	if b := rep.Breakdown; b.Slowest != nil {
		fmt.Printf("slowest operation   %v\n", b.Slowest)
	}
	if b := rep.Breakdown; b.Streak != nil {
		fmt.Printf("longest retry run   %s of %s %s %s: %d failed attempts in a row, %s backoff; last error: %s\n", b.Streak.label(),
			b.StreakOf.Kind, b.StreakOf.Key, b.StreakOf.Phase, b.Streak.InARow, seconds(b.Streak.Backoff), b.Streak.LastError)
	}
	fmt.Printf("invariants          ")
	switch {
	case len(rep.Violations) == 0 && rep.OrderUnchecked:
		fmt.Println("held (Deleting never went back, nothing left behind); the ordering rules need -audit-log to be checked on a cluster")
	case len(rep.Violations) == 0:
		fmt.Println("held (routes gone before the Deployment, the Deployment before the database, Deleting never went back, nothing left behind)")
	default:
		fmt.Println("BROKEN")
		for _, v := range rep.Violations {
			fmt.Println("  ", v)
		}
	}
	switch {
	case err != nil:
		return err
	case len(rep.Violations) > 0:
		return errors.New("invariants broken")
	case !rep.Converged:
		return errors.New("the scenario did not converge")
	}
	return nil
}
