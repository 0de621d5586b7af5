package driver_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tendhq/tend/driver"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/controller"
	sm "github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// jobMachine has a Fault phase: a job that fails terminally waits in Failed
// for an operator, who can only delete it.
func jobMachine(t testing.TB) *sm.Machine[string, string] {
	t.Helper()
	m, err := sm.New(sm.Definition[string, string]{
		Name:    "Job",
		States:  []string{"Done", "Deleted"},
		Initial: "Pending",
		Phases: []sm.PhaseSpec[string]{
			{Phase: "Pending"},
			{Phase: "Running", Type: sm.Transitional, Steps: []string{"work"}, Completion: []sm.Require{sm.Is("worked")}, Then: "Finished"},
			{Phase: "Finished"},
			{Phase: "Deleting", Type: sm.Transitional, NoReturn: true, Steps: []string{"clean"}, Completion: []sm.Require{sm.Is("cleaned")}, Then: "Deleted"},
			{Phase: "Deleted", Type: sm.Terminal},
			{Phase: "Failed", Type: sm.Fault},
		},
		Settled: []sm.Settle[string, string]{
			{State: "Done", Phase: "Finished"},
			{State: "Deleted", Phase: "Deleted", Final: true},
		},
		Rules: []sm.Rule[string, string]{
			{State: "Done", Phase: "Pending", Begin: "Running"},
			{State: "Deleted", Phase: "Pending", Begin: "Deleting"},
			{State: "Deleted", Phase: "Finished", Begin: "Deleting"},
			{State: "Deleted", Phase: "Failed", Begin: "Deleting"},
		},
		Refusals:    []sm.RefusalRule[string, string]{{States: []string{"Done"}, Phases: []string{"Deleting"}, Reason: "a job being deleted cannot be done"}},
		Unreachable: []sm.Pair[string, string]{{State: "Done", Phase: "Deleted"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

type jobSpec struct {
	State string `json:"state"`
}

func (s jobSpec) Intent() string { return s.State }

type jobStatus struct {
	sm.Status[string, string]
}

type jobObject = store.Object[jobSpec, jobStatus]

// TestDriverTerminalFailure checks that a step's terminal failure, whether
// told by its outcome or by a Terminal error, moves the document to the
// Fault phase with its reason, is returned as a terminal error, holds the
// document there, and that deleting it still cleans it up and removes it.
func TestDriverTerminalFailure(t *testing.T) {
	for _, tc := range []struct {
		name string
		work func() (sm.Outcome, error)
	}{
		{"outcome", func() (sm.Outcome, error) { return sm.FailedTerminal, errors.New("quota exceeded") }},
		{"terminal error", func() (sm.Outcome, error) { return 0, controller.Terminal(errors.New("quota exceeded")) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem, err := memory.New(memory.Config{Kinds: []string{"Job"}})
			if err != nil {
				t.Fatal(err)
			}
			jobs, err := store.NewCollection[jobSpec, jobStatus](mem, "Job", store.CollectionConfig{})
			if err != nil {
				t.Fatal(err)
			}
			cleaned := 0
			d, err := driver.New(jobs, jobMachine(t), driver.Config[jobSpec, jobStatus]{
				Steps: map[string]driver.StepFunc[jobSpec, jobStatus]{
					"work": func(context.Context, *jobObject, string) (sm.Outcome, error) { return tc.work() },
					"clean": func(context.Context, *jobObject, string) (sm.Outcome, error) {
						cleaned++
						return sm.Done, nil
					},
				},
				Observers: map[string]driver.ObserverFunc[jobSpec, jobStatus]{
					"worked":  func(context.Context, *jobObject) (bool, string, error) { return true, "", nil },
					"cleaned": func(context.Context, *jobObject) (bool, string, error) { return cleaned > 0, "", nil },
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if _, err := jobs.Create(ctx, &jobObject{Meta: store.Meta{Key: "j"}, Spec: jobSpec{State: "Done"}}); err != nil {
				t.Fatal(err)
			}
			_, err = d.Reconcile(ctx, "j")
			if !errors.Is(err, controller.ErrTerminal) || !strings.Contains(err.Error(), "quota exceeded") {
				t.Fatalf("reconcile: %v, want a terminal error with the reason", err)
			}
			obj, err := jobs.Get(ctx, "j")
			if err != nil {
				t.Fatal(err)
			}
			if st := obj.Status; st.Phase != "Failed" || st.Failure == nil || st.Failure.Step != "work" ||
				!strings.Contains(st.Failure.Reason, "quota exceeded") || st.Operation != nil {
				t.Fatalf("status %+v, want the Fault phase with the failure", st.Status)
			}
			rev := obj.Revision
			if res, err := d.Reconcile(ctx, "j"); err != nil || res != (controller.Result{}) {
				t.Fatalf("held: reconcile = %+v, %v; want done", res, err)
			}
			if obj, _ := jobs.Get(ctx, "j"); obj.Revision != rev {
				t.Errorf("a held document was written")
			}

			if err := jobs.Delete(ctx, "j", store.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			if res, err := d.Reconcile(ctx, "j"); err != nil || res != (controller.Result{}) {
				t.Fatalf("deleting: reconcile = %+v, %v; want done", res, err)
			}
			if _, err := jobs.Get(ctx, "j"); !errors.Is(err, store.ErrNotFound) || cleaned != 1 {
				t.Fatalf("after deletion: get %v, cleanups %d; want gone after one cleanup", err, cleaned)
			}
		})
	}
}

// TestDriverUnknownIntent checks that an intent the machine does not know is
// a terminal error naming it: retrying cannot help until the spec changes.
func TestDriverUnknownIntent(t *testing.T) {
	f := newGWFixture(t)
	d := f.driver(t, f.config())
	f.create(t, "gw", "Flying")
	_, err := d.Reconcile(context.Background(), "gw")
	if !errors.Is(err, controller.ErrTerminal) || !errors.Is(err, sm.ErrUnknownState) || !strings.Contains(err.Error(), "Flying") {
		t.Fatalf("reconcile: %v, want a terminal unknown-state error", err)
	}
	if st := f.get(t, "gw").Status; st.Operation != nil || st.Refused == nil || st.Refused.Intent != "Flying" ||
		!strings.Contains(st.Refused.Reason, "Running, Stopped, Restarting, Deleted") {
		t.Errorf("status %+v, want the unknown intent refused with the machine's states", st.Status)
	}
}
