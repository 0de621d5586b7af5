package oncall_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/internal/evolvetest"
	"github.com/tendhq/tend/oncall"
	"github.com/tendhq/tend/registry"
	sm "github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// servicesOfV1 returns a store where version 1 of the Service machine is
// recorded, with three documents it wrote: one half-way through
// provisioning, one serving the intent Legacy, one idle.
func servicesOfV1(t *testing.T) *memory.Store {
	t.Helper()
	mem, err := memory.New(memory.Config{Kinds: []string{evolvetest.Kind, registry.Kind}})
	if err != nil {
		t.Fatal(err)
	}
	v1, err := sm.New(evolvetest.V1())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := registry.Put(t.Context(), mem, registry.Entry{Kind: evolvetest.Kind, Machine: v1.Descriptor(), Digest: v1.Digest()}); err != nil {
		t.Fatal(err)
	}
	for key, st := range map[string]sm.Status[string, string]{
		"mid":  {Phase: "Provisioning", Target: "Up", Operation: &sm.Operation[string]{ID: "op1", Phase: "Provisioning", Done: []string{"reserve", "configure"}}},
		"old":  {Phase: "Ready", Target: "Legacy"},
		"idle": {Phase: "Idle", Target: "Down"},
	} {
		doc, err := mem.Create(t.Context(), store.Document{Meta: store.Meta{Kind: evolvetest.Kind, Key: key}, Spec: []byte(`{"state":"` + st.Target + `"}`)})
		if err != nil {
			t.Fatal(err)
		}
		if doc.Status, err = json.Marshal(st); err != nil {
			t.Fatal(err)
		}
		if _, err := mem.UpdateStatus(t.Context(), doc); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := mem.Create(t.Context(), store.Document{Meta: store.Meta{Kind: evolvetest.Kind, Key: "unwritten"}, Spec: []byte(`{"state":"Up"}`)}); err != nil {
		t.Fatal(err)
	}
	return mem
}

func descriptorOf(t *testing.T, d sm.Definition[string, string]) sm.Descriptor {
	t.Helper()
	m, err := sm.New(d)
	if err != nil {
		t.Fatal(err)
	}
	return m.Descriptor()
}

// DiffMachine shows what a new version changes and which documents it
// carries on; the version that forgets its migrations (the planted
// defect) is shown to strand two of them.
func TestDiffMachine(t *testing.T) {
	c, err := oncall.New(servicesOfV1(t), oncall.Config{Actor: "ann"})
	if err != nil {
		t.Fatal(err)
	}
	diff, err := c.DiffMachine(t.Context(), evolvetest.Kind, descriptorOf(t, evolvetest.V2(true)))
	if err != nil {
		t.Fatal(err)
	}
	if diff.Documents != 4 || diff.Carried != 2 || diff.Stranded != nil || diff.Recorded.Version != 0 || diff.Next.Version != 2 ||
		diff.Recorded.Digest == diff.Next.Digest || !strings.Contains(diff.Changes.String(), "phase Provisioning: renamed to Deploying") {
		t.Fatalf("diff with migrations: %+v", diff)
	}
	diff, err = c.DiffMachine(t.Context(), evolvetest.Kind, descriptorOf(t, evolvetest.V2(false)))
	if err != nil {
		t.Fatal(err)
	}
	if s := diff.Stranded; s == nil || s.Total != 2 || !errors.Is(s, sm.ErrStranded) || !strings.Contains(s.Error(), "phase Provisioning is not a phase") {
		t.Fatalf("diff without migrations: stranded %v", diff.Stranded)
	}
	if _, err := c.DiffMachine(t.Context(), "Nothing", descriptorOf(t, evolvetest.V2(true))); !errors.Is(err, registry.ErrUnregistered) {
		t.Fatalf("an unregistered kind: %v", err)
	}
	broken := descriptorOf(t, evolvetest.V2(true))
	broken.Initial = "Nowhere"
	if _, err := c.DiffMachine(t.Context(), evolvetest.Kind, broken); !errors.Is(err, sm.ErrUnknownPhase) {
		t.Fatalf("a machine that does not build: %v", err)
	}
}
