package statemachine_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tendhq/tend/statemachine"
)

// certificate is a machine with a point of no return: a revoked certificate
// stays revoked, but can still be deleted.
func certificate() def {
	T := statemachine.Transitional
	is := statemachine.Is
	return def{
		Name:    "Certificate",
		States:  []string{"Active", "Revoke", "Deleted"},
		Initial: "Issuing",
		Phases: []statemachine.PhaseSpec[string]{
			{Phase: "Issuing", Type: T, Steps: []string{"issue"}, Completion: []statemachine.Require{is("issued")}, Then: "Issued"},
			{Phase: "Issued"},
			{Phase: "Revoking", Type: T, NoReturn: true, Steps: []string{"revoke"}, Completion: []statemachine.Require{is("revoked")}, Then: "Revoked"},
			{Phase: "Revoked", NoReturn: true},
			{Phase: "Deleting", Type: T, Steps: []string{"delete"}, Completion: []statemachine.Require{statemachine.Not("issued")}, Then: "Gone"},
			{Phase: "Gone", Type: statemachine.Terminal},
			{Phase: "Failed", Type: statemachine.Fault},
		},
		Settled: []statemachine.Settle[string, string]{
			{State: "Active", Phase: "Issued"},
			{State: "Revoke", Phase: "Revoked"},
			{State: "Deleted", Phase: "Gone", Final: true},
		},
		Rules: []statemachine.Rule[string, string]{
			{State: "Revoke", Phase: "Issued", Begin: "Revoking"},
			{State: "Deleted", Phase: "Issued", Begin: "Deleting"},
			{State: "Deleted", Phase: "Revoked", Begin: "Deleting"},
			{State: "Deleted", Phase: "Failed", Begin: "Deleting"},
		},
		Refusals: []statemachine.RefusalRule[string, string]{
			{States: []string{"Active"}, Phases: []string{"Revoking", "Revoked"}, Reason: "a revoked certificate stays revoked"},
			{States: []string{"Active", "Revoke"}, Phases: []string{"Deleting", "Gone"}, Reason: "a deleted certificate is gone"},
		},
	}
}

// TestLivenessHoles has one machine per kind of liveness hole. Each is
// rejected with an error naming the offending pair and, for the liveness
// check, the path that dead-ends or loops.
func TestLivenessHoles(t *testing.T) {
	if _, err := statemachine.New(certificate()); err != nil {
		t.Fatalf("the certificate machine must build: %v", err)
	}
	tests := []struct {
		name string
		edit func(*def)
		want named
		path string // a part of the message: the path to the dead end
	}{
		{"forgotten deletion rule past a point of no return", func(d *def) {
			d.Rules = d.Rules[:2] // (Deleted, Revoked) and (Deleted, Failed) forgotten
			d.Rules = append(d.Rules, statemachine.Rule[string, string]{State: "Deleted", Phase: "Failed", Begin: "Deleting"})
		}, named{"Deleted", "Revoked", statemachine.ErrUncovered}, "stuck"},
		{"final intent held in the fault phase", func(d *def) {
			d.Rules = d.Rules[:3]
		}, named{"Deleted", "Failed", statemachine.ErrUncovered}, "could never end its life"},
		{"refusal that is not declared", func(d *def) {
			d.Refusals = d.Refusals[1:]
		}, named{"Active", "Revoked", statemachine.ErrUncovered}, "stuck"},
		{"operation with nowhere to fail to", func(d *def) {
			d.Phases = d.Phases[:6]
			d.Rules = d.Rules[:3]
		}, named{"", "Issuing", statemachine.ErrIncomplete}, "nowhere to go past its deadline"},
		{"failure target that dead-ends", func(d *def) {
			d.Phases[4].FailTo = "Revoked" // a failed deletion parks the certificate as revoked…
			d.Rules = d.Rules[:2]          // …where nothing deletes it
			d.Rules = append(d.Rules, statemachine.Rule[string, string]{State: "Deleted", Phase: "Failed", Begin: "Deleting"})
			d.Unreachable = []statemachine.Pair[string, string]{{State: "Deleted", Phase: "Revoked"}}
		}, named{"Deleted", "Deleting", statemachine.ErrNoProgress}, "Deleting → Revoked reaches (Deleted, Revoked), declared unreachable"},
		{"abort into a loop", func(d *def) {
			d.Aborts = []statemachine.AbortRule[string, string]{{State: "Deleted", Phase: "Issuing", To: "Revoking"}}
			d.Rules[2] = statemachine.Rule[string, string]{State: "Deleted", Phase: "Revoked", Begin: "Revoking"}
			d.Cycles = []statemachine.Edge[string]{{From: "Revoked", To: "Revoking"}}
		}, named{"Deleted", "Issuing", statemachine.ErrNoProgress}, "loops without settling"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := certificate()
			tt.edit(&d)
			_, err := statemachine.New(d)
			if err == nil {
				t.Fatal("built")
			}
			found := false
			for _, o := range offenders(err) {
				if o == tt.want {
					found = true
				}
			}
			if !found {
				t.Fatalf("error does not name %+v:\n%v", tt.want, err)
			}
			if !strings.Contains(err.Error(), tt.path) {
				t.Errorf("error does not say %q:\n%v", tt.path, err)
			}
		})
	}
}

