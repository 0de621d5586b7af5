package drivertest

import (
	"fmt"
	"time"
)

// kind is what an action does.
type kind int

const (
	doIntent          kind = iota // the user writes a new intent
	doRequest                     // the user writes a new request token
	doDelete                      // the user deletes the document through the store
	doRelease                     // another owner's finalizer on the document is removed
	doTouch                       // someone else writes the document's labels during the next step call
	doRecreate                    // the user creates the document again after it was removed
	doFail                        // the next call of a step fails before its effect
	doFailAfter                   // the next call of a step has its effect, then fails
	doTerminal                    // the next call of a step fails terminally
	doPanic                       // the next call of a step panics
	doSlow                        // the next call of a step takes d, or until its context ends
	doCrashAfter                  // the next call of a step has its effect, then its replica dies before recording it
	doBreak                       // every call of a step fails until the faults heal
	doFlip                        // the next observations of a condition read false
	doHeal                        // every fault stops
	doCrash                       // a replica dies and restarts
	doPartition                   // a replica's store calls fail until the faults heal
	doSleep                       // virtual time passes
	doStart                       // the replicas start
	doPause                       // an operator pauses the document
	doResume                      // an operator resumes it
	doOperatorRequest             // an operator asks for a request by command
	doRetry                       // an operator asks for the failed step or operation to be retried
	doSkip                        // an operator asks for the failed step to be skipped
	doMove                        // an operator asks for the document to leave Fault for a phase
)

// action is one thing that happens to a run: a user's write, a fault, time.
type action[S any] struct {
	kind    kind
	intent  S             // doIntent, doRecreate
	name    string        // the request (doRequest), condition (doFlip), step (faults of steps) or phase (doMove)
	replica int           // doCrash, doPartition
	d       time.Duration // doSlow, doSleep
}

// String describes a for a failure report, one line per action.
func (a action[S]) String() string {
	step := "step " + a.name
	if a.name == anyStep {
		step = "any step"
	}
	switch a.kind {
	case doIntent:
		return fmt.Sprintf("set intent %v", a.intent)
	case doRequest:
		return fmt.Sprintf("request %s", a.name)
	case doDelete:
		return "delete the document"
	case doRelease:
		return "remove the other owner's finalizer"
	case doTouch:
		return "write the document's labels during the next step call"
	case doRecreate:
		return fmt.Sprintf("create the document again with intent %v", a.intent)
	case doFail:
		return fmt.Sprintf("fail the next call of %s before its effect", step)
	case doFailAfter:
		return fmt.Sprintf("fail the next call of %s after its effect", step)
	case doTerminal:
		return fmt.Sprintf("fail the next call of %s terminally", step)
	case doPanic:
		return fmt.Sprintf("panic in the next call of %s", step)
	case doSlow:
		return fmt.Sprintf("make the next call of %s take %v", step, a.d)
	case doCrashAfter:
		return fmt.Sprintf("crash the replica after the effect of the next call of %s, before it is recorded", step)
	case doBreak:
		return fmt.Sprintf("fail every call of %s until healed", step)
	case doFlip:
		return fmt.Sprintf("read condition %s false for the next 3 observations", a.name)
	case doHeal:
		return "heal every fault"
	case doCrash:
		return fmt.Sprintf("crash replica %d and restart it", a.replica)
	case doPartition:
		return fmt.Sprintf("cut replica %d off the store until healed", a.replica)
	case doSleep:
		return fmt.Sprintf("wait %v", a.d)
	case doStart:
		return "start the replicas"
	case doPause:
		return "an operator pauses the document"
	case doResume:
		return "an operator resumes the document"
	case doOperatorRequest:
		return fmt.Sprintf("an operator commands request %s", a.name)
	case doRetry:
		return "an operator commands a retry"
	case doSkip:
		return "an operator commands a skip of the step that failed"
	case doMove:
		return fmt.Sprintf("an operator commands a move to %s", a.name)
	}
	return fmt.Sprintf("action(%d)", int(a.kind))
}

// anyStep names no step: a fault of anyStep hits whichever step runs next.
const anyStep = ""

// flipped is how many observations of a condition a doFlip reads false.
const flipped = 3

// stepFault reports whether a arms a fault of the next call of a step.
func (a action[S]) stepFault() bool {
	switch a.kind {
	case doFail, doFailAfter, doTerminal, doPanic, doSlow, doCrashAfter:
		return true
	}
	return false
}
