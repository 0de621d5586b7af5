package kube

import (
	"reflect"
	"strings"

	"github.com/tendhq/tend/statemachine"
)

// machinePackage is the package of the machine's status types.
var machinePackage = reflect.TypeFor[statemachine.Pause]().PkgPath()

// machineDescription returns the description of the JSON field name of the
// struct t when t is one of the machine's status types (whose fields carry
// no description tags), so that `kubectl explain` documents the machine's
// part of a status; "" otherwise.
func machineDescription(t reflect.Type, name string) string {
	if t.PkgPath() != machinePackage {
		return ""
	}
	base, _, _ := strings.Cut(t.Name(), "[")
	return machineDocs[base+"."+name]
}

// machineDocs describes the fields of the machine's status types, by type
// and JSON name, as their Go documentation does.
var machineDocs = map[string]string{
	"Status.phase":              "The document's progress: the phase it is in.",
	"Status.target":             "The intent the machine last adopted: the intent the current operation serves.",
	"Status.since":              "When the document entered its phase; timers and the operation's deadline count from it.",
	"Status.operation":          "The operation in flight, while the phase is transitional.",
	"Status.conditions":         "The observed facts completions are judged from.",
	"Status.failure":            "The failure that moved the document out of its last operation; cleared when the next operation begins.",
	"Status.refused":            "Set while the intent is refused in the current phase: the intent and the machine's reason.",
	"Status.observedGeneration": "The generation of the spec the controller last decided on.",
	"Status.observedDeletion":   "Whether the controller had seen the document's deletion requested when it last decided.",
	"Status.requests":           "Per one-shot request, the tokens the spec carries and those served.",
	"Status.timers":             "The due times of the timers computed from the document.",
	"Status.paused":             "Set while an operator holds the document: its controller runs no step until the hold is lifted.",
	"Status.commands":           "Operator commands the controller has not carried out yet, oldest first.",

	"Operation.id":         "Identifies the operation; the same on every retry.",
	"Operation.phase":      "The transitional phase the operation drives.",
	"Operation.from":       "The phase the operation began from.",
	"Operation.done":       "The checkpoint: the steps already done, in order.",
	"Operation.attempts":   "Consecutive failed attempts of the current step.",
	"Operation.lastError":  "The message of the last failed attempt.",
	"Operation.retryAt":    "When the step that failed last may run again.",
	"Operation.trigger":    "What began the operation: an intent, a request, a timer, drift, an abort.",
	"Operation.request":    "The one-shot request the operation serves.",
	"Operation.tokens":     "The request's tokens the operation serves.",
	"Operation.errorClass": "The declared class of the last failed attempt's error, if one matched.",

	"Failure.operation": "The operation that failed, as it was when it failed.",
	"Failure.step":      "The step that failed, or the step the operation was at when its deadline passed.",
	"Failure.cause":     "How the operation failed: terminal, deadline or attempts.",
	"Failure.reason":    "The failure's message.",
	"Failure.at":        "When it failed.",

	"Refusal.intent": "The refused intent.",
	"Refusal.reason": "Why the machine refuses it.",

	"Condition.name":           "The condition's name.",
	"Condition.status":         "Whether the condition holds.",
	"Condition.reason":         "A short explanation from the observer.",
	"Condition.lastTransition": "When the status last changed, or was first observed.",
	"Condition.phase":          "The phase the condition was last observed in.",
	"Condition.phaseSince":     "When that phase began: a condition observed in an earlier phase is stale.",
	"Condition.observedAt":     "When the condition was last observed.",

	"RequestState.name":    "The request's name.",
	"RequestState.tokens":  "The tokens the spec carries, oldest first.",
	"RequestState.served":  "The tokens already served.",
	"RequestState.refused": "Why the last tokens served were refused, if they were.",

	"TimerDue.name":  "The timer's name.",
	"TimerDue.at":    "When it is due.",
	"TimerDue.fired": "Whether it fired for that time.",

	"Pause.by":     "The operator holding the document.",
	"Pause.reason": "Why, for the other operators.",
	"Pause.at":     "When the hold began.",

	"Command.id":      "Identifies the command, unique for the document.",
	"Command.verb":    "What the command asks: retry, skip, move or request.",
	"Command.step":    "The step a skip skips.",
	"Command.phase":   "The phase a move moves to.",
	"Command.request": "The request a request command asks for.",
	"Command.by":      "The operator who issued it.",
	"Command.reason":  "Why.",
	"Command.at":      "When it was issued.",
}
