package oncall_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tendhq/tend/history"
	"github.com/tendhq/tend/internal/evolvetest"
	"github.com/tendhq/tend/oncall"
	"github.com/tendhq/tend/registry"
	sm "github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

const token = "s3cret-token"

// allowAll is an authorizer that lets every request in.
func allowAll(*http.Request, oncall.Access) error { return nil }

// sessions is an authorizer that lets in token holders, and browsers
// whose session cookie is "ok".
func sessions(r *http.Request, a oncall.Access) error {
	if c, err := r.Cookie("session"); a.Token || err == nil && c.Value == "ok" {
		return nil
	}
	return errors.New("no session")
}

// serve serves f's store under /oncall/ with cfg (Store and Prefix set)
// and returns the server's base URL.
func (f *fixture) serve(t *testing.T, cfg oncall.ServerConfig, wrap ...func(http.Handler) http.Handler) string {
	t.Helper()
	cfg.Store, cfg.Prefix = f.b, "/oncall/"
	s, err := oncall.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var h http.Handler = s
	for _, w := range wrap {
		h = w(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL + "/oncall/"
}

func remote(t *testing.T, url, token, actor string) *oncall.Remote {
	t.Helper()
	r, err := oncall.NewRemote(oncall.RemoteConfig{URL: url, Token: token, Actor: actor})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRemote checks that a Remote reads what the Client reads, acts as the
// Client acts, and fails with errors matching the same sentinels.
func TestRemote(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	f.create(t, "failing", failing())
	f.create(t, "faulted", faulted(), "tend.dev/bucket")
	f.create(t, "ready", sm.Status[string, string]{Phase: "Ready", Target: "Present"})
	r := remote(t, f.serve(t, oncall.ServerConfig{Token: token, Authorize: allowAll}), token, "bob")

	regs, err := r.Registrations(ctx)
	if err != nil || len(regs) != 1 || regs[0].Kind != kind {
		t.Fatalf("Registrations = %v, %v", regs, err)
	}
	if m, err := r.Machine(ctx, kind); err != nil || m.Name() != kind {
		t.Fatalf("Machine = %v, %v", m, err)
	}
	local, _ := f.client.Get(ctx, kind, "failing")
	got, err := r.Get(ctx, kind, "failing")
	if err != nil || got.Meta.Revision != local.Meta.Revision || got.Phase != "Creating" || got.Operation.LastError != "quota exceeded" || string(got.Status) != string(local.Status) {
		t.Fatalf("Get = %+v, %v; want %+v", got, err, local)
	}
	faults, err := r.Select(ctx, oncall.Selection{Kind: kind, Phases: []string{"Failed"}})
	if err != nil || len(faults) != 1 || faults[0].Meta.Key != "faulted" {
		t.Fatalf("Select Failed = %v, %v", faults, err)
	}
	if all, err := r.List(ctx, kind, store.ListOptions{}); err != nil || len(all) != 3 {
		t.Fatalf("List = %d documents, %v", len(all), err)
	}

	if err := r.Pause(ctx, kind, "failing", "investigating"); err != nil {
		t.Fatal(err)
	}
	if v, _ := f.client.Get(ctx, kind, "failing"); v.Paused == nil || v.Paused.By != "bob" || v.Paused.Reason != "investigating" {
		t.Fatalf("paused by the remote: %+v", v.Paused)
	}
	cmd, err := r.Retry(ctx, kind, "faulted")
	if err != nil || cmd.ID == "" || cmd.By != "bob" {
		t.Fatalf("Retry = %+v, %v", cmd, err)
	}
	hist, err := r.History(ctx, kind, "faulted")
	if err != nil || !slices.ContainsFunc(hist, func(e history.Entry) bool { return e.Command == cmd.ID && e.Actor == "bob" }) {
		t.Fatalf("History = %v, %v: no entry of command %s", hist, err, cmd.ID)
	}

	// Each error matches the Client's sentinel across the wire.
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"a missing document", errOf(r.Get(ctx, kind, "missing")), store.ErrNotFound},
		{"an unregistered kind", errOf(r.Retry(ctx, "Volume", "v1")), registry.ErrUnregistered},
		{"nothing to retry", errOf(r.Retry(ctx, kind, "ready")), oncall.ErrInvalidAction},
		{"an unknown action", errOf(r.Apply(ctx, kind, "ready", oncall.Action{Name: "explode"})), oncall.ErrInvalidAction},
		{"a selection of nothing", errOf(r.Select(ctx, oncall.Selection{Kind: kind})), oncall.ErrNoSelection},
	} {
		if !errors.Is(tc.err, tc.want) {
			t.Errorf("%s: %v, want an error matching %v", tc.name, tc.err, tc.want)
		}
	}
	// A bulk action across the wire: each document's outcome, its error
	// matching the Client's sentinel.
	res, err := r.Bulk(ctx, oncall.Bulk{Selection: oncall.Selection{Kind: kind, All: true}, Action: oncall.Action{Name: oncall.ActionRetry}})
	if err != nil || len(res.Outcomes) != 3 || res.Refused() != 1 || !errors.Is(res.Outcomes[2].Err, oncall.ErrInvalidAction) || res.Outcomes[0].Command == "" {
		t.Fatalf("Bulk = %+v, %v; want ready refused with ErrInvalidAction", res, err)
	}
	if _, err := f.b.AcquireLease(ctx, "presence/"+kind+"/replica-1", "replica-1", time.Minute); err != nil {
		t.Fatal(err)
	}
	if served, err := r.Served(ctx, kind); err != nil || !served {
		t.Fatalf("Served = %v, %v", served, err)
	}
	if err := r.RemoveFinalizer(ctx, kind, "faulted", "tend.dev/bucket", false); !errors.Is(err, oncall.ErrServed) {
		t.Errorf("removing a served kind's finalizer: %v, want ErrServed", err)
	}
}

func errOf[T any](_ T, err error) error { return err }

// TestRemoteWatch checks that a watch over HTTP reports the documents,
// then their changes.
func TestRemoteWatch(t *testing.T) {
	f := newFixture(t)
	f.create(t, "b1", failing())
	r := remote(t, f.serve(t, oncall.ServerConfig{Token: token}), token, "")
	ctx, cancel := context.WithCancel(t.Context())
	events := make(chan oncall.Event)
	done := make(chan error)
	go func() {
		done <- r.Watch(ctx, oncall.Selection{Kind: kind, Key: "b1"}, func(ev oncall.Event) error {
			events <- ev
			return nil
		})
	}()
	if ev := <-events; ev.Type != oncall.EventList || len(ev.Views) != 1 || ev.Views[0].Phase != "Creating" {
		t.Fatalf("first event %+v, want the list of b1", ev)
	}
	if err := f.client.Pause(t.Context(), kind, "b1", "look"); err != nil {
		t.Fatal(err)
	}
	if ev := <-events; ev.Type != oncall.EventChange || ev.Views[0].Paused == nil {
		t.Fatalf("event %+v, want b1 paused", ev)
	}
	if err := f.b.Delete(t.Context(), kind, "b1", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if ev := <-events; ev.Type != oncall.EventDelete || ev.Views[0].Meta.Key != "b1" {
		t.Fatalf("event %+v, want b1 deleted", ev)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Watch ended with %v, want context.Canceled", err)
	}
}

// refusals returns the requests the handler h serves that it should have
// refused, of a server with cfg.
func refusals(t *testing.T, wrap func(http.Handler) http.Handler) []string {
	f := newFixture(t)
	f.create(t, "b1", failing())
	ctx := t.Context()
	readOnly := f.serve(t, oncall.ServerConfig{Token: token}, wrap)
	acting := f.serve(t, oncall.ServerConfig{Token: token, Authorize: sessions}, wrap)
	var served []string
	check := func(name string, err error, want error) {
		if !errors.Is(err, want) {
			served = append(served, name)
			t.Logf("%s: %v, want an error matching %v", name, err, want)
		}
	}
	check("a read without a token", errOf(remote(t, readOnly, "", "").Get(ctx, kind, "b1")), oncall.ErrUnauthorized)
	check("a read with a wrong token", errOf(remote(t, readOnly, "wrong", "").Get(ctx, kind, "b1")), oncall.ErrUnauthorized)
	check("an action without a token", remote(t, acting, "", "").Pause(ctx, kind, "b1", ""), oncall.ErrUnauthorized)
	check("an action with a wrong token", remote(t, acting, token+"x", "").Pause(ctx, kind, "b1", ""), oncall.ErrUnauthorized)
	check("an action on a read-only server", remote(t, readOnly, token, "").Pause(ctx, kind, "b1", ""), oncall.ErrForbidden)
	check("a bulk action on a read-only server", errOf(remote(t, readOnly, token, "").Bulk(ctx, oncall.Bulk{Selection: oncall.Selection{Kind: kind, All: true}, Action: oncall.Action{Name: oncall.ActionPause}})), oncall.ErrForbidden)

	// A browser's form posted from another site carries no token; the
	// authorizer would let it in (a session cookie), the origin check
	// must not.
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, acting+"kinds/"+kind+"/actions", strings.NewReader(`{"key":"b1","action":{"name":"pause"}}`))
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
		t.Logf("a cross-site browser action: %s, want 403", resp.Status)
	}
	if v, _ := f.client.Get(ctx, kind, "b1"); v.Paused != nil {
		served = append(served, "the pause written")
		t.Logf("b1 was paused by %s", v.Paused.By)
	}

	// What is allowed is served.
	if _, err := remote(t, readOnly, token, "").Get(ctx, kind, "b1"); err != nil {
		t.Errorf("a read with the token: %v", err)
	}
	req, _ = http.NewRequestWithContext(ctx, http.MethodPost, acting+"kinds/"+kind+"/actions", strings.NewReader(`{"key":"b1","action":{"name":"resume"}}`))
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	req.AddCookie(&http.Cookie{Name: "session", Value: "ok"})
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Errorf("a same-origin browser action with a session: %v", err)
	} else if resp.Body.Close(); resp.StatusCode != http.StatusOK {
		t.Errorf("a same-origin browser action with a session: %s", resp.Status)
	}
	return served
}

