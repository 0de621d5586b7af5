package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/manager"
	"github.com/tendhq/tend/oncall"
	"github.com/tendhq/tend/store"
)

const testToken = "t0ken-of-the-test"

// tokenEnv is the environment of a command that presents the test token.
var tokenEnv = []string{"TEND_TOKEN=" + testToken}

// apiServer serves b's on-call API as a program does: under /oncall/, as
// the fallback of its manager's handler, each request through wrap. With
// acting, token holders may act; without, the API is read-only. It returns
// the --server URL.
func apiServer(t *testing.T, b store.Backend, acting bool, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	cfg := oncall.ServerConfig{Store: b, Prefix: "/oncall/", Token: testToken}
	if acting {
		// Token holders, and browsers with a session (a console's
		// users).
		cfg.Authorize = func(r *http.Request, a oncall.Access) error {
			if c, err := r.Cookie("session"); a.Token || err == nil && c.Value == "ok" {
				return nil
			}
			return errors.New("no session")
		}
	}
	api, err := oncall.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := manager.New(manager.Config{Store: b, Identity: "api"})
	if err != nil {
		t.Fatal(err)
	}
	h := mgr.Handler(manager.HandlerConfig{Fallback: api})
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL + "/oncall/"
}

// liveMemory returns a memory store a controller ran on.
func liveMemory(t *testing.T) *memory.Store {
	t.Helper()
	s, err := memory.New(memory.Config{Kinds: testKinds})
	if err != nil {
		t.Fatal(err)
	}
	produce(t, s)
	return s
}

// TestServer runs the commands against a running program's on-call API:
// they write what they write on the store itself (the same golden files),
// and --watch follows the changes.
func TestServer(t *testing.T) {
	s := liveMemory(t)
	url := apiServer(t, s, true, nil)
	connect := []string{"--server", url}
	golden(t, "read", transcriptWith(t, tokenEnv, connect, url, readCommands...))
	golden(t, "actions", transcriptWith(t, tokenEnv, connect, url, actionCommands...))
	testWatchWith(t, s, tokenEnv, connect)

	// The token from a file; never printed.
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(testToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := tend(t, "--server", url, "--token-file", file, "get"); r.code != 0 || strings.Contains(r.stdout+r.stderr, testToken) {
		t.Errorf("get with --token-file: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	if r := tendEnv(t, tokenEnv, "--server", url, "--store", "memory:x", "get"); r.code != exitUsage {
		t.Errorf("--server with --store: exit %d: %s", r.code, r.stderr)
	}
}

// TestServerBulk runs a bulk action through the API.
func TestServerBulk(t *testing.T) {
	s := liveMemory(t)
	url := apiServer(t, s, true, nil)
	golden(t, "bulk", transcriptWith(t, tokenEnv, []string{"--server", url}, url, bulkCommands...))
}

// serverRefusals returns the requests a served API did not refuse that
// it should have, each request through wrap.
func serverRefusals(t *testing.T, wrap func(http.Handler) http.Handler) []string {
	s := liveMemory(t)
	readOnly := apiServer(t, s, false, wrap)
	acting := apiServer(t, s, true, wrap)
	var served []string
	for _, c := range []struct {
		name string
		env  []string
		args []string
	}{
		{"a read without a token", nil, []string{"--server", readOnly, "get", "Widget"}},
		{"a read with a wrong token", []string{"TEND_TOKEN=wrong"}, []string{"--server", readOnly, "get", "Widget"}},
		{"an action without a token", nil, []string{"--server", acting, "pause", "Widget", "w-ready", "--yes"}},
		{"an action with a wrong token", []string{"TEND_TOKEN=" + testToken + "x"}, []string{"--server", acting, "pause", "Widget", "w-ready", "--yes"}},
		{"an action on a read-only API", tokenEnv, []string{"--server", readOnly, "pause", "Widget", "w-ready", "--yes"}},
		{"a bulk action on a read-only API", tokenEnv, []string{"--server", readOnly, "pause", "Widget", "--all", "--yes"}},
	} {
		r := tendEnv(t, c.env, c.args...)
		if r.code != exitRefused {
			served = append(served, c.name)
			t.Logf("%s: exit %d: %s%s", c.name, r.code, r.stdout, r.stderr)
		}
		if strings.Contains(r.stdout+r.stderr, testToken) {
			t.Errorf("%s: the token was printed: %s%s", c.name, r.stdout, r.stderr)
		}
	}
	// A browser's form posted from another site carries no token: the
	// origin check refuses it before the authorizer is asked.
	req, _ := http.NewRequest(http.MethodPost, acting+"kinds/Widget/actions", strings.NewReader(`{"key":"w-ready","action":{"name":"pause"}}`))
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	req.Header.Set("Origin", "https://evil.example")
	req.AddCookie(&http.Cookie{Name: "session", Value: "ok"})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		served = append(served, "a cross-site browser action")
		t.Logf("a cross-site browser action: %s", resp.Status)
	}
	if r := tendEnv(t, tokenEnv, "--server", readOnly, "get", "Widget", "w-ready"); strings.Contains(r.stdout, "paused") {
		served = append(served, "the pause written")
	}
	return served
}

func TestServerRefuses(t *testing.T) {
	if got := serverRefusals(t, nil); len(got) > 0 {
		t.Fatalf("served what it should have refused: %q", got)
	}
}

// TestServerRefusesPlanted checks that TestServerRefuses catches a proxy
// in front of the API that lets requests past its checks.
func TestServerRefusesPlanted(t *testing.T) {
	for name, wrap := range map[string]func(http.Handler) http.Handler{
		"skips the token check (adds the token to every request)": func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				r.Header.Set("Authorization", "Bearer "+testToken)
				h.ServeHTTP(w, r)
			})
		},
		"hides where a request comes from": func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				r.Header.Del("Sec-Fetch-Site")
				r.Header.Del("Origin")
				h.ServeHTTP(w, r)
			})
		},
	} {
		if got := serverRefusals(t, wrap); len(got) == 0 {
			t.Errorf("a proxy that %s went unnoticed", name)
		} else {
			t.Logf("a proxy that %s: caught %q", name, got)
		}
	}
}

