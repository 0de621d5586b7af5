package oncall_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tendhq/tend/history"
	"github.com/tendhq/tend/oncall"
	sm "github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// intentSetter is what the Client and the Remote share for SetIntent.
type intentSetter interface {
	SetIntent(ctx context.Context, kind, key, field, intent string) error
}

// TestSetIntent runs the same checks on the Client and on a Remote: each
// refusal keeps its identity across the wire.
func TestSetIntent(t *testing.T) {
	for _, over := range []string{"client", "remote"} {
		t.Run(over, func(t *testing.T) {
			f := newFixture(t)
			var (
				c     intentSetter = f.client
				actor              = "alice"
			)
			if over == "remote" {
				c, actor = remote(t, f.serve(t, oncall.ServerConfig{Token: token, Authorize: allowAll}), token, "bob"), "bob"
			}
			testSetIntent(t, f, c, actor)
		})
	}
}

func testSetIntent(t *testing.T, f *fixture, c intentSetter, actor string) {
	ready := sm.Status[string, string]{Phase: "Ready", Target: "Present"}
	f.create(t, "b1", ready, "tend.dev/bucket")

	if err := c.SetIntent(t.Context(), kind, "b1", "state", "Absent"); err != nil {
		t.Fatal(err)
	}
	doc, err := f.b.Get(t.Context(), kind, "b1")
	if err != nil {
		t.Fatal(err)
	}
	if string(doc.Spec) != `{"state":"Absent"}` {
		t.Fatalf("spec %s", doc.Spec)
	}
	if h := f.history(t, "b1"); len(h) != 1 || h[0].Name != "set-intent" || h[0].Reason != "intent Absent" || h[0].Actor != actor {
		t.Fatalf("history %+v", h)
	}

	// Deletion requested: its intent is the final state until it is
	// removed, and a change is refused with an error callers branch on.
	if err := f.b.Delete(t.Context(), kind, "b1", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = c.SetIntent(t.Context(), kind, "b1", "state", "Present")
	if !errors.Is(err, sm.ErrTerminating) || !errors.Is(err, sm.ErrIntentRefused) {
		t.Fatalf("got %v, want an error matching ErrTerminating and ErrIntentRefused", err)
	}
	if doc, _ := f.b.Get(t.Context(), kind, "b1"); string(doc.Spec) != `{"state":"Absent"}` {
		t.Fatalf("spec %s written", doc.Spec)
	}

	// The machine's own refusal.
	f.create(t, "b2", sm.Status[string, string]{Phase: "Deleting", Target: "Absent"})
	if err := c.SetIntent(t.Context(), kind, "b2", "state", "Absent"); err != nil {
		t.Fatal(err)
	}
	err = c.SetIntent(t.Context(), kind, "b2", "state", "Present")
	if !errors.Is(err, sm.ErrIntentRefused) || errors.Is(err, sm.ErrTerminating) || !strings.Contains(err.Error(), "stays deleted") {
		t.Fatalf("got %v, want the machine's refusal", err)
	}

	// A kind no machine drives: refused before anything is written.
	hk := history.KindFor(kind)
	before, _ := f.b.Get(t.Context(), hk, "b2")
	if err := c.SetIntent(t.Context(), hk, "b2", "state", "Absent"); !errors.Is(err, oncall.ErrNotDriven) {
		t.Fatalf("SetIntent on %s: %v, want ErrNotDriven", hk, err)
	}
	if after, _ := f.b.Get(t.Context(), hk, "b2"); after.Meta.Revision != before.Meta.Revision {
		t.Fatalf("SetIntent on %s wrote the document", hk)
	}
}
