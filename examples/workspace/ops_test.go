package main

import (
	"bytes"
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

	"github.com/tendhq/tend/examples/internal/listentest"
	"github.com/tendhq/tend/examples/workspace/dataplane"
	sm "github.com/tendhq/tend/statemachine"
)

func TestListenFlag(t *testing.T) {
	c, err := parseFlags([]string{"-listen", "127.0.0.1:8080", "-summary-every", "2s"}, io.Discard)
	if err != nil || c.listen != "127.0.0.1:8080" || c.ops.summaryEvery != 2*time.Second {
		t.Fatalf("parsed %+v, %v", c, err)
	}
	if c, err := parseFlags(nil, io.Discard); err != nil || c.listen != "" || c.ops.summaryEvery != time.Second {
		t.Fatalf("defaults: %+v, %v; want no -listen and a summary every second", c, err)
	}
	if c, err := parseFlags([]string{"-listen", "127.0.0.1:0", "-console-actions"}, io.Discard); err != nil || !c.ops.consoleActions {
		t.Errorf("-console-actions: %+v, %v", c.ops, err)
	}
	for _, args := range [][]string{{"-listen"}, {"-summary-every", "0s"}, {"extra"}, {"-console-actions"}} {
		if _, err := parseFlags(args, io.Discard); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
	if _, err := parseFlags([]string{"-help"}, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-help: %v, want flag.ErrHelp", err)
	}
	if err := mainErr(cli{listen: "127.0.0.1", timeout: time.Second}); err == nil || !strings.Contains(err.Error(), "-listen") {
		t.Errorf("-listen without a port: %v, want an error naming -listen", err)
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestListen plays the scenario with -listen and asks, while it runs, for
// the probes, the metrics, alice's history and the console, whose actions
// it grants.
func TestListen(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o := ops{listener: ln, registry: prometheus.NewRegistry(), summaryEvery: 50 * time.Millisecond, consoleActions: true}
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	var out syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, t.TempDir(), archives{}, o, &out) }()

	base := "http://" + ln.Addr().String()
	if _, ok := listentest.History(base, "Workspace", "alice", 30*time.Second); !ok {
		t.Fatalf("no history of alice served\n%s", out.String())
	}
	if code, body := listentest.Get(base, "/readyz"); code != http.StatusOK {
		t.Errorf("/readyz: %d %s", code, body)
	}
	if code, body := listentest.Get(base, "/metrics"); code != http.StatusOK || !strings.Contains(body, "tend_history_entries_written_total") ||
		!strings.Contains(body, "tend_phase_transitions_total") {
		t.Errorf("/metrics: %d, without the history's or the phase series", code)
	}
	if page, ok := listentest.ConsoleLists(base, "Workspace", "alice", 30*time.Second); !ok {
		t.Errorf("the console does not list alice:\n%s", page)
	}
	// The actions are granted, behind the session token: an action the
	// console does not know passes the token and the grant, and no
	// action passes without the token. (Neither changes alice, whom the
	// scenario drives meanwhile.)
	alice := "/console/kinds/Workspace/objects/alice"
	if code, body := listentest.ConsoleAct(base, alice, url.Values{"action": {"explode"}}); code != http.StatusBadRequest || !strings.Contains(body, "unknown action") {
		t.Errorf("an unknown action through the console: %d %s", code, body)
	}
	if code, body := listentest.Post(base, alice, url.Values{"action": {"pause"}}); code != http.StatusForbidden || !strings.Contains(body, "token") {
		t.Errorf("a pause without the session token: %d %s", code, body)
	}
	if err := <-done; err != nil {
		t.Fatalf("scenario: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "summary: ") {
		t.Errorf("no summary line:\n%s", out.String())
	}
}

func TestSummary(t *testing.T) {
	ws := func(p dataplane.Phase, failed, retrying bool) *dataplane.Workspace {
		w := &dataplane.Workspace{}
		w.Status.Phase = p
		if failed {
			w.Status.Failure = &sm.Failure[dataplane.Phase]{Reason: "boom"}
		}
		if retrying {
			w.Status.Operation = &sm.Operation[dataplane.Phase]{Attempts: 2}
		}
		return w
	}
	got := summary([]*dataplane.Workspace{ws(dataplane.Running, false, false), ws("", false, false),
		ws(dataplane.Starting, false, true), ws(dataplane.Error, true, false)})
	want := "PENDING 1, STARTING 1, RUNNING 1, ERROR 1 | failures: 1 held, 1 retrying"
	if got != want {
		t.Errorf("summary\n got %s\nwant %s", got, want)
	}
}
