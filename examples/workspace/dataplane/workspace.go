package dataplane

import (
	"errors"
	"time"

	"github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// Kind is the store kind of workspace documents.
const Kind = "Workspace"

// State is a user's intent for a workspace.
type State string

// The intents a user may set.
const (
	StateRunning  State = "RUNNING"
	StateStandby  State = "STANDBY"
	StateArchived State = "ARCHIVED"
	StateDeleted  State = "DELETED"
)

// Phase is a workspace's progress. Resting phases are the workspace's phases; the
// transitional ones are its operations, at most one at a time, never
// pre-empted.
type Phase string

// Phases.
const (
	Pending  Phase = "PENDING"
	Standby  Phase = "STANDBY"
	Running  Phase = "RUNNING"
	Archived Phase = "ARCHIVED"
	Error    Phase = "ERROR"
	Deleted  Phase = "DELETED"

	Provisioning Phase = "PROVISIONING"
	Restoring    Phase = "RESTORING"
	Starting     Phase = "STARTING"
	Stopping     Phase = "STOPPING"
	Archiving    Phase = "ARCHIVING"
	Deleting     Phase = "DELETING"
)

// NoOperation is the operation of a workspace that runs none.
const NoOperation = "NONE"

// Conditions observed by the controller; completions are judged from them.
const (
	CondVolumeReady          = "volume_ready"
	CondContainerReady       = "container_ready"
	CondArchiveReady         = "archive_ready"
	CondRestoreMarkerMatches = "restore_marker_matches"
)

// Step names.
const (
	StepProvision       = "provision"
	StepRestore         = "restore"
	StepStart           = "start"
	StepStop            = "stop"
	StepArchive         = "archive"
	StepDeleteVolume    = "delete_volume"
	StepDeleteContainer = "delete_container"
)

// Spec is what a user writes: the intent, the image and the soft-delete time.
type Spec struct {
	// State is the intent.
	State State `json:"state"`
	// Image is the container image a RUNNING workspace runs.
	Image string `json:"image,omitempty"`
	// DeletedAt is set, with State DELETED, when the user deletes the
	// workspace (soft delete): from then on the GC protects none of its
	// archives.
	DeletedAt time.Time `json:"deleted_at,omitzero"`
}

// Intent implements driver.HasIntent.
func (s Spec) Intent() State { return s.State }

// Status is what the WorkspaceController writes, its only writer: the
// machine's status (phase, operation and op_id, conditions, failure) and
// what the steps recorded.
type Status struct {
	statemachine.Status[State, Phase]
	// ArchiveKey is the key of the workspace's newest archive,
	// {workspace_id}/{op_id}/home.tar.zst. The archive step stores it before
	// the volume is deleted.
	ArchiveKey string `json:"archive_key,omitempty"`
	// RestoreMarker is what the last restore returned: the archive key the
	// volume was restored from.
	RestoreMarker string `json:"restore_marker,omitempty"`
}

// OperationName returns the operation in flight (a transitional phase) or
// [NoOperation].
func (s Status) OperationName() string {
	if s.Operation == nil {
		return NoOperation
	}
	return string(s.Operation.Phase)
}

// OpID returns the id of the operation in flight, or else of the operation
// whose terminal failure moved the workspace to ERROR, or "".
func (s Status) OpID() string {
	switch {
	case s.Operation != nil:
		return s.Operation.ID
	case s.Failure != nil:
		return s.Failure.Operation.ID
	}
	return ""
}

// Healthy reports whether the workspace is out of ERROR.
func (s Status) Healthy() bool { return s.Phase != Error }

// Workspace is a workspace document.
type Workspace = store.Object[Spec, Status]

// Definition returns the workspace machine as data (see the package
// documentation for its diagram).
func Definition() statemachine.Definition[State, Phase] {
	T := statemachine.Transitional
	is, not := statemachine.Is, statemachine.Not
	return statemachine.Definition[State, Phase]{
		Name:    "Workspace",
		States:  []State{StateRunning, StateStandby, StateArchived, StateDeleted},
		Initial: Pending,
		Phases: []statemachine.PhaseSpec[Phase]{
			{Phase: Pending},
			{Phase: Provisioning, Type: T, Then: Standby,
				Steps:      []string{StepProvision},
				Completion: []statemachine.Require{is(CondVolumeReady)}},
			{Phase: Restoring, Type: T, Then: Standby, Bounds: statemachine.Bounds{Deadline: 6 * time.Hour},
				Steps:      []string{StepProvision, StepRestore},
				Completion: []statemachine.Require{is(CondVolumeReady), is(CondRestoreMarkerMatches)}},
			{Phase: Standby},
			{Phase: Starting, Type: T, Then: Running,
				Steps:      []string{StepStart},
				Completion: []statemachine.Require{is(CondContainerReady)}},
			// A container that dies behind the controller's back (killed,
			// its node gone) is drift: Starting makes it again.
			{Phase: Running, Health: []statemachine.Require{is(CondContainerReady)}, Repair: Starting},
			{Phase: Stopping, Type: T, Then: Standby,
				Steps:      []string{StepStop},
				Completion: []statemachine.Require{not(CondContainerReady), is(CondVolumeReady)}},
			{Phase: Archiving, Type: T, Then: Archived, Bounds: statemachine.Bounds{Deadline: 6 * time.Hour},
				Steps:      []string{StepArchive, StepDeleteVolume},
				Completion: []statemachine.Require{not(CondVolumeReady), is(CondArchiveReady)}},
			{Phase: Archived},
			{Phase: Deleting, Type: T, NoReturn: true, Then: Deleted,
				Steps:      []string{StepDeleteContainer, StepDeleteVolume},
				Completion: []statemachine.Require{not(CondContainerReady), not(CondVolumeReady)}},
			{Phase: Deleted, Type: statemachine.Terminal},
			{Phase: Error, Type: statemachine.Fault},
		},
		Settled: []statemachine.Settle[State, Phase]{
			{State: StateArchived, Phase: Pending},
			{State: StateStandby, Phase: Standby},
			{State: StateRunning, Phase: Running},
			{State: StateArchived, Phase: Archived},
			{State: StateDeleted, Phase: Deleted, Final: true},
		},
		Rules: []statemachine.Rule[State, Phase]{
			{State: StateRunning, Phase: Pending, Begin: Provisioning},
			{State: StateStandby, Phase: Pending, Begin: Provisioning},
			{State: StateDeleted, Phase: Pending, Begin: Deleting},
			{State: StateRunning, Phase: Standby, Begin: Starting},
			{State: StateArchived, Phase: Standby, Begin: Archiving},
			{State: StateDeleted, Phase: Standby, Begin: Archiving}, // step down first
			{State: StateStandby, Phase: Running, Begin: Stopping},
			{State: StateArchived, Phase: Running, Begin: Stopping},
			{State: StateDeleted, Phase: Running, Begin: Stopping}, // step down first
			{State: StateRunning, Phase: Archived, Begin: Restoring},
			{State: StateStandby, Phase: Archived, Begin: Restoring},
			{State: StateDeleted, Phase: Archived, Begin: Deleting},
			{State: StateDeleted, Phase: Error, Begin: Deleting},
		},
		Refusals: []statemachine.RefusalRule[State, Phase]{{
			States: []State{StateRunning, StateStandby, StateArchived},
			Phases: []Phase{Deleting, Deleted},
			Reason: "a deleted workspace cannot come back",
		}},
	}
}

// NewMachine builds the workspace machine from [Definition].
func NewMachine() (*statemachine.Machine[State, Phase], error) {
	m, err := statemachine.New(Definition())
	if err != nil {
		return nil, errors.Join(errors.New("dataplane: workspace machine"), err)
	}
	return m, nil
}
