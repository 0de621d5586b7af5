package oncall_test

import (
	"errors"
	"strings"
	"testing"

	sm "github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

func TestSetIntent(t *testing.T) {
	f := newFixture(t)
	ready := sm.Status[string, string]{Phase: "Ready", Target: "Present"}
	f.create(t, "b1", ready, "tend.dev/bucket")

	if err := f.client.SetIntent(t.Context(), kind, "b1", "state", "Absent"); err != nil {
		t.Fatal(err)
	}
	doc, err := f.b.Get(t.Context(), kind, "b1")
	if err != nil {
		t.Fatal(err)
	}
	if string(doc.Spec) != `{"state":"Absent"}` {
		t.Fatalf("spec %s", doc.Spec)
	}
	if h := f.history(t, "b1"); len(h) != 1 || h[0].Name != "set-intent" || h[0].Reason != "intent Absent" || h[0].Actor != "alice" {
		t.Fatalf("history %+v", h)
	}

	// Deletion requested: its intent is the final state until it is
	// removed, and a change is refused with an error callers branch on.
	if err := f.b.Delete(t.Context(), kind, "b1", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = f.client.SetIntent(t.Context(), kind, "b1", "state", "Present")
	if !errors.Is(err, sm.ErrTerminating) || !errors.Is(err, sm.ErrIntentRefused) {
		t.Fatalf("got %v, want an error matching ErrTerminating and ErrIntentRefused", err)
	}
	if doc, _ := f.b.Get(t.Context(), kind, "b1"); string(doc.Spec) != `{"state":"Absent"}` {
		t.Fatalf("spec %s written", doc.Spec)
	}

	// The machine's own refusal.
	f.create(t, "b2", sm.Status[string, string]{Phase: "Deleting", Target: "Absent"})
	if err := f.client.SetIntent(t.Context(), kind, "b2", "state", "Absent"); err != nil {
		t.Fatal(err)
	}
	err = f.client.SetIntent(t.Context(), kind, "b2", "state", "Present")
	if !errors.Is(err, sm.ErrIntentRefused) || errors.Is(err, sm.ErrTerminating) || !strings.Contains(err.Error(), "stays deleted") {
		t.Fatalf("got %v, want the machine's refusal", err)
	}
}
