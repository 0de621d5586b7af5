package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tendhq/tend/examples/gateway/platform"
	"github.com/tendhq/tend/examples/internal/listentest"
	sm "github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

func TestListenFlag(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		listen  string
		wantErr string
	}{
		{args: nil, listen: ""},
		{args: []string{"-listen", "127.0.0.1:8080"}, listen: "127.0.0.1:8080"},
		{args: []string{"-listen", ":0"}, listen: ":0"},
		{args: []string{"-listen", "127.0.0.1"}, wantErr: "want host:port"},
		{args: []string{"-listen", "127.0.0.1:0", "-seeds", "3"}, wantErr: "-seeds does not go with"},
		{args: []string{"-listen"}, wantErr: "flag needs an argument"},
		{args: []string{"-console-actions"}, wantErr: "-console-actions needs -listen"},
		{args: []string{"-listen", "127.0.0.1:0", "-console-actions"}, listen: "127.0.0.1:0"},
		{args: []string{"-stay"}, wantErr: "-stay needs -listen"},
		{args: []string{"-listen", "127.0.0.1:0", "-stay"}, listen: "127.0.0.1:0"},
	} {
		c, err := parseFlags(tc.args, io.Discard)
		switch {
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%q: error %v, want one saying %q", tc.args, err, tc.wantErr)
		case tc.wantErr == "" && err != nil:
			t.Errorf("%q: %v", tc.args, err)
		case tc.wantErr == "" && c.listen != tc.listen:
			t.Errorf("%q: listen %q, want %q", tc.args, c.listen, tc.listen)
		}
	}
	if _, err := parseFlags([]string{"-h"}, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v, want flag.ErrHelp", err)
	}
}

// TestListen plays the scenario with -listen and asks, while it runs, for
// the probes, the metrics, a gateway's history and the console, read-only.
func TestListen(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	opts := options{Gateways: 5, Delay: 200 * time.Millisecond, Timeout: time.Minute, Listener: ln, Registerer: reg, Gatherer: reg}
	type result struct {
		rep report
		err error
	}
	done := make(chan result, 1)
	go func() {
		rep, err := run(context.Background(), opts, io.Discard)
		done <- result{rep, err}
	}()
	base := "http://" + ln.Addr().String()
	hist, ok := listentest.History(base, "ApiGateway", "gw-01", 30*time.Second)
	if !ok {
		t.Fatalf("no history of gw-01 served: %+v", hist)
	}
	if e := hist.Entries[0]; e.Type == "" || e.ReconcileID == "" {
		t.Errorf("first entry %+v, want a type and a reconcile id", e)
	}
	if code, body := listentest.Get(base, "/readyz"); code != http.StatusOK {
		t.Errorf("/readyz: %d %s", code, body)
	}
	if code, body := listentest.Get(base, "/metrics"); code != http.StatusOK || !strings.Contains(body, "tend_history_entries_written_total") ||
		!strings.Contains(body, "controller_runtime_reconcile_total") {
		t.Errorf("/metrics: %d, without the history's or the controllers' series", code)
	}
	if page, ok := listentest.ConsoleLists(base, "ApiGateway", "gw-01", 30*time.Second); !ok {
		t.Errorf("the console does not list gw-01:\n%s", page)
	}
	if code, body := listentest.Get(base, "/console/"); code != http.StatusOK || !strings.Contains(body, `data-kind="RuntimeDomain"`) {
		t.Errorf("/console/: %d, without the runtime domains:\n%s", code, body)
	}
	gw := "/console/kinds/ApiGateway/objects/gw-01"
	if code, body := listentest.Get(base, gw); code != http.StatusOK || strings.Count(body, " current\"") != 1 || !strings.Contains(body, "read-only") {
		t.Errorf("%s: %d, without one phase highlighted or read-only:\n%s", gw, code, body)
	}
	if code, body := listentest.Post(base, gw, url.Values{"action": {"pause"}}); code != http.StatusForbidden {
		t.Errorf("pausing through the read-only console: %d %s", code, body)
	}
	r := <-done
	if r.err != nil || !r.rep.Converged {
		t.Fatalf("scenario: converged %v, %v", r.rep.Converged, r.err)
	}
	if code, _ := listentest.Get(base, "/readyz"); code != 0 {
		t.Error("still serving after the scenario ended")
	}
}

// TestStay plays the scenario with -listen and -stay: once it is done, the
// console still serves, until the run's context ends.
func TestStay(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	opts := options{Gateways: 5, Delay: 50 * time.Millisecond, Timeout: time.Minute, Listener: ln, Registerer: reg, Gatherer: reg, Stay: true}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &lockedBuffer{}
	type result struct {
		rep report
		err error
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		rep, err := run(ctx, opts, out)
		done <- result{rep, err}
	}()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(out.String(), "scenario done") {
		if time.Now().After(deadline) {
			t.Fatalf("the scenario did not say it was done:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	select {
	case r := <-done:
		t.Fatalf("the run ended after the scenario with -stay: %+v %v", r.rep, r.err)
	default:
	}
	base := "http://" + ln.Addr().String()
	if code, body := listentest.Get(base, "/console/"); code != http.StatusOK {
		t.Errorf("/console/ after the scenario: %d %s", code, body)
	}
	stayed := time.Now()
	time.Sleep(time.Second)
	cancel()
	r := <-done
	if r.err != nil || !r.rep.Converged {
		t.Fatalf("scenario: converged %v, %v", r.rep.Converged, r.err)
	}
	if code, _ := listentest.Get(base, "/readyz"); code != 0 {
		t.Error("still serving after the run's context ended")
	}
	if r.rep.Elapsed > stayed.Sub(start) {
		t.Errorf("the time to converge, %v, counts the time spent staying", r.rep.Elapsed)
	}
}

// lockedBuffer is a buffer a run writes to while a test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestSummary(t *testing.T) {
	gw := func(p platform.GatewayPhase, failed bool) *platform.Gateway {
		g := &platform.Gateway{Meta: store.Meta{Key: "gw"}}
		g.Status.Phase = p
		if failed {
			g.Status.Failure = &sm.Failure[platform.GatewayPhase]{Reason: "boom"}
		}
		return g
	}
	got := summary([]*platform.Gateway{gw("Started", false), gw("", false), gw("Started", false), gw("Failed", true)},
		platform.Stats{Retried: 7})
	want := "phases: Creating 1, Started 2, Failed 1 | failures: 1 gateways holding one, 7 step runs failed"
	if got != want {
		t.Errorf("summary\n got %s\nwant %s", got, want)
	}
}