// TestLiveSnapshotRefused checks that tend refuses to act on the memory
// snapshot of a process that still runs (its presence lease is live):
// that process would overwrite the file.
func TestLiveSnapshotRefused(t *testing.T) {
	if wrong := liveSnapshot(t, func(data []byte) []byte { return data }); len(wrong) > 0 {
		t.Fatalf("%q", wrong)
	}
}

// TestLiveSnapshotRefusedPlanted checks that TestLiveSnapshotRefused
// catches a snapshot copied by a tool that loses the leases.
func TestLiveSnapshotRefusedPlanted(t *testing.T) {
	wrong := liveSnapshot(t, func(data []byte) []byte {
		var file struct {
			Format string          `json:"format"`
			SHA256 string          `json:"sha256"`
			Data   json.RawMessage `json:"data"`
		}
		var body map[string]json.RawMessage
		if json.Unmarshal(data, &file) != nil || json.Unmarshal(file.Data, &body) != nil {
			t.Fatal("not a snapshot")
		}
		delete(body, "leases")
		file.Data, _ = json.Marshal(body)
		sum := sha256.Sum256(file.Data)
		file.SHA256 = hex.EncodeToString(sum[:])
		out, _ := json.Marshal(file)
		return out
	})
	if len(wrong) == 0 {
		t.Fatal("a snapshot without its leases went unnoticed")
	}
	t.Logf("caught: %q", wrong)
}

// liveSnapshot snapshots a store while its controller runs, passes the
// file through copy, acts on it, and returns what went wrong.
func liveSnapshot(t *testing.T, copy func([]byte) []byte) []string {
	s := liveMemory(t)
	run := startController(t, s, true)
	defer run.stop()
	deadline := time.Now().Add(30 * time.Second)
	for served, _ := oncallServed(t, s); !served; served, _ = oncallServed(t, s) {
		if time.Now().After(deadline) {
			t.Fatal("the controller does not serve Widget")
		}
		time.Sleep(10 * time.Millisecond)
	}
	var buf bytes.Buffer
	if err := s.Snapshot(&buf); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tend.snapshot")
	if err := os.WriteFile(path, copy(buf.Bytes()), 0o600); err != nil {
		t.Fatal(err)
	}
	spec := "memory:" + path
	var wrong []string
	for _, args := range [][]string{
		{"resume", "Widget", "w-ready", "--yes"},
		{"pause", "Widget", "w-ready", "--yes"},
		{"retry", "Widget", "w-failing", "--yes"},
		{"pause", "Widget", "--all", "--yes"},
	} {
		r := tend(t, append([]string{"--store", spec}, args...)...)
		if r.code != exitRefused || !strings.Contains(r.stderr, "presence lease is live") {
			wrong = append(wrong, fmt.Sprintf("%v on a live snapshot: exit %d: %s%s", args, r.code, r.stdout, r.stderr))
		}
	}
	if r := tend(t, "--store", spec, "get", "Widget", "w-ready"); strings.Contains(r.stdout, "paused") {
		wrong = append(wrong, "the snapshot was written: "+r.stdout)
	}
	r := tend(t, "--store", spec, "pause", "Widget", "w-ready", "--yes", "--force")
	if r.code != 0 || !strings.Contains(r.stdout, "pause done") {
		t.Errorf("pause --force on a live snapshot: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	return wrong
}

func oncallServed(t *testing.T, b store.Backend) (bool, error) {
	c, err := oncall.New(b, oncall.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return c.Served(t.Context(), widgetKind)
}
