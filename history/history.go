package history

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/tendhq/tend/store"
)

// KindSuffix is appended to a kind to name the kind of its histories.
const KindSuffix = "History"

// KindFor returns the kind of the history documents of kind: kind followed by
// [KindSuffix]. The kind must leave room for the suffix within
// store.MaxKindLen.
func KindFor(kind string) string { return kind + KindSuffix }

// Kinds returns the history kinds of kinds, to configure a backend with
// them beside the kinds themselves.
func Kinds(kinds ...string) []string {
	out := make([]string, len(kinds))
	for i, k := range kinds {
		out[i] = KindFor(k)
	}
	return out
}

// Type says what an [Entry] records.
type Type string

// The types of entries. The package documentation of controller says when a
// driver records each.
const (
	// Transition: the document's phase changed from Phase to To, serving
	// Intent.
	Transition Type = "transition"
	// StepStarted: the step Step of operation Operation was called, for its
	// Attempt-th time.
	StepStarted Type = "step-started"
	// StepEnded: the call of a step ended with Outcome after Duration,
	// with Error when it failed.
	StepEnded Type = "step-ended"
	// Refused: the intent Intent was refused in Phase for Reason; the
	// driver keeps serving To.
	Refused Type = "refused"
	// GaveUp: the operation of Phase was given up for Cause (deadline,
	// attempts or terminal) in step Step, for Reason, and the document
	// moved to To.
	GaveUp Type = "gave-up"
	// Drift: a settled document's health failed (Reason lists what was
	// observed), and the driver repairs it by moving to To.
	Drift Type = "drift"
	// Request: the one-shot request Name was served, found moot or refused
	// (Outcome) in Phase, with Reason when refused.
	Request Type = "request"
	// Timer: the timer Name fired in Phase.
	Timer Type = "timer"
	// Operator: the operator Actor acted on the document: Name is the
	// action (pause, resume, remove-finalizer, or a command's verb),
	// Command the command's id, Outcome "issued" when the operator issued
	// it and "applied" or "refused" when its controller carried it out or
	// refused it (Reason says why), Phase and To where it moved the
	// document.
	Operator Type = "operator"
	// Migrated: the document's status, written by an earlier version of
	// its machine, was carried onto version Name of the machine, as its
	// migrations declare: from Phase to To, serving Intent; Reason says
	// what was carried.
	Migrated Type = "migrated"
)

// Entry is one event in the life of a document.
type Entry struct {
	// ID identifies the entry: writing an entry again under its ID
	// changes nothing. [Recorder.Record] and [Recorder.Append] give an
	// entry without one a random ID; see also [OutcomeID] and [IssuedID].
	ID string `json:"id,omitempty"`
	// Time is when the event happened, by the recording replica's clock;
	// for polls collapsed into one entry, when the last ended.
	Time time.Time `json:"time"`
	// Count is how many polls of a step that ended alike the entry stands
	// for (see [Entry.Times]): zero or one for a single event.
	Count int `json:"count,omitempty"`
	// First is when the first of the polls the entry stands for ended; zero
	// for a single event.
	First time.Time `json:"first,omitzero"`
	// Type says what happened and which fields are set.
	Type Type `json:"type"`
	// ReconcileID is the id of the reconcile that recorded the entry, the
	// reconcileID of its log lines and the tend.reconcile.id of its span.
	ReconcileID string `json:"reconcileID,omitempty"`
	// TraceID is the trace of that reconcile, when it was traced.
	TraceID string `json:"traceID,omitempty"`
	// Triggers says why that reconcile ran: its triggers, as
	// controller.TriggerStrings gives them ("spec 3", "owned Gadget g1",
	// "retry").
	Triggers []string `json:"triggers,omitempty"`
	// Replica names the replica that recorded the entry
	// ([RecorderConfig.Replica]).
	Replica string `json:"replica,omitempty"`

	Intent    string        `json:"intent,omitempty"`
	Phase     string        `json:"phase,omitempty"`
	To        string        `json:"to,omitempty"`
	Operation string        `json:"operation,omitempty"`
	Step      string        `json:"step,omitempty"`
	Attempt   int           `json:"attempt,omitempty"`
	Outcome   string        `json:"outcome,omitempty"`
	Duration  time.Duration `json:"duration,omitempty"`
	Name      string        `json:"name,omitempty"`
	Cause     string        `json:"cause,omitempty"`
	Reason    string        `json:"reason,omitempty"`
	Error     string        `json:"error,omitempty"`
	// ErrorClass names the machine's class of a failed step's error
	// (statemachine.ErrorClass); empty when none matched.
	ErrorClass string `json:"errorClass,omitempty"`
	Actor      string `json:"actor,omitempty"`
	Command    string `json:"command,omitempty"`
}

