// Package dataplane is the cloud-workspace data plane built on
// tend: the Workspace document, its machine, and the WorkspaceController
// ([Controller]) that drives each workspace's container and volume through
// an [InstanceController] and a [StorageProvider].
//
// # The document
//
// A user writes the [Spec]: the intent ([State]: RUNNING, STANDBY,
// ARCHIVED, DELETED), the image and, through [Controller.Delete], deleted_at.
// The controller is the only writer of the [Status]: the phase, the operation
// in flight with its op_id, the observed conditions, archive_key and
// restore_marker.
//
// # The machine
//
// Resting phases PENDING, STANDBY, RUNNING, ARCHIVED, ERROR (the fault
// phase, where terminal failures wait for an operator) and DELETED
// (terminal); the operations PROVISIONING, RESTORING, STARTING, STOPPING,
// ARCHIVING and DELETING are its transitional phases, so there is at most one
// per workspace and it is never pre-empted: a change of intent waits for it
// to complete. Each completes when its observed conditions hold
// (volume_ready, container_ready, archive_ready, restore_marker_matches),
// never when an actuator returns, and the phase moves in the same store
// write that records them. Deleting a RUNNING or STANDBY workspace steps it
// down first (stop, archive); the README beside the demo shows the diagram,
// generated from [Definition].
//
// # Operations and op_id
//
// An operation's id is generated and stored when it begins, before its first
// step, and reused by every retry: the archive step uploads under
// {workspace_id}/{op_id}/home.tar.zst, so a retry after a crash finds its own
// upload (HEAD check). The archive step records archive_key in the same
// write as its completion, before the delete_volume step may run.
//
// # Running it
//
// [New] wires the controller with a manager's builder (package manager):
// the logger, metrics registerer, tracer provider and history recorder of
// Config.Manager reach the controller and its driver, the store is given the
// kinds they need, and the machine is recorded for on-call tools.
// [Controller.Run] runs that manager; [Controller.Manager] returns it, to
// serve its probes, metrics and histories.
//
// # Errors
//
// An actuator error that matches controller.ErrTerminal (checksum
// mismatch, data loss) moves the workspace to ERROR with the failure
// recorded; any other is retried with backoff.
package dataplane
