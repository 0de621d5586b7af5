package console_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tendhq/tend/registry"

	"github.com/tendhq/tend/console"
	"github.com/tendhq/tend/store"
)

// serve serves a console of l's store under /console/ for the test.
func serve(t testing.TB, l *lamps, cfg console.Config) (*httptest.Server, *http.Client) {
	t.Helper()
	cfg.Store, cfg.Prefix = l.store, "/console/"
	c, err := console.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/console/", c)
	// The event streams end with their requests: end them all before
	// Close waits for the requests.
	ctx, cancel := context.WithCancel(context.Background())
	srv := httptest.NewUnstartedServer(mux)
	srv.Config.BaseContext = func(net.Listener) context.Context { return ctx }
	srv.Start()
	t.Cleanup(func() {
		cancel()
		srv.Close()
	})
	jar, _ := cookiejar.New(nil)
	return srv, &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func get(t testing.TB, client *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := client.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

var tokenRE = regexp.MustCompile(`name="token" value="([^"]+)"`)

// token loads the page at u and returns the session token of its forms.
func token(t testing.TB, client *http.Client, u string) string {
	t.Helper()
	code, body := get(t, client, u)
	m := tokenRE.FindStringSubmatch(body)
	if code != http.StatusOK || m == nil {
		t.Fatalf("GET %s: %d, no token in the page:\n%s", u, code, body)
	}
	return m[1]
}

func post(t testing.TB, client *http.Client, u string, form url.Values) (int, string) {
	t.Helper()
	resp, err := client.PostForm(u, form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestNewRejectsBadConfig(t *testing.T) {
	st := newLamps(t).store
	for _, cfg := range []console.Config{
		{},
		{Store: st, Prefix: "console/"},
		{Store: st, Prefix: "/console"},
		{Store: st, Prefix: "/{kind}/"},
	} {
		if _, err := console.New(cfg); !errors.Is(err, console.ErrInvalidConfig) {
			t.Errorf("New(%+v) = %v, want ErrInvalidConfig", cfg.Prefix, err)
		}
	}
}

func TestPages(t *testing.T) {
	l := newLamps(t)
	l.create(t, "hall", "On")
	l.create(t, "team-a/desk", "Off")
	l.waitPhase(t, "hall", "Brightening")
	srv, client := serve(t, l, console.Config{})

	code, body := get(t, client, srv.URL+"/console/")
	if code != http.StatusOK || !strings.Contains(body, `href="/console/kinds/Lamp"`) || !strings.Contains(body, `data-phase="Brightening">Brightening <b>1</b>`) ||
		!strings.Contains(body, `<span class="ok">running</span>`) {
		t.Errorf("kinds page: %d\n%s", code, body)
	}
	code, body = get(t, client, srv.URL+"/console/kinds/Lamp")
	for _, want := range []string{`data-key="hall"`, `data-key="team-a/desk"`, `href="/console/kinds/Lamp/objects/team-a/desk"`, `<tbody data-phase="Brightening"`} {
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("kind page: %d, no %s in\n%s", code, want, body)
		}
	}
	code, body = get(t, client, srv.URL+"/console/kinds/Lamp/objects/team-a/desk")
	if code != http.StatusOK || !regexp.MustCompile(`class="node kind-resting current" data-phase="Dark"`).MatchString(body) {
		t.Errorf("object page: %d, the diagram does not highlight Dark:\n%s", code, body)
	}
	if n := strings.Count(body, " current\""); n != 1 {
		t.Errorf("object page highlights %d phases, want 1", n)
	}
	if !strings.Contains(body, "This console is read-only.") || strings.Contains(body, "<form") {
		t.Error("a read-only console shows action forms")
	}
	for _, a := range []string{"console.css", "console.js"} {
		resp, err := client.Get(srv.URL + "/console/assets/" + a)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %d", a, resp.StatusCode)
		}
	}
	for _, u := range []string{"/console/kinds/Nope", "/console/kinds/Lamp/objects/nope"} {
		if code, _ := get(t, client, srv.URL+u); code != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", u, code)
		}
	}
}

// TestConditionsShowWhereObserved lights a lamp: its condition "lit",
// observed while Brightening, is shown as observed there, and stale once
// the lamp is Lit.
func TestConditionsShowWhereObserved(t *testing.T) {
	l := newLamps(t)
	l.create(t, "hall", "On")
	l.waitPhase(t, "hall", "Brightening")
	srv, client := serve(t, l, console.Config{})
	u := srv.URL + "/console/kinds/Lamp/objects/hall"
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		_, body := get(t, client, u)
		if strings.Contains(body, "<td>lit</td><td>false</td>") {
			if !strings.Contains(body, "in Brightening at ") || strings.Contains(body, "stale") {
				t.Fatalf("the condition observed while Brightening:\n%s", body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the condition never shown:\n%s", body)
		}
	}
	l.light("hall", true)
	l.waitPhase(t, "hall", "Lit")
	_, body := get(t, client, u)
	if !regexp.MustCompile(`<td>lit</td><td>true</td>.*in Brightening at [^<]+ <span class="tag">stale</span>`).MatchString(body) {
		t.Fatalf("in Lit, the condition observed while Brightening is not stale:\n%s", body)
	}
}

// Without Authorize, every action is refused, with a valid token and all.
func TestReadOnlyRefusesEveryAction(t *testing.T) {
	l := newLamps(t)
	l.create(t, "hall", "On")
	l.waitPhase(t, "hall", "Brightening")
	srv, client := serve(t, l, console.Config{})
	u := srv.URL + "/console/kinds/Lamp/objects/hall"
	get(t, client, u) // a session
	before := l.status(t, "hall")
	for _, a := range []console.ActionName{console.ActionPause, console.ActionResume, console.ActionRetry, console.ActionSkip,
		console.ActionMove, console.ActionRequest, console.ActionRemoveFinalizer} {
		code, body := post(t, client, u, url.Values{"action": {string(a)}, "token": {"anything"}, "step": {"switch_on"}, "phase": {"Dark"}})
		if code != http.StatusForbidden || !strings.Contains(body, "read-only") {
			t.Errorf("%s on a read-only console: %d %s", a, code, body)
		}
	}
	if after := l.status(t, "hall"); after.Paused != nil || len(after.Commands) > 0 || !after.Since.Equal(before.Since) {
		t.Errorf("a read-only console changed the document: %+v", after)
	}
}

func TestActionsNeedTheSessionToken(t *testing.T) {
	l := newLamps(t)
	l.create(t, "hall", "On")
	l.waitPhase(t, "hall", "Brightening")
	var mu sync.Mutex
	var asked []console.Action
	srv, client := serve(t, l, console.Config{
		Authorize: func(r *http.Request, a console.Action) error {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, a)
			return nil
		},
		Actor: func(*http.Request) string { return "alice" },
	})
	u := srv.URL + "/console/kinds/Lamp/objects/hall"
	tok := token(t, client, u)

	other, _ := cookiejar.New(nil)
	stranger := &http.Client{Jar: other}
	strangerTok := token(t, stranger, u)

	pause := func(tok string) url.Values {
		return url.Values{"action": {"pause"}, "reason": {"look"}, "token": {tok}}
	}
	for name, form := range map[string]url.Values{
		"no token":                     {"action": {"pause"}},
		"a wrong token":                pause("x" + tok[1:]),
		"another session's token":      pause(strangerTok),
		"a token in the query instead": {"action": {"pause"}},
	} {
		target := u
		if name == "a token in the query instead" {
			target += "?token=" + url.QueryEscape(tok)
		}
		if code, body := post(t, client, target, form); code != http.StatusForbidden || !strings.Contains(body, "token") {
			t.Errorf("pause with %s: %d %s, want 403", name, code, body)
		}
	}
	// A cross-site browser request is refused even with the token.
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(pause(tok).Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a cross-site pause: %d, want 403", resp.StatusCode)
	}
	mu.Lock()
	if len(asked) > 0 {
		t.Errorf("Authorize was asked about forged requests: %+v", asked)
	}
	mu.Unlock()
	if st := l.status(t, "hall"); st.Paused != nil {
		t.Fatalf("a refused pause paused the lamp: %+v", st.Paused)
	}

	code, _ := post(t, client, u, pause(tok))
	if code != http.StatusSeeOther {
		t.Fatalf("pause with the token: %d, want 303", code)
	}
	if st := l.status(t, "hall"); st.Paused == nil || st.Paused.By != "alice" || st.Paused.Reason != "look" {
		t.Errorf("after pause, status.paused = %+v, want by alice for look", st.Paused)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := (console.Action{Name: console.ActionPause, Kind: lampKind, Key: "hall", Reason: "look"}); len(asked) != 1 || asked[0] != want {
		t.Errorf("Authorize was asked %+v, want %+v", asked, want)
	}
}

func TestAuthorizeRefuses(t *testing.T) {
	l := newLamps(t)
	l.create(t, "hall", "On")
	l.waitPhase(t, "hall", "Brightening")
	srv, client := serve(t, l, console.Config{Authorize: func(r *http.Request, a console.Action) error {
		if a.Name == console.ActionPause {
			return errors.New("pausing needs the on-call role")
		}
		return nil
	}})
	u := srv.URL + "/console/kinds/Lamp/objects/hall"
	tok := token(t, client, u)
	code, body := post(t, client, u, url.Values{"action": {"pause"}, "token": {tok}})
	if code != http.StatusForbidden || !strings.Contains(body, "on-call role") {
		t.Errorf("a refused pause: %d %s", code, body)
	}
	if st := l.status(t, "hall"); st.Paused != nil {
		t.Errorf("a refused pause paused the lamp")
	}
	if code, _ := post(t, client, u, url.Values{"action": {"resume"}, "token": {tok}}); code != http.StatusSeeOther {
		t.Errorf("an authorized resume: %d", code)
	}
	if code, _ := post(t, client, u, url.Values{"action": {"explode"}, "token": {tok}}); code != http.StatusBadRequest {
		t.Errorf("an unknown action: %d, want 400", code)
	}
}

// sse reads the events of a stream.
type sse struct {
	resp   *http.Response
	events chan map[string]any
}

func openEvents(t testing.TB, u string) *sse {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET %s: %d %s", u, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	s := &sse{resp: resp, events: make(chan map[string]any, 100)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(s.events)
		sc := bufio.NewScanner(resp.Body)
		var name string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev := map[string]any{}
				_ = json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev)
				ev["event"] = name
				s.events <- ev
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		resp.Body.Close()
		<-done
	})
	return s
}