// TestRefusalIsDeclared: an intent is refused only where the machine says,
// with the machine's reason, both when it is written (Admit) and when it is
// found (Decide, recorded by Apply).
func TestRefusalIsDeclared(t *testing.T) {
	m := mustNew(t, certificate())
	err := m.Admit("Active", "Revoked")
	var re *statemachine.RefusalError[string, string]
	if !errors.As(err, &re) || re.Reason != "a revoked certificate stays revoked" || !errors.Is(err, statemachine.ErrIntentRefused) {
		t.Fatalf("Admit(Active, Revoked) = %v", err)
	}
	if err := m.Admit("Deleted", "Revoked"); err != nil {
		t.Fatalf("Admit(Deleted, Revoked) = %v", err)
	}
	st := status{Phase: "Revoked", Target: "Revoke"}
	d, err := m.Decide("Active", st, now)
	if err != nil || d.Refused == nil || d.Action != statemachine.Nothing || d.Intent != "Revoke" {
		t.Fatalf("Decide = %+v, %v", d, err)
	}
	got, _ := m.Apply(st, d, statemachine.Report{Now: now})
	if got.Refused == nil || got.Refused.Intent != "Active" || got.Refused.Reason != "a revoked certificate stays revoked" {
		t.Fatalf("refusal not recorded: %+v", got.Refused)
	}
	d, _ = m.Decide("Revoke", got, now)
	if got, _ = m.Apply(got, d, statemachine.Report{Now: now}); got.Refused != nil {
		t.Fatalf("refusal kept after the intent changed back: %+v", got.Refused)
	}
	if err := m.ValidateIntent("Paused"); !errors.Is(err, statemachine.ErrUnknownState) || !strings.Contains(err.Error(), "Active, Revoke, Deleted") {
		t.Fatalf("ValidateIntent = %v, want the states listed", err)
	}
}

