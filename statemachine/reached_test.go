package statemachine_test

import (
	"errors"
	"testing"

	"github.com/tendhq/tend/statemachine"
)

func TestReached(t *testing.T) {
	m, err := statemachine.New(gateway())
	if err != nil {
		t.Fatal(err)
	}
	failure := &statemachine.Failure[Phase]{Step: "create_database", Cause: statemachine.CauseTerminal, Reason: "quota exceeded"}
	for _, tc := range []struct {
		name   string
		intent State
		st     statemachine.Status[State, Phase]
		want   bool
		err    error
	}{
		{"settled", Running, statemachine.Status[State, Phase]{Phase: Started, Target: Running}, true, nil},
		{"settled at the final pair", Deleted, statemachine.Status[State, Phase]{Phase: DeletedPhase, Target: Deleted}, true, nil},
		{"ruled, not begun", Stopped, statemachine.Status[State, Phase]{Phase: Started, Target: Running}, false, nil},
		{"an operation runs", Running, statemachine.Status[State, Phase]{Phase: Starting, Target: Running,
			Operation: &statemachine.Operation[Phase]{ID: "op", Phase: Starting, From: Created}}, false, nil},
		{"held in Fault", Running, statemachine.Status[State, Phase]{Phase: Failed, Target: Running, Failure: failure}, false, statemachine.ErrHeldInFault},
		{"leaving Fault by a rule", Deleted, statemachine.Status[State, Phase]{Phase: Failed, Target: Running, Failure: failure}, false, nil},
		{"refused", Running, statemachine.Status[State, Phase]{Phase: Deleting, Target: Deleted,
			Refused: &statemachine.Refusal[State]{Intent: Running, Reason: "no"}}, false, statemachine.ErrIntentRefused},
		{"an unknown phase", Running, statemachine.Status[State, Phase]{Phase: "Flying"}, false, statemachine.ErrUnknownPhase},
	} {
		got, err := m.Reached(tc.intent, tc.st)
		if got != tc.want || !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
			t.Errorf("%s: Reached = %t, %v; want %t, %v", tc.name, got, err, tc.want, tc.err)
		}
	}
	_, err = m.Reached(Running, statemachine.Status[State, Phase]{Phase: Failed, Target: Running, Failure: failure})
	var fe *statemachine.FaultError[State, Phase]
	if !errors.As(err, &fe) || fe.Failure != failure || fe.Intent != Running || fe.Phase != Failed {
		t.Errorf("FaultError: %#v", err)
	}
}
