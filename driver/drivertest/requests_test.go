package drivertest

import (
	"testing"

	sm "github.com/tendhq/tend/statemachine"
)

// A request token is served once: carried by one operation, or by a later
// one when the first ended leaving it pending (aborted by a change of
// intent, or moved away from by an operator). Carried again after it was
// served or withdrawn, it is served twice.
func TestRequestCarriers(t *testing.T) {
	carrying := func(id string) *sm.Operation[string] {
		return &sm.Operation[string]{ID: id, Phase: "Making", Request: "restart", Tokens: []string{"t1"}}
	}
	other := &sm.Operation[string]{ID: "b", Phase: "Making"}
	pending := []sm.RequestState{{Name: "restart", Tokens: []string{"t1"}}}
	served := []sm.RequestState{{Name: "restart", Tokens: []string{"t1"}, Served: []string{"t1"}}}
	tests := []struct {
		name   string
		writes []sm.Status[string, string] // in revision order
		want   string                      // the problem found ("": none)
	}{
		{name: "aborted, then carried again", writes: []sm.Status[string, string]{
			{Operation: carrying("a"), Requests: pending},
			{Operation: other, Requests: pending},
			{Operation: carrying("c"), Requests: pending},
		}},
		{name: "failed, moved away from, then carried again", writes: []sm.Status[string, string]{
			{Operation: carrying("a"), Requests: pending},
			{Failure: &sm.Failure[string]{Operation: *carrying("a")}, Requests: pending},
			{Requests: pending},
			{Operation: carrying("c"), Requests: pending},
		}},
		{name: "failed, then resumed", writes: []sm.Status[string, string]{
			{Operation: carrying("a"), Requests: pending},
			{Failure: &sm.Failure[string]{Operation: *carrying("a")}, Requests: pending},
			{Operation: carrying("a"), Requests: pending},
			{Requests: served},
		}},
		{name: "served, then carried again", writes: []sm.Status[string, string]{
			{Operation: carrying("a"), Requests: pending},
			{Requests: served},
			{Operation: carrying("c"), Requests: served},
		}, want: "request restart t1 served by 2 operations: op1, op2"},
		{name: "withdrawn, then carried again", writes: []sm.Status[string, string]{
			{Operation: carrying("a"), Requests: pending},
			{Operation: other},
			{Operation: carrying("c"), Requests: pending},
		}, want: "request restart t1 served by 2 operations: op1, op2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := accountingRun(t)
			for i := range tt.writes {
				// As the run's watch does with each write.
				if i > 0 {
					r.abandoned(&tt.writes[i-1], &tt.writes[i])
				}
				r.requests(&tt.writes[i])
			}
			wantProblem(t, r, tt.want)
		})
	}
}
