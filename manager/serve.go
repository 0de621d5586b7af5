package manager

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/tendhq/tend/history"
)

// HandlerConfig configures the handler of [Manager.Handler].
type HandlerConfig struct {
	// Gatherer is served as /metrics in Prometheus' formats, usually the
	// registry given as the MetricsRegisterer of the manager and its
	// controllers. Nil means no /metrics.
	Gatherer prometheus.Gatherer

	// History serves the history of each document (see package history)
	// as JSON under /history/{kind}/{key}. Nil means no /history.
	History *history.Reader

	// Fallback serves every request no other route matches: a web
	// console that serves the paths under /console/, or the runtime's
	// profiles (net/http/pprof's handlers, mounted by the program that wants
	// them: this package imports no profiling and registers nothing on
	// http.DefaultServeMux), say. Nil means 404 Not Found.
	Fallback http.Handler
}

// Handler returns an HTTP handler of the replica's health, as Kubernetes'
// probes and Prometheus expect it:
//   - /readyz: [Manager.CheckReadiness].
//   - /healthz: [Manager.CheckLiveness].
//   - /metrics: [HandlerConfig.Gatherer], when set.
//   - /history/{kind}/{key}: the history of a document, when
//     [HandlerConfig.History] is set (see history.Handler).
//   - /reconciles?kind=K&key=X: [Manager.Reconciles] as JSON, an object
//     with kind, key and reconciles (each with reconcileID, start,
//     duration in nanoseconds, triggers, result and error); 400 without
//     kind or key. Like /metrics, it asks for no credentials: mount the
//     handler where only operators reach it.
//   - anything else: [HandlerConfig.Fallback], when set.
//
// /readyz and /healthz answer GET and HEAD: 200 with the body "ok" when every
// check passes, else 503 with one line per check, "[+]name ok" or
// "[-]name failed: reason", and a last line "readyz check failed" (or
// healthz). With the query parameter verbose, a passing answer lists its
// checks too and ends with "readyz check passed". Other paths are not found,
// unless Fallback serves them.
func (m *Manager) Handler(cfg HandlerConfig) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /readyz", checkHandler("readyz", m.readiness))
	mux.Handle("GET /healthz", checkHandler("healthz", m.liveness))
	if cfg.Gatherer != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(cfg.Gatherer, promhttp.HandlerOpts{}))
	}
	if cfg.History != nil {
		mux.Handle("GET /history/{kind}/{key...}", history.Handler(cfg.History))
	}
	mux.Handle("GET /reconciles", m.reconcilesHandler())
	if cfg.Fallback != nil {
		mux.Handle("/", cfg.Fallback)
	}
	return mux
}

// checkHandler serves the outcome of checks in Kubernetes' format.
func checkHandler(kind string, checks func(time.Time) []check) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cs := checks(time.Now())
		failed := false
		for _, c := range cs {
			failed = failed || c.reason != ""
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Cache-Control", "no-store")
		_, verbose := r.URL.Query()["verbose"]
		if !failed && !verbose {
			_, _ = io.WriteString(w, "ok")
			return
		}
		var b strings.Builder
		for _, c := range cs {
			if c.reason == "" {
				fmt.Fprintf(&b, "[+]%s ok\n", c.name)
			} else {
				fmt.Fprintf(&b, "[-]%s failed: %s\n", c.name, c.reason)
			}
		}
		if failed {
			fmt.Fprintf(&b, "%s check failed\n", kind)
			w.WriteHeader(http.StatusServiceUnavailable)
		} else {
			fmt.Fprintf(&b, "%s check passed\n", kind)
		}
		_, _ = io.WriteString(w, b.String())
	})
}

// serveShutdownTimeout is how long [Manager.Serve] lets requests in flight
// finish once its context ended.
const serveShutdownTimeout = 5 * time.Second

// Serve serves [Manager.Handler](cfg) over HTTP on addr (a TCP address, as
// for net.Listen) until ctx ends. It then stops accepting connections, ends
// the requests' contexts, gives the requests in flight up to 5 seconds to
// finish, closes the connections left and returns nil. It returns at once
// with the error if it cannot listen on addr, and returns the error if
// serving fails.
//
// Serve does not depend on [Manager.Run]: run both, and the probes report
// the manager as it starts and stops.
func (m *Manager) Serve(ctx context.Context, addr string, cfg HandlerConfig) error {
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("manager: serving health: %w", err)
	}
	return m.ServeListener(ctx, l, cfg)
}

// ServeListener is [Manager.Serve] on a listener the caller opened (on port
// 0, say, to learn the address it got); it closes l when it returns.
func (m *Manager) ServeListener(ctx context.Context, l net.Listener, cfg HandlerConfig) error {
	srv := &http.Server{
		Handler:           m.Handler(cfg),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	m.log.Info("serving health", zap.Stringer("address", l.Addr()))
	served := make(chan struct{})
	var shutdown sync.WaitGroup
	shutdown.Go(func() {
		select {
		case <-ctx.Done():
		case <-served:
			return
		}
		grace, cancel := context.WithTimeout(context.WithoutCancel(ctx), serveShutdownTimeout)
		defer cancel()
		if srv.Shutdown(grace) != nil {
			_ = srv.Close()
		}
	})
	err := srv.Serve(l)
	close(served)
	shutdown.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	_ = srv.Close()
	return fmt.Errorf("manager: serving health: %w", err)
}