// TestBounds drives one operation through its bounds: backoff from the
// retry time in status, attempts used up, the deadline, and the resume of
// the failed operation when a rule out of the Fault phase begins its phase
// again.
func TestBounds(t *testing.T) {
	d := certificate()
	d.Phases[4].Bounds = statemachine.Bounds{Deadline: time.Hour, MaxAttempts: 3}
	m := mustNew(t, d)
	t0 := now
	st := status{Phase: "Issued", Target: "Active"}
	dec, _ := m.Decide("Deleted", st, t0)
	if !m.NeedsOperationID(dec) {
		t.Fatal("a Begin into a transitional phase needs an operation id")
	}
	st, _ = m.Apply(st, dec, statemachine.Report{OperationID: "op1", Now: t0})
	if !st.Since.Equal(t0) {
		t.Fatalf("Since = %v", st.Since)
	}
	fail := func(at time.Time, retry time.Duration) {
		t.Helper()
		dec, err := m.Decide("Deleted", st, at)
		if err != nil || dec.Action != statemachine.Run || !dec.Deadline.Equal(t0.Add(time.Hour)) {
			t.Fatalf("Decide at %v = %+v, %v; want Run with the deadline", at, dec, err)
		}
		st, err = m.Apply(st, dec, statemachine.Report{Outcome: statemachine.Failed, Err: errors.New("quota exceeded"), Now: at, RetryAfter: retry})
		if err != nil {
			t.Fatal(err)
		}
	}
	fail(t0, time.Minute)
	if dec, _ := m.Decide("Deleted", st, t0.Add(30*time.Second)); dec.Action != statemachine.Backoff || !dec.Until.Equal(t0.Add(time.Minute)) {
		t.Fatalf("before the retry time: %+v, want Backoff until %v", dec, t0.Add(time.Minute))
	}
	fail(t0.Add(time.Minute), 2*time.Minute)
	fail(t0.Add(3*time.Minute), 4*time.Minute) // the third attempt uses them up
	if st.Phase != "Failed" || st.Failure == nil || st.Failure.Cause != statemachine.CauseAttempts ||
		!strings.Contains(st.Failure.Reason, "failed 3 times") || st.Failure.Step != "delete" {
		t.Fatalf("after 3 attempts: %+v / %+v", st, st.Failure)
	}

	// The rule out of Failed begins Deleting again: the same operation
	// resumes, its failure count and retry time kept, with a new deadline.
	t1 := t0.Add(4 * time.Minute)
	dec, _ = m.Decide("Deleted", st, t1)
	st, _ = m.Apply(st, dec, statemachine.Report{OperationID: "op2", Now: t1})
	if st.Operation == nil || st.Operation.ID != "op1" || st.Operation.Attempts != 3 || !st.Since.Equal(t1) ||
		!st.Operation.RetryAt.Equal(t0.Add(7*time.Minute)) || st.Failure != nil {
		t.Fatalf("resumed operation: %+v", st.Operation)
	}
	if dec, _ := m.Decide("Deleted", st, t1); dec.Action != statemachine.Backoff {
		t.Fatalf("a resumed operation waits for its retry time: %+v", dec)
	}

	// Steps done, waiting for a completion that never comes: the deadline.
	dec, _ = m.Decide("Deleted", st, t0.Add(7*time.Minute))
	st, _ = m.Apply(st, dec, statemachine.Report{Outcome: statemachine.Done, Now: t0.Add(7 * time.Minute)})
	if dec, _ := m.Decide("Deleted", st, t1.Add(59*time.Minute)); dec.Action != statemachine.Wait {
		t.Fatalf("before the deadline: %+v", dec)
	}
	dec, _ = m.Decide("Deleted", st, t1.Add(time.Hour))
	if dec.Action != statemachine.Expire || dec.Next != "Failed" || !strings.Contains(dec.Reason, "still waiting for !issued") {
		t.Fatalf("at the deadline: %+v", dec)
	}
	// Completion wins over an expired deadline.
	if done, _ := m.Decide("Deleted", st.Observe(t1, statemachine.Observation{Name: "issued", Status: false}), t1.Add(time.Hour)); done.Action != statemachine.Complete {
		t.Fatalf("completion past the deadline: %+v", done)
	}
	st, _ = m.Apply(st, dec, statemachine.Report{Now: t1.Add(time.Hour)})
	if st.Phase != "Failed" || st.Failure.Cause != statemachine.CauseDeadline {
		t.Fatalf("expired: %+v", st.Failure)
	}
}

// TestAbort: a declared abort stops an operation at its next step boundary
// when the intent changes, and begins its target.
func TestAbort(t *testing.T) {
	g := mustNew(t, gateway())
	st := statemachine.Status[State, Phase]{Phase: Starting, Target: Running,
		Operation: &statemachine.Operation[Phase]{ID: "s1", Phase: Starting, From: Created, Done: []string{"create_deployment"}}, Since: now}
	if dec, _ := g.Decide(Running, st, now); dec.Action != statemachine.Run {
		t.Fatalf("same intent: %+v", dec)
	}
	dec, _ := g.Decide(Deleted, st, now)
	if dec.Action != statemachine.Abort || dec.Next != Deleting || !g.NeedsOperationID(dec) {
		t.Fatalf("Deleted while Starting: %+v", dec)
	}
	got, err := g.Apply(st, dec, statemachine.Report{OperationID: "d1", Now: now})
	if err != nil || got.Phase != Deleting || got.Target != Deleted || got.Operation.ID != "d1" || got.Operation.From != Starting {
		t.Fatalf("after the abort: %+v, %v", got, err)
	}
	// Without a declared abort the operation goes on.
	if dec, _ := g.Decide(Restarting, st, now); dec.Action != statemachine.Run {
		t.Fatalf("Restarting while Starting: %+v", dec)
	}
}

