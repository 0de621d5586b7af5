package statemachine_test

import "github.com/tendhq/tend/statemachine"

// runtimeDomain is the gateway's RuntimeDomain machine: deleted when its gateway
// stops, recreated when it starts again through the one sanctioned cycle.
func runtimeDomain() statemachine.Definition[string, string] {
	return statemachine.Definition[string, string]{
		Name:    "RuntimeDomain",
		States:  []string{"Active", "Inactive", "Deleted"},
		Initial: "Creating",
		Phases: []statemachine.PhaseSpec[string]{
			{Phase: "Creating", Type: statemachine.Transitional, Then: "Created", Unbounded: true,
				Steps:      []string{"create_routes", "create_plugin_config", "create_tls"},
				Completion: []statemachine.Require{statemachine.Is("routes_ready")}},
			{Phase: "Created"},
			{Phase: "Deleting", Type: statemachine.Transitional, NoReturn: true, Then: "Deleted", Unbounded: true,
				Steps:      []string{"delete_routes", "delete_plugin_config", "delete_tls", "delete_certificate"},
				Completion: []statemachine.Require{statemachine.Not("routes_present")}},
			{Phase: "Deleted"},
		},
		Settled: []statemachine.Settle[string, string]{
			{State: "Active", Phase: "Created"},
			{State: "Inactive", Phase: "Deleted"},
			{State: "Deleted", Phase: "Deleted", Final: true},
		},
		Rules: []statemachine.Rule[string, string]{
			{State: "Inactive", Phase: "Created", Begin: "Deleting"},
			{State: "Deleted", Phase: "Created", Begin: "Deleting"},
			{State: "Active", Phase: "Deleted", Begin: "Creating"},
		},
		Cycles: []statemachine.Edge[string]{{From: "Deleted", To: "Creating"}},
	}
}

// workspace is the cloud-workspace machine: operations as
// transitional phases, completion from observed conditions, an ERROR phase for
// terminal failures, and deletion that first steps down.
func workspace() statemachine.Definition[string, string] {
	T := statemachine.Transitional
	is, not := statemachine.Is, statemachine.Not
	return statemachine.Definition[string, string]{
		Name:    "Workspace",
		States:  []string{"RUNNING", "STANDBY", "ARCHIVED", "DELETED"},
		Initial: "PENDING",
		Phases: []statemachine.PhaseSpec[string]{
			{Phase: "PENDING"},
			{Phase: "PROVISIONING", Type: T, Steps: []string{"provision"}, Completion: []statemachine.Require{is("volume_ready")}, Then: "STANDBY"},
			{Phase: "RESTORING", Type: T, Steps: []string{"provision", "restore"}, Completion: []statemachine.Require{is("volume_ready"), is("restore_marker_matches")}, Then: "STANDBY"},
			{Phase: "STANDBY"},
			{Phase: "STARTING", Type: T, Steps: []string{"start"}, Completion: []statemachine.Require{is("container_ready")}, Then: "RUNNING"},
			{Phase: "RUNNING"},
			{Phase: "STOPPING", Type: T, Steps: []string{"stop"}, Completion: []statemachine.Require{not("container_ready"), is("volume_ready")}, Then: "STANDBY"},
			{Phase: "ARCHIVING", Type: T, Steps: []string{"archive", "delete_volume"}, Completion: []statemachine.Require{not("volume_ready"), is("archive_ready")}, Then: "ARCHIVED"},
			{Phase: "ARCHIVED"},
			{Phase: "DELETING", Type: T, NoReturn: true, Steps: []string{"delete_container", "delete_volume"}, Completion: []statemachine.Require{not("container_ready"), not("volume_ready")}, Then: "DELETED"},
			{Phase: "DELETED", Type: statemachine.Terminal},
			{Phase: "ERROR", Type: statemachine.Fault},
		},
		Settled: []statemachine.Settle[string, string]{
			{State: "ARCHIVED", Phase: "PENDING"},
			{State: "STANDBY", Phase: "STANDBY"},
			{State: "RUNNING", Phase: "RUNNING"},
			{State: "ARCHIVED", Phase: "ARCHIVED"},
			{State: "DELETED", Phase: "DELETED", Final: true},
		},
		Rules: []statemachine.Rule[string, string]{
			{State: "RUNNING", Phase: "PENDING", Begin: "PROVISIONING"},
			{State: "STANDBY", Phase: "PENDING", Begin: "PROVISIONING"},
			{State: "DELETED", Phase: "PENDING", Begin: "DELETING"},
			{State: "RUNNING", Phase: "STANDBY", Begin: "STARTING"},
			{State: "ARCHIVED", Phase: "STANDBY", Begin: "ARCHIVING"},
			{State: "DELETED", Phase: "STANDBY", Begin: "ARCHIVING"},
			{State: "STANDBY", Phase: "RUNNING", Begin: "STOPPING"},
			{State: "ARCHIVED", Phase: "RUNNING", Begin: "STOPPING"},
			{State: "DELETED", Phase: "RUNNING", Begin: "STOPPING"},
			{State: "RUNNING", Phase: "ARCHIVED", Begin: "RESTORING"},
			{State: "STANDBY", Phase: "ARCHIVED", Begin: "RESTORING"},
			{State: "DELETED", Phase: "ARCHIVED", Begin: "DELETING"},
			{State: "DELETED", Phase: "ERROR", Begin: "DELETING"},
		},
		Refusals: []statemachine.RefusalRule[string, string]{{
			States: []string{"RUNNING", "STANDBY", "ARCHIVED"},
			Phases: []string{"DELETING", "DELETED"},
			Reason: "a deleted workspace cannot come back",
		}},
	}
}

// light is a small two-way machine for table tests.
func light() statemachine.Definition[string, string] {
	return statemachine.Definition[string, string]{
		Name:    "Light",
		States:  []string{"On", "Off"},
		Initial: "Dark",
		Phases: []statemachine.PhaseSpec[string]{
			{Phase: "Dark"},
			{Phase: "Brightening", Type: statemachine.Transitional, Unbounded: true, Steps: []string{"switch_on"},
				Completion: []statemachine.Require{statemachine.Is("lit")}, Then: "Lit"},
			{Phase: "Lit"},
			{Phase: "Dimming", Type: statemachine.Transitional, Unbounded: true, Steps: []string{"switch_off"},
				Completion: []statemachine.Require{statemachine.Not("lit")}, Then: "Dark"},
		},
		Settled: []statemachine.Settle[string, string]{{State: "Off", Phase: "Dark"}, {State: "On", Phase: "Lit"}},
		Rules: []statemachine.Rule[string, string]{
			{State: "On", Phase: "Dark", Begin: "Brightening"},
			{State: "Off", Phase: "Lit", Begin: "Dimming"},
		},
	}
}
