package driver

import (
	"time"

	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/statemachine"
)

// classify returns the class the machine gives err, the error of a call
// of step that ended with out, and the outcome it leads to: a final class
// fails the step terminally.
func (d *phaseDriver[Spec, Status, S, P]) classify(step string, out statemachine.Outcome, err error) (statemachine.Outcome, statemachine.ErrorClass) {
	if out != statemachine.Failed && out != statemachine.FailedTerminal {
		return out, statemachine.ErrorClass{}
	}
	class, _ := d.m.Classify(step, err)
	if class.Final {
		out = statemachine.FailedTerminal
	}
	return out, class
}

// retryAfter returns how long the step of dec waits after the failure r
// reports, of class class: the delay the error carries
// ([controller.RetryAfter], [controller.RetryAfterHTTP]), else the class's
// schedule, else the driver's backoff. A delay past the operation's
// deadline is kept as it is: the deadline ends the operation first, and an
// operation resumed from its failure still waits for it.
func (d *phaseDriver[Spec, Status, S, P]) retryAfter(dec statemachine.Decision[S, P], r statemachine.Report, class statemachine.ErrorClass) time.Duration {
	attempts := dec.Operation.Attempts + 1
	delay, ok := controller.RetryDelay(r.Err)
	if !ok {
		delay, ok = class.Delay(attempts)
	}
	if !ok {
		delay = d.backoff.Delay(attempts)
	}
	return delay
}
