package dataplane_test

import (
	"fmt"
	"time"

	"github.com/tendhq/tend/examples/workspace/dataplane"
)

// ExampleDefinition shows what the machine decides for a RUNNING workspace
// asked to be DELETED: it steps down first, through STOPPING.
func ExampleDefinition() {
	m, err := dataplane.NewMachine()
	if err != nil {
		panic(err)
	}
	st := m.NewStatus()
	st.Phase = dataplane.Running
	d, err := m.Decide(dataplane.StateDeleted, st, time.Now())
	fmt.Println(d.Action, d.Next, err)
	fmt.Println(m.Admit(dataplane.StateRunning, dataplane.Deleting))
	// Output:
	// begin STOPPING <nil>
	// statemachine: Workspace: intent RUNNING refused in phase DELETING: a deleted workspace cannot come back
}
