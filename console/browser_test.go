package console_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tendhq/tend/console"
	"github.com/tendhq/tend/internal/servertest"
)

// browser starts the headless Chromium of $TEND_CHROMIUM (scripts/test.sh
// installs it) for the test, and returns a context of one of its tabs. Without
// it the test fails in CI and is skipped elsewhere.
func browser(t *testing.T) context.Context {
	t.Helper()
	path := servertest.Env(t, "TEND_CHROMIUM", "chromium")
	actx, acancel := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("no-pings", true),
		chromedp.WindowSize(1280, 900),
	)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		acancel()
	})
	// The first run starts the browser; it must not carry a timeout.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	return ctx
}

// within runs actions with a deadline.
func within(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// submit clicks the button sel and returns the status of the page its
// form's answer loads.
func submit(t *testing.T, ctx context.Context, sel string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("clicking %s: %v", sel, err)
	}
	return resp.Status
}

func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("the text of %s: %v", sel, err)
	}
	return strings.TrimSpace(s)
}

// eval evaluates a script and returns its value; promises are awaited.
func eval[T any](t *testing.T, ctx context.Context, script string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](script, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("evaluating %s: %v", script, err)
	}
	return v
}

// TestBrowser drives the console in a real browser: the list shows the
// lamps a real controller drives, a phase change shows on the list and on
// the object page without navigation, the diagram highlights the current
// phase, and pausing works only when granted and never without the
// session token.
func TestBrowser(t *testing.T) {
	ctx := browser(t)
	l := newLamps(t)
	l.create(t, "hall", "On")
	l.create(t, "desk", "On")
	l.create(t, "team-a/porch", "Off")
	l.waitPhase(t, "hall", "Brightening")
	l.waitPhase(t, "desk", "Brightening")

	var granted atomic.Bool
	srv, _ := serve(t, l, console.Config{
		Authorize: func(r *http.Request, a console.Action) error {
			if !granted.Load() {
				return errNotGranted
			}
			return nil
		},
		Actor: func(*http.Request) string { return "alice" },
	})
	base := srv.URL + "/console/"

	t.Run("list", func(t *testing.T) {
		within(t, ctx, "loading the kinds", chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS(`tr[data-kind="Lamp"]`)))
		if got := text(t, ctx, `tr[data-kind="Lamp"] [data-field="total"]`); got != "3" {
			t.Errorf("the kinds page counts %s lamps, want 3", got)
		}
		within(t, ctx, "opening the lamps", chromedp.Click(chromedp.CSS(`a[href="/console/kinds/Lamp"]`)),
			chromedp.WaitVisible(chromedp.CSS(`tr[data-key="team-a/porch"]`)))
		for key, phase := range map[string]string{"hall": "Brightening", "desk": "Brightening", "team-a/porch": "Dark"} {
			if got := text(t, ctx, `tbody[data-phase="`+phase+`"] tr[data-key="`+key+`"] [data-field="phase"]`); got != phase {
				t.Errorf("lamp %s is listed in %q, want %s", key, got, phase)
			}
		}
	})

	t.Run("live list", func(t *testing.T) {
		within(t, ctx, "loading the lamps", chromedp.Navigate(base+"kinds/Lamp"), chromedp.WaitVisible(chromedp.CSS(`#live.on`)))
		eval[bool](t, ctx, `window.notReloaded = true`)
		l.light("hall", true)
		within(t, ctx, "waiting for hall to show Lit",
			chromedp.WaitVisible(chromedp.CSS(`tbody[data-phase="Lit"] tr[data-key="hall"]`)))
		if got := text(t, ctx, `tr[data-key="hall"] [data-field="phase"]`); got != "Lit" {
			t.Errorf("hall's phase shows %q, want Lit", got)
		}
		if got := text(t, ctx, `[data-count="Brightening"] b`); got != "1" {
			t.Errorf("the Brightening count shows %s, want 1", got)
		}
		// A lamp created meanwhile joins the list.
		l.create(t, "attic", "Off")
		within(t, ctx, "waiting for attic to show",
			chromedp.WaitVisible(chromedp.CSS(`tbody[data-phase="Dark"] tr[data-key="attic"]`)))
		if got := text(t, ctx, `tr[data-key="attic"] a[href="/console/kinds/Lamp/objects/attic"]`); got != "attic" {
			t.Errorf("attic's link reads %q", got)
		}
		if got := text(t, ctx, `main [data-field="total"]`); got != "4" {
			t.Errorf("the page counts %s lamps, want 4", got)
		}
		if !eval[bool](t, ctx, `window.notReloaded === true`) {
			t.Error("the page was loaded again")
		}
	})

	t.Run("object diagram", func(t *testing.T) {
		within(t, ctx, "loading desk", chromedp.Navigate(base+"kinds/Lamp/objects/desk"), chromedp.WaitVisible(chromedp.CSS(`#live.on`)))
		if got := eval[[]string](t, ctx, `[...document.querySelectorAll("svg.machine .node.current")].map(n => n.dataset.phase)`); len(got) != 1 || got[0] != "Brightening" {
			t.Errorf("the diagram highlights %v, want [Brightening]", got)
		}
		eval[bool](t, ctx, `window.notReloaded = true`)
		l.light("desk", true)
		within(t, ctx, "waiting for the diagram to highlight Lit",
			chromedp.WaitVisible(chromedp.CSS(`svg.machine g.node.current[data-phase="Lit"]`)))
		if got := eval[[]string](t, ctx, `[...document.querySelectorAll("svg.machine .node.current")].map(n => n.dataset.phase)`); len(got) != 1 || got[0] != "Lit" {
			t.Errorf("the diagram highlights %v, want [Lit]", got)
		}
		if got := text(t, ctx, `dd[data-field="phase"]`); got != "Lit" {
			t.Errorf("the page shows phase %q, want Lit", got)
		}
		if !eval[bool](t, ctx, `window.notReloaded === true && JSON.parse(document.getElementById("status").textContent).phase === "Lit"`) {
			t.Error("the page was loaded again, or its status JSON is not the new one")
		}
	})

	t.Run("pause", func(t *testing.T) {
		page := base + "kinds/Lamp/objects/team-a/porch"
		within(t, ctx, "loading porch", chromedp.Navigate(page),
			chromedp.SendKeys(chromedp.CSS(`#action-pause input[name="reason"]`), "maintenance"))
		if code := submit(t, ctx, `#action-pause button`); code != http.StatusForbidden {
			t.Errorf("a pause not granted answered %d, want 403", code)
		}
		if got := text(t, ctx, `body`); !strings.Contains(got, "not granted") {
			t.Errorf("the answer to a pause not granted says %q", got)
		}
		if st := l.status(t, "team-a/porch"); st.Paused != nil {
			t.Fatalf("a pause that was not granted paused the lamp: %+v", st.Paused)
		}

		granted.Store(true)
		within(t, ctx, "loading porch", chromedp.Navigate(page),
			chromedp.SendKeys(chromedp.CSS(`#action-pause input[name="reason"]`), "maintenance"))
		if code := submit(t, ctx, `#action-pause button`); code != http.StatusOK {
			t.Errorf("a granted pause answered %d, want 200 after its redirect", code)
		}
		if got := text(t, ctx, `dd[data-field="paused"]`); got != "alice: maintenance" {
			t.Errorf("the page shows paused %q, want alice: maintenance", got)
		}
		if st := l.status(t, "team-a/porch"); st.Paused == nil || st.Paused.By != "alice" {
			t.Fatalf("after a granted pause, status.paused = %+v", st.Paused)
		}

		// The same form's request, from the page itself, without the token.
		code := eval[int](t, ctx, `fetch(location.pathname, {method: "POST", body: new URLSearchParams({action: "resume"})}).then(r => r.status)`)
		if code != http.StatusForbidden {
			t.Errorf("a resume without the token answered %d, want 403", code)
		}
		if st := l.status(t, "team-a/porch"); st.Paused == nil {
			t.Error("a resume without the token resumed the lamp")
		}
	})
}

var errNotGranted = notGranted{}

type notGranted struct{}

func (notGranted) Error() string { return "not granted to this operator" }
