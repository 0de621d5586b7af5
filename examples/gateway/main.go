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
// See README.md beside this file.
package main

//go:generate go test -run ^TestREADMEDiagrams$ -update .

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

func main() {
	if err := mainErr(); err != nil {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		os.Exit(1)
	}
}

func mainErr() error {
	var opts options
	flag.IntVar(&opts.Gateways, "gateways", 6, "number of gateways to create (at least 5 to see every action)")
	flag.Float64Var(&opts.FailureRate, "failure-rate", 0.15, "probability that an infrastructure call fails")
	flag.DurationVar(&opts.Delay, "delay", 300*time.Millisecond, "how long a resource takes to become ready or to disappear")
	flag.DurationVar(&opts.Latency, "latency", time.Millisecond, "latency of every infrastructure call")
	flag.Uint64Var(&opts.Seed, "seed", 1, "seed of the injected failures")
	flag.DurationVar(&opts.Timeout, "timeout", 50*time.Second, "give up if the scenario has not converged by then")
	metricsAddr := flag.String("metrics-addr", "", "serve Prometheus metrics on this address (for example :9090)")
	flag.StringVar(&opts.Kubeconfig, "kubeconfig", "", "run the cluster on the Kubernetes cluster this kubeconfig names (the databases stay simulated)")
	traceFile := flag.String("trace-file", "", "write every span (reconciles, steps, observers) as JSON to this file; - for standard output")
	traceOTLP := flag.Bool("trace-otlp", false, "export every span over OTLP/gRPC to $OTEL_EXPORTER_OTLP_ENDPOINT (default https://localhost:4317)")
	flag.StringVar(&opts.AuditLog, "audit-log", "", "with -kubeconfig: the API server's audit log (JSON lines), to check the ordering rules on")
	flag.Parse()
	if opts.AuditLog != "" && opts.Kubeconfig == "" {
		return errors.New("-audit-log needs -kubeconfig")
	}

	fi, err := os.Stdout.Stat()
	opts.TTY = err == nil && fi.Mode()&os.ModeCharDevice != 0
	opts.Refresh = time.Second
	if opts.TTY {
		opts.Refresh = 100 * time.Millisecond
	}

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()

	if *metricsAddr != "" {
		reg := prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		opts.Registerer = reg
		ln, err := net.Listen("tcp", *metricsAddr)
		if err != nil {
			return err
		}
		srv := &http.Server{Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
		fmt.Printf("metrics on http://%s/metrics\n", ln.Addr())
	}

	if *traceFile != "" || *traceOTLP {
		tp, shutdown, err := newTracerProvider(ctx, *traceFile, *traceOTLP)
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
	fmt.Printf("store writes        %d\n", rep.Writes)
	fmt.Printf("time to converge    %v\n", rep.Elapsed.Round(time.Millisecond))
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
