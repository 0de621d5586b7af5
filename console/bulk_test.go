package console_test

import (
	"context"
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/tendhq/tend/console"
	"github.com/tendhq/tend/oncall"
	"github.com/tendhq/tend/store"
)

// TestBulk previews "all matching" on a kind's page, then runs it: the
// documents previewed are acted on, those changed since are listed, one
// matching since is left alone and listed, and a cross-site run is
// refused.
func TestBulk(t *testing.T) {
	if wrong := checkConsoleBulk(t, func(h http.Handler) http.Handler { return h }); len(wrong) > 0 {
		t.Fatalf("%q", wrong)
	}
}

// TestBulkPlanted checks that TestBulk catches a proxy that strips where
// a request comes from.
func TestBulkPlanted(t *testing.T) {
	wrong := checkConsoleBulk(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.Header.Del("Sec-Fetch-Site")
			r.Header.Del("Origin")
			h.ServeHTTP(w, r)
		})
	})
	if len(wrong) == 0 {
		t.Fatal("a proxy hiding where requests come from went unnoticed")
	}
	t.Logf("caught: %q", wrong)
}

var hiddenRE = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)

func checkConsoleBulk(t *testing.T, wrap func(http.Handler) http.Handler) []string {
	l := newLamps(t)
	ctx := t.Context()
	for key, floor := range map[string]string{"hall": "1", "porch": "1", "attic": "2"} {
		if _, err := l.coll.Create(ctx, &store.Object[lampSpec, lampStatus]{Meta: store.Meta{Key: key, Labels: map[string]string{"floor": floor}}, Spec: lampSpec{State: "On"}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, key := range []string{"hall", "porch", "attic"} {
		l.waitPhase(t, key, "Brightening")
	}
	c, err := console.New(console.Config{Store: l.store, Prefix: "/console/",
		Authorize: func(*http.Request, console.Action) error { return nil },
		Actor:     func(*http.Request) string { return "alice" }})
	if err != nil {
		t.Fatal(err)
	}
	bctx, cancel := context.WithCancel(context.Background())
	srv := httptest.NewUnstartedServer(wrap(c))
	srv.Config.BaseContext = func(net.Listener) context.Context { return bctx }
	srv.Start()
	defer srv.Close()
	defer cancel()
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar}
	var wrong []string
	errorf := func(format string, args ...any) { wrong = append(wrong, fmt.Sprintf(format, args...)) }

	if code, body := get(t, client, srv.URL+"/console/kinds/Lamp"); code != http.StatusOK || !strings.Contains(body, `id="bulk"`) {
		errorf("the kind page: %d, without the All matching form", code)
	}
	code, body := get(t, client, srv.URL+"/console/kinds/Lamp/bulk?selector=floor%3D1&action=pause&reason=dim")
	if code != http.StatusOK || !strings.Contains(body, "2 documents match.") || !strings.Contains(body, `id="bulk-run"`) {
		t.Fatalf("the preview: %d:\n%s", code, body)
	}
	form := url.Values{}
	for _, m := range hiddenRE.FindAllStringSubmatch(body, -1) {
		form.Add(m[1], html.UnescapeString(m[2]))
	}
	// Between the preview and the run: porch is paused by hand, attic
	// moves to floor 1.
	ops, _ := oncall.New(l.store, oncall.Config{Actor: "bob"})
	if err := ops.Pause(ctx, "Lamp", "porch", "by hand"); err != nil {
		t.Fatal(err)
	}
	for {
		attic, err := l.coll.Get(ctx, "attic")
		if err != nil {
			t.Fatal(err)
		}
		attic.Labels["floor"] = "1"
		if _, err = l.coll.UpdateSpec(ctx, attic); err == nil {
			break
		} else if !errors.Is(err, store.ErrConflict) {
			t.Fatal(err)
		}
	}

	// A run posted from another site, with the session's token, is
	// refused.
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/console/kinds/Lamp/bulk", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		errorf("a cross-site run: %d, want 403", resp.StatusCode)
	}
	if st := l.status(t, "hall"); st.Paused != nil {
		errorf("a refused run paused hall: %+v", st.Paused)
	}

	code, body = post(t, client, srv.URL+"/console/kinds/Lamp/bulk", form)
	if code != http.StatusOK || !strings.Contains(body, "pause: 2 acted on, 0 refused, of 2 previewed.") {
		t.Fatalf("the run: %d:\n%s", code, body)
	}
	if !regexp.MustCompile(`id="changed">[^<]*<code>porch</code>`).MatchString(body) || !regexp.MustCompile(`id="added">[^<]*<code>attic</code>`).MatchString(body) {
		errorf("the run does not list porch as changed and attic as added:\n%s", body)
	}
	if st := l.status(t, "hall"); st.Paused == nil || st.Paused.By != "alice" || st.Paused.Reason != "dim" {
		errorf("hall after the run: paused %+v, want by alice: dim", st.Paused)
	}
	if st := l.status(t, "attic"); st.Paused != nil {
		errorf("attic, not previewed, was paused: %+v", st.Paused)
	}
	return wrong
}
