package driver_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	sm "github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// terminatingGateway returns a fixture with a gateway settled Started whose
// deletion was requested and seen by the driver: its Deleting steps fail,
// so it stays Terminating.
func terminatingGateway(t *testing.T) (*gwFixture, func()) {
	t.Helper()
	ctx := context.Background()
	f := newGWFixture(t)
	d := f.driver(t, f.config())
	f.create(t, "gw", gwRunning)
	settle(t, d, "gw")
	f.world.hook = func(r stepRun) (sm.Outcome, error) {
		if strings.HasPrefix(r.step, "delete_") {
			return sm.Failed, errInjected
		}
		return 0, nil
	}
	if err := f.coll.Delete(ctx, "gw", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	reconcile := func() { _, _ = d.Reconcile(ctx, "gw") } // its step fails: an error is expected
	reconcile()
	if obj := f.get(t, "gw"); !obj.Terminating() || !obj.Status.ObservedDeletion {
		t.Fatalf("terminating %t, deletion observed %t", obj.Terminating(), obj.Status.ObservedDeletion)
	}
	return f, reconcile
}

// A change of intent on a document whose deletion was requested is refused
// by the driver's UpdateSpec with an error callers branch on; one written
// straight to the store is not acted on and is reported in status.
func TestDriverTerminatingIntent(t *testing.T) {
	ctx := context.Background()
	t.Run("UpdateSpec refuses it", func(t *testing.T) {
		f, _ := terminatingGateway(t)
		d := f.driver(t, f.config())
		_, err := d.UpdateSpec(ctx, "gw", func(s *gwSpec) { s.State = gwStopped })
		if !errors.Is(err, sm.ErrTerminating) || !errors.Is(err, sm.ErrIntentRefused) {
			t.Fatalf("got %v, want an error matching ErrTerminating and ErrIntentRefused", err)
		}
		if got := f.get(t, "gw").Spec.State; got != gwRunning {
			t.Fatalf("intent %v written", got)
		}
		// The final state itself is no change worth refusing.
		if _, err := d.UpdateSpec(ctx, "gw", func(s *gwSpec) { s.State = gwDeleted }); err != nil {
			t.Fatalf("setting the final state: %v", err)
		}
	})
	t.Run("a change written to the store is reported", func(t *testing.T) {
		f, reconcile := terminatingGateway(t)
		obj := f.get(t, "gw")
		obj.Spec.State = gwStopped
		if _, err := f.coll.UpdateSpec(ctx, obj); err != nil {
			t.Fatal(err)
		}
		for range 2 { // reported, then kept
			reconcile()
			st := f.get(t, "gw").Status
			if r := st.Refused; r == nil || r.Intent != gwStopped || !strings.Contains(r.Reason, "deletion was requested") {
				t.Fatalf("refused %+v, want intent Stopped refused: deletion was requested", r)
			}
			if st.Phase != phDeleting {
				t.Fatalf("phase %v, want Deleting", st.Phase)
			}
		}
	})
}
