package oncall_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tendhq/tend/oncall"
	"github.com/tendhq/tend/registry"
	sm "github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// setStatus writes st as the status of the document under key, as its
// controller would.
func (f *fixture) setStatus(t *testing.T, key string, st sm.Status[string, string]) {
	t.Helper()
	doc, err := f.b.Get(t.Context(), kind, key)
	if err != nil {
		t.Fatal(err)
	}
	doc.Status, _ = json.Marshal(st)
	if _, err := f.b.UpdateStatus(t.Context(), doc); err != nil {
		t.Fatal(err)
	}
}

// awaiting runs Await in the background; the returned function waits for
// its result, failing the test if it has not returned.
func awaiting(t *testing.T, f *fixture, key string, generation int64) (pending func() bool, result func() (oncall.View, error)) {
	var (
		v    oncall.View
		err  error
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		v, err = f.client.Await(t.Context(), kind, key, generation)
	}()
	pending = func() bool {
		synctest.Wait()
		select {
		case <-done:
			return false
		default:
			return true
		}
	}
	result = func() (oncall.View, error) {
		if pending() {
			t.Fatal("Await has not returned")
		}
		return v, err
	}
	return pending, result
}

// Await returns once the controller observed the generation written and
// settled the document at its intent; never on the status an earlier
// intent left, and not for a document settled in its final pair, which is
// about to be removed.
func TestAwait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t)
		ready := sm.Status[string, string]{Phase: "Ready", Target: "Present", ObservedGeneration: 1}
		f.create(t, "b1", ready)
		if v, err := f.client.Await(t.Context(), kind, "b1", 1); err != nil || v.Phase != "Ready" {
			t.Fatalf("Await of a settled bucket: %+v, %v", v, err)
		}
		// The user asks for the bucket's deletion: generation 2.
		doc, _ := f.b.Get(t.Context(), kind, "b1")
		doc.Spec = []byte(`{"state":"Absent"}`)
		doc, err := f.b.UpdateSpec(t.Context(), doc)
		if err != nil {
			t.Fatal(err)
		}
		pending, result := awaiting(t, f, "b1", doc.Meta.Generation)
		for _, st := range []sm.Status[string, string]{
			{Phase: "Ready", Target: "Present", ObservedGeneration: 1, Since: time.Now()}, // the earlier intent's, rewritten
			{Phase: "Deleting", Target: "Absent", ObservedGeneration: 2,
				Operation: &sm.Operation[string]{ID: "op2", Phase: "Deleting", From: "Ready"}},
			{Phase: "Gone", Target: "Absent", ObservedGeneration: 2},
		} {
			f.setStatus(t, "b1", st)
			if !pending() {
				v, err := result()
				t.Fatalf("Await returned on %v/%v: %+v, %v", st.Target, st.Phase, v, err)
			}
		}
		if err := f.b.Delete(t.Context(), kind, "b1", store.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := result(); !errors.Is(err, oncall.ErrRemoved) || !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Await of a removed bucket: %v", err)
		}
	})
}

// Await ends with the failure of a document held in Fault, the reason of
// a refused intent, or the context's error.
func TestAwaitEnds(t *testing.T) {
	refused := sm.Status[string, string]{Phase: "Deleting", Target: "Absent", ObservedGeneration: 1,
		Operation: &sm.Operation[string]{ID: "op1", Phase: "Deleting", From: "Ready"},
		Refused:   &sm.Refusal[string]{Intent: "Present", Reason: "a bucket being deleted stays deleted"}}
	held := faulted()
	held.ObservedGeneration = 1
	for _, tc := range []struct {
		name  string
		st    sm.Status[string, string]
		check func(error) bool
	}{
		{"held in Fault", held, func(err error) bool {
			var fe *sm.FaultError[string, string]
			return errors.Is(err, sm.ErrHeldInFault) && errors.As(err, &fe) && fe.Failure.Step == "allocate"
		}},
		{"refused", refused, func(err error) bool {
			var re *sm.RefusalError[string, string]
			return errors.Is(err, sm.ErrIntentRefused) && errors.As(err, &re) && re.Reason == "a bucket being deleted stays deleted"
		}},
		{"still failing", failing(), func(err error) bool { return errors.Is(err, context.DeadlineExceeded) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFixture(t)
				f.create(t, "b1", tc.st)
				ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
				defer cancel()
				if _, err := f.client.Await(ctx, kind, "b1", 0); !tc.check(err) {
					t.Fatalf("Await: %v", err)
				}
			})
		})
	}
}

// Await needs the kind's machine.
func TestAwaitUnregistered(t *testing.T) {
	f := newFixture(t)
	if _, err := f.client.Await(t.Context(), "Nothing", "n1", 0); !errors.Is(err, registry.ErrUnregistered) {
		t.Fatalf("Await: %v, want ErrUnregistered", err)
	}
}