// next returns the next event whose field has value.
func (s *sse) next(t testing.TB, field, value string) map[string]any {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				t.Fatalf("the stream ended before an event with %s %s", field, value)
			}
			if ev[field] == value {
				return ev
			}
		case <-timeout:
			t.Fatalf("no event with %s %s within 10s", field, value)
		}
	}
}

func TestEventsFollowPhaseChanges(t *testing.T) {
	l := newLamps(t)
	l.create(t, "hall", "On")
	l.create(t, "desk", "On")
	l.waitPhase(t, "hall", "Brightening")
	srv, _ := serve(t, l, console.Config{})

	kind := openEvents(t, srv.URL+"/console/events?kind=Lamp")
	one := openEvents(t, srv.URL+"/console/events?kind=Lamp&key=desk")
	all := openEvents(t, srv.URL+"/console/events")
	l.light("hall", true)
	l.light("desk", true)
	ev := kind.next(t, "phase", "Lit")
	if ev["event"] != "object" || ev["kind"] != lampKind || ev["url"] == "" {
		t.Errorf("event %v", ev)
	}
	if ev := one.next(t, "phase", "Lit"); ev["key"] != "desk" || ev["status"] == nil {
		t.Errorf("the stream of desk sent %v", ev)
	}
	all.next(t, "phase", "Lit")
	// The stream of every kind tells of a kind registered later.
	fan, _ := json.Marshal(registry.Entry{Kind: "Fan", Machine: lampMachine(t).Descriptor()})
	if _, err := l.store.Create(context.Background(), store.Document{Meta: store.Meta{Kind: registry.Kind, Key: "Fan"}, Spec: fan}); err != nil {
		t.Fatal(err)
	}
	if ev := all.next(t, "key", "Fan"); ev["kind"] != registry.Kind {
		t.Errorf("the registration of Fan came as %v", ev)
	}
	l.waitPhase(t, "hall", "Lit")
	l.waitPhase(t, "desk", "Lit")

	// From a revision: the changes after it, even those made before the
	// stream opened.
	code, body := get(t, http.DefaultClient, srv.URL+"/console/kinds/Lamp")
	rev := regexp.MustCompile(`events\?kind=Lamp&amp;from=(\d+)`).FindStringSubmatch(body)
	if code != http.StatusOK || rev == nil {
		t.Fatalf("the kind page names no revision: %d\n%s", code, body)
	}
	if _, err := l.driver.UpdateSpec(context.Background(), "hall", func(s *lampSpec) { s.State = "Off" }); err != nil {
		t.Fatal(err)
	}
	l.waitPhase(t, "hall", "Dimming")
	late := openEvents(t, srv.URL+"/console/events?kind=Lamp&from="+rev[1])
	if ev := late.next(t, "phase", "Dimming"); ev["state"] != "Off" {
		t.Errorf("the late stream sent %v", ev)
	}
	if code, _ := get(t, http.DefaultClient, srv.URL+"/console/events?kind=Lamp&from=x"); code != http.StatusBadRequest {
		t.Errorf("a bad revision: %d, want 400", code)
	}
}