func TestServerRefuses(t *testing.T) {
	if got := refusals(t, func(h http.Handler) http.Handler { return h }); len(got) > 0 {
		t.Fatalf("served what it should have refused: %q", got)
	}
}

// TestServerRefusesPlanted checks that TestServerRefuses catches a proxy
// that lets requests through the checks: one that adds the token to every
// request, one that hides where a request comes from.
func TestServerRefusesPlanted(t *testing.T) {
	addToken := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Sec-Fetch-Site") == "" {
				r.Header.Set("Authorization", "Bearer "+token)
			}
			h.ServeHTTP(w, r)
		})
	}
	hideOrigin := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.Header.Del("Sec-Fetch-Site")
			r.Header.Del("Origin")
			h.ServeHTTP(w, r)
		})
	}
	for name, wrap := range map[string]func(http.Handler) http.Handler{"adds the token": addToken, "hides the origin": hideOrigin} {
		if got := refusals(t, wrap); len(got) == 0 {
			t.Errorf("a proxy that %s went unnoticed", name)
		}
	}
}

// TestRemoteAwaitAndDiff checks that a Remote waits for a document and
// compares machines as the Client does, each end's error matching the
// Client's sentinel across the wire.
func TestRemoteAwaitAndDiff(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	settled := sm.Status[string, string]{Phase: "Ready", Target: "Present", ObservedGeneration: 1}
	f.create(t, "ready", settled)
	held := faulted()
	held.ObservedGeneration = 1
	f.create(t, "held", held)
	r := remote(t, f.serve(t, oncall.ServerConfig{Token: token, Authorize: allowAll}), token, "bob")

	if v, err := r.Await(ctx, kind, "ready", 1); err != nil || v.Phase != "Ready" || v.State != "Present" {
		t.Fatalf("Await of a settled document: %+v, %v", v, err)
	}
	for _, tc := range []struct {
		name string
		err  error
		want []error
	}{
		{"held in Fault", errOf(r.Await(ctx, kind, "held", 1)), []error{sm.ErrHeldInFault}},
		{"removed", errOf(r.Await(ctx, kind, "missing", 0)), []error{oncall.ErrRemoved, store.ErrNotFound}},
		{"not driven", r.Pause(ctx, history.KindFor(kind), "ready", ""), []error{oncall.ErrNotDriven, registry.ErrUnregistered}},
	} {
		for _, want := range tc.want {
			if !errors.Is(tc.err, want) {
				t.Errorf("%s: %v, want an error matching %v", tc.name, tc.err, want)
			}
		}
	}

	mem := servicesOfV1(t)
	s, err := oncall.NewServer(oncall.ServerConfig{Store: mem, Prefix: "/oncall/", Token: token})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	c, err := oncall.New(mem, oncall.Config{})
	if err != nil {
		t.Fatal(err)
	}
	rm := remote(t, srv.URL+"/oncall/", token, "bob")
	for _, withMigrations := range []bool{true, false} {
		next := descriptorOf(t, evolvetest.V2(withMigrations))
		want, err := c.DiffMachine(ctx, evolvetest.Kind, next)
		if err != nil {
			t.Fatal(err)
		}
		got, err := rm.DiffMachine(ctx, evolvetest.Kind, next)
		if err != nil {
			t.Fatal(err)
		}
		wantJSON, _ := json.Marshal(want)
		gotJSON, _ := json.Marshal(got)
		if string(gotJSON) != string(wantJSON) {
			t.Errorf("DiffMachine (migrations %v) over the wire:\n%s\nwant\n%s", withMigrations, gotJSON, wantJSON)
		}
	}
	if _, err := rm.DiffMachine(ctx, "Nothing", descriptorOf(t, evolvetest.V2(true))); !errors.Is(err, registry.ErrUnregistered) {
		t.Errorf("DiffMachine of an unregistered kind: %v", err)
	}
}