// String returns a one-line account of e, for people.
func (e Entry) String() string {
	s := e.Time.UTC().Format(time.RFC3339Nano) + " " + string(e.Type)
	add := func(name, v string) {
		if v != "" {
			s += " " + name + "=" + v
		}
	}
	add("phase", e.Phase)
	add("to", e.To)
	add("intent", e.Intent)
	add("step", e.Step)
	if e.Attempt > 0 {
		add("attempt", strconv.Itoa(e.Attempt))
	}
	add("outcome", e.Outcome)
	if e.Count > 1 {
		s += " ×" + strconv.Itoa(e.Count)
		add("first", e.First.UTC().Format(time.RFC3339Nano))
	}
	if e.Duration > 0 {
		add("took", e.Duration.String())
	}
	add("name", e.Name)
	add("cause", e.Cause)
	if e.Reason != "" {
		add("reason", strconv.Quote(e.Reason))
	}
	if e.Error != "" {
		add("error", strconv.Quote(e.Error))
	}
	add("class", e.ErrorClass)
	add("actor", e.Actor)
	add("command", e.Command)
	add("reconcile", e.ReconcileID)
	return s
}

// MaxFieldLen is the longest text field an entry keeps, in bytes; a longer
// one is cut and ends with "…".
const MaxFieldLen = 1024

// bound cuts e's text fields to MaxFieldLen.
func (e *Entry) bound() {
	for _, f := range []*string{&e.ID, &e.Intent, &e.Phase, &e.To, &e.Operation, &e.Step, &e.Outcome, &e.Name, &e.Cause, &e.Reason, &e.Error, &e.ReconcileID, &e.TraceID, &e.Replica, &e.Actor, &e.Command} {
		if len(*f) > MaxFieldLen {
			cut := MaxFieldLen - len("…")
			for cut > 0 && (*f)[cut]&0xC0 == 0x80 { // not inside a UTF-8 sequence
				cut--
			}
			*f = (*f)[:cut] + "…"
		}
	}
}

// log is the Spec of a history document: its entries, oldest first, and
// the ids of the entries it no longer holds (see story).
type log struct {
	Entries []Entry  `json:"entries"`
	Gone    []string `json:"gone,omitempty"`
}

// Reader reads histories.
type Reader struct {
	r store.Reader
}

// NewReader returns a Reader of the histories r holds.
func NewReader(r store.Reader) *Reader { return &Reader{r: r} }

// History returns the entries recorded for the document of kind and key,
// oldest first; none (and no error) when nothing was recorded. A backend
// not configured with the history kind fails with an error matching
// store.ErrUnknownKind.
func (r *Reader) History(ctx context.Context, kind, key string) ([]Entry, error) {
	doc, err := r.r.Get(ctx, KindFor(kind), key)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("history: %w", err)
	}
	var l log
	if err := json.Unmarshal(doc.Spec, &l); err != nil {
		return nil, fmt.Errorf("history of %s %q: %w", kind, key, err)
	}
	return l.Entries, nil
}