// The actions reach the document through the oncall package: they are
// recorded in its history, and one the machine does not allow is refused
// with the reason on the document's page.
func TestActionsActThroughTheOperatorClient(t *testing.T) {
	l := newLamps(t)
	l.create(t, "hall", "On")
	l.waitPhase(t, "hall", "Brightening")
	srv, client := serve(t, l, console.Config{
		Authorize: func(*http.Request, console.Action) error { return nil },
		Actor:     func(*http.Request) string { return "bob" },
	})
	u := srv.URL + "/console/kinds/Lamp/objects/hall"
	tok := token(t, client, u)
	if code, _ := post(t, client, u, url.Values{"action": {"pause"}, "reason": {"checking"}, "token": {tok}}); code != http.StatusSeeOther {
		t.Fatalf("pause: %d", code)
	}
	code, body := get(t, client, u+"?done=pause")
	if code != http.StatusOK || !strings.Contains(body, `<dd data-field="paused">bob: checking</dd>`) ||
		!strings.Contains(body, `<tr class="entry-operator">`) || !strings.Contains(body, "Done: pause.") {
		t.Errorf("the page after a pause: %d\n%s", code, body)
	}
	if code, _ := post(t, client, u, url.Values{"action": {"resume"}, "token": {tok}}); code != http.StatusSeeOther {
		t.Fatalf("resume: %d", code)
	}
	if st := l.status(t, "hall"); st.Paused != nil {
		t.Errorf("after resume, status.paused = %+v", st.Paused)
	}
	code, body = post(t, client, u, url.Values{"action": {"move"}, "phase": {"Nowhere"}, "token": {tok}})
	if code != http.StatusBadRequest || !strings.Contains(body, `<p class="message" id="message">`) || !strings.Contains(body, "Nowhere") {
		t.Errorf("a move to a phase the machine lacks: %d\n%s", code, body)
	}
	if _, body := get(t, client, u+"?done=<b>you+were+hacked</b>"); strings.Contains(body, "hacked") {
		t.Error("the page shows any text a link gives it")
	}
}
