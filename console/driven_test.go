package console_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/tendhq/tend/console"
	"github.com/tendhq/tend/history"
	"github.com/tendhq/tend/registry"
	"github.com/tendhq/tend/store"
)

// notDriven names, for each kind no machine drives, a document of it: the
// lamps' registry entry, a lamp's history, and a crate (a kind no Manager
// ran).
var notDriven = []struct{ kind, key string }{{registry.Kind, lampKind}, {history.KindFor(lampKind), "ghost"}, {"Crate", "c1"}}

// notDrivenDocs adds a lamp and the documents of notDriven to l's store,
// each holding the lamps' finalizer.
func notDrivenDocs(t *testing.T, l *lamps) {
	t.Helper()
	ctx := t.Context()
	l.create(t, "hall", "Off") // a lamp, whose page gives the session token
	if err := l.store.AddKinds("Crate"); err != nil {
		t.Fatal(err)
	}
	for _, d := range notDriven {
		doc, err := l.store.Get(ctx, d.kind, d.key)
		if errors.Is(err, store.ErrNotFound) {
			doc, err = l.store.Create(ctx, store.Document{Meta: store.Meta{Kind: d.kind, Key: d.key}, Spec: []byte(`{}`)})
		}
		if err != nil {
			t.Fatal(err)
		}
		doc.Meta.Finalizers = append(doc.Meta.Finalizers, "tend.dev/lamp")
		if _, err := l.store.UpdateSpec(ctx, doc); err != nil {
			t.Fatal(err)
		}
	}
}

// checkNotDriven posts every action to every document of notDriven through
// a console of b, and returns each answered otherwise than 404 or that
// changed the document.
func checkNotDriven(t *testing.T, b store.Backend) []error {
	c, err := console.New(console.Config{Store: b, Prefix: "/console/", Authorize: func(*http.Request, console.Action) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/console/", c)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	tok := token(t, client, srv.URL+"/console/kinds/Lamp/objects/hall")
	actions := []url.Values{
		{"action": {"pause"}, "reason": {"x"}},
		{"action": {"resume"}},
		{"action": {"retry"}},
		{"action": {"skip"}, "step": {"switch_on"}},
		{"action": {"move"}, "phase": {"Dark"}},
		{"action": {"request"}, "request": {"flash"}},
		{"action": {"remove-finalizer"}, "finalizer": {"tend.dev/lamp"}, "force": {"on"}},
	}
	var errs []error
	for _, d := range notDriven {
		for _, form := range actions {
			before, err := b.Get(context.Background(), d.kind, d.key)
			if err != nil {
				t.Fatal(err)
			}
			form.Set("token", tok)
			code, body := post(t, client, srv.URL+"/console/kinds/"+d.kind+"/objects/"+d.key, form)
			if code != http.StatusNotFound {
				errs = append(errs, fmt.Errorf("%s on %s %s: %d, want 404: %s", form.Get("action"), d.kind, d.key, code, body))
			}
			after, err := b.Get(context.Background(), d.kind, d.key)
			if err != nil || after.Meta.Revision != before.Meta.Revision {
				errs = append(errs, fmt.Errorf("%s on %s %s changed it (%v)", form.Get("action"), d.kind, d.key, err))
			}
		}
	}
	return errs
}

// TestNotDriven: every action on a document of a kind no machine drives
// is not found, and changes nothing.
func TestNotDriven(t *testing.T) {
	l := newLamps(t)
	notDrivenDocs(t, l)
	for _, err := range checkNotDriven(t, l.store) {
		t.Error(err)
	}
}

// everyKindDriven is a store that answers every read of the machine
// registry with the lamps' entry.
type everyKindDriven struct{ store.Backend }

func (s everyKindDriven) Get(ctx context.Context, kind, key string) (store.Document, error) {
	if kind == registry.Kind {
		key = lampKind
	}
	return s.Backend.Get(ctx, kind, key)
}

// TestNotDrivenCatches plants a store whose registry says a machine drives
// every kind: checkNotDriven finds actions taken.
func TestNotDrivenCatches(t *testing.T) {
	l := newLamps(t)
	notDrivenDocs(t, l)
	if errs := checkNotDriven(t, everyKindDriven{l.store}); len(errs) == 0 {
		t.Fatal("a store whose registry drives every kind passes")
	} else {
		t.Logf("the planted registry: %d problems, the first %v", len(errs), errs[0])
	}
}