// TestRequests serves request tokens: coalesced by default, one at a time
// with Queue, recorded without an operation where moot or refused, and
// waiting elsewhere; a served token is never served again.
func TestRequests(t *testing.T) {
	d := certificate()
	d.Requests = []statemachine.RequestRule[string]{
		{Name: "reissue", Serve: []statemachine.Edge[string]{{From: "Issued", To: "Issuing"}}},
		{Name: "rotate", Queue: true, Serve: []statemachine.Edge[string]{{From: "Issued", To: "Issuing"}}},
		{Name: "audit", Moot: []string{"Issued"}, Refuse: []string{"Revoked"}, Reason: "a revoked certificate is not audited"},
	}
	m := mustNew(t, d)
	serve := func(st status, intent string) (status, statemachine.Decision[string, string]) {
		t.Helper()
		dec, err := m.Decide(intent, st, now)
		if err != nil {
			t.Fatal(err)
		}
		st, err = m.Apply(st, dec, statemachine.Report{OperationID: "op", Now: now})
		if err != nil {
			t.Fatal(err)
		}
		if st.Operation != nil { // complete it at once
			st.Operation.Done = []string{"issue"}
			st = st.Observe(now, statemachine.Observation{Name: "issued", Status: true})
			dec, _ := m.Decide(intent, st, now)
			st, _ = m.Apply(st, dec, statemachine.Report{Now: now})
		}
		return st, dec
	}
	st := status{Phase: "Issued", Target: "Active"}.Request("reissue", "a", "b")
	st, dec := serve(st, "Active")
	if dec.Request != "reissue" || !slices.Equal(dec.Tokens, []string{"a", "b"}) || !slices.Equal(st.Requests[0].Served, []string{"a", "b"}) {
		t.Fatalf("coalesced: decision %+v, requests %+v", dec, st.Requests)
	}
	if _, dec = serve(st, "Active"); dec.Action != statemachine.Nothing || dec.Request != "" {
		t.Fatalf("a served token served again: %+v", dec)
	}

	st = status{Phase: "Issued", Target: "Active"}.Request("rotate", "r1", "r2")
	st, dec = serve(st, "Active")
	if !slices.Equal(dec.Tokens, []string{"r1"}) {
		t.Fatalf("queued: first served %v, want r1 alone", dec.Tokens)
	}
	st, dec = serve(st, "Active")
	if !slices.Equal(dec.Tokens, []string{"r2"}) || !slices.Equal(st.Requests[0].Served, []string{"r1", "r2"}) {
		t.Fatalf("queued: second served %v, requests %+v", dec.Tokens, st.Requests)
	}
	// The spec drops a served token: it is forgotten, never served again.
	if st = st.Request("rotate", "r2"); !slices.Equal(st.Requests[0].Served, []string{"r2"}) {
		t.Fatalf("served tokens the spec no longer carries are kept: %+v", st.Requests)
	}

	st, dec = serve(status{Phase: "Issued", Target: "Active"}.Request("audit", "x"), "Active")
	if dec.Action != statemachine.Nothing || dec.Request != "audit" || !slices.Equal(st.Requests[0].Served, []string{"x"}) || st.Requests[0].Refused != "" {
		t.Fatalf("moot: %+v, %+v", dec, st.Requests)
	}
	st, _ = serve(status{Phase: "Revoked", Target: "Revoke"}.Request("audit", "y"), "Revoke")
	if st.Requests[0].Refused != "a revoked certificate is not audited" || !slices.Equal(st.Requests[0].Served, []string{"y"}) {
		t.Fatalf("refused: %+v", st.Requests)
	}
	// Not settled (the intent's rule applies first): the request waits.
	if dec, _ := m.Decide("Revoke", status{Phase: "Issued", Target: "Active"}.Request("reissue", "z"), now); dec.Next != "Revoking" || dec.Request != "" {
		t.Fatalf("a request served before the intent: %+v", dec)
	}
}
