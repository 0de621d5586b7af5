package driver

import "github.com/tendhq/tend/controller"

// The triggers of the driver's own requeues: a wait or a timer, a step's
// backoff, a settled document's health check.
var (
	triggerTimer = controller.Trigger{Kind: controller.TriggerTimer}
	triggerRetry = controller.Trigger{Kind: controller.TriggerRetry}
	triggerDrift = controller.Trigger{Kind: controller.TriggerDrift}
)

// sourceTrigger returns the trigger of a change of a driven document that
// its source queues: the event's own (listed, spec, delete) but for a
// change that is neither a new generation nor a deletion, which is another
// writer's write of the status: an operator's command (a pause, a resume, a
// retry ...).
func sourceTrigger(ev *controller.Event) controller.Trigger {
	if ev.Trigger.Kind == controller.TriggerChange {
		return controller.Trigger{Kind: controller.TriggerCommand}
	}
	return ev.Trigger
}
