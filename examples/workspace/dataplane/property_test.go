package dataplane_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/tendhq/tend/examples/workspace/dataplane"
	sm "github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/statemachine/smtest"
)

// model is the world of one workspace as its actuators see it, with the
// guards of the WorkspaceController's steps.
type model struct {
	container, volume bool
	readyAt           time.Time // when a started container answers
	startDelay        time.Duration
	archives          map[string]bool // complete archives, by op_id
	archiveKey        string          // op_id of the archive the steps recorded last
	marker            string          // restore marker on the volume
	data              bool            // the home holds user data (set while RUNNING)
	lost              bool            // user data destroyed
}

func (w *model) Run(d sm.Decision[dataplane.State, dataplane.Phase], now time.Time) (sm.Outcome, error) {
	switch d.Step {
	case dataplane.StepProvision:
		w.volume = true
	case dataplane.StepRestore:
		if w.archiveKey == "" || !w.archives[w.archiveKey] {
			return sm.FailedTerminal, errors.New("nothing to restore")
		}
		w.marker, w.data = w.archiveKey, true
	case dataplane.StepStart:
		if !w.volume {
			return sm.FailedTerminal, dataplane.ErrDataLoss
		}
		if !w.container {
			w.container, w.readyAt = true, now.Add(w.startDelay)
		}
	case dataplane.StepStop, dataplane.StepDeleteContainer:
		w.container = false
	case dataplane.StepArchive:
		if w.container {
			return sm.Failed, dataplane.ErrContainerRunning
		}
		if !w.volume && !w.archives[d.Operation.ID] {
			return sm.FailedTerminal, dataplane.ErrDataLoss
		}
		w.archives[d.Operation.ID] = true
		w.archiveKey = d.Operation.ID
	case dataplane.StepDeleteVolume:
		if w.container {
			return sm.Failed, dataplane.ErrContainerRunning
		}
		if d.Operation.Phase == dataplane.Archiving && (w.archiveKey != d.Operation.ID || !w.archives[d.Operation.ID]) {
			return sm.FailedTerminal, dataplane.ErrDataLoss
		}
		if w.volume && w.data && d.Operation.Phase == dataplane.Archiving && !w.archives[d.Operation.ID] {
			w.lost = true
		}
		w.volume, w.marker = false, ""
	default:
		return sm.FailedTerminal, fmt.Errorf("unknown step %q", d.Step)
	}
	if w.container && w.volume {
		w.data = true
	}
	return sm.Done, nil
}

func (w *model) Observe(now time.Time) []sm.Observation {
	return []sm.Observation{
		{Name: dataplane.CondVolumeReady, Status: w.volume},
		{Name: dataplane.CondContainerReady, Status: w.container && !now.Before(w.readyAt)},
		{Name: dataplane.CondArchiveReady, Status: w.archiveKey != "" && w.archives[w.archiveKey]},
		{Name: dataplane.CondRestoreMarkerMatches, Status: w.volume && w.marker != "" && w.marker == w.archiveKey},
	}
}

// Check holds after every action: a container only with its volume
// (contract 2), and no user data ever destroyed unarchived.
func (w *model) Check(_ dataplane.State, st sm.Status[dataplane.State, dataplane.Phase]) error {
	var errs []error
	if w.container && !w.volume {
		errs = append(errs, fmt.Errorf("container runs without its volume (phase %s)", st.Phase))
	}
	if w.lost {
		errs = append(errs, errors.New("a volume holding data was deleted before its archive was complete"))
	}
	return errors.Join(errs...)
}

func (w *model) Matches(intent dataplane.State, st sm.Status[dataplane.State, dataplane.Phase]) error {
	want := map[dataplane.State][2]bool{ // container, volume
		dataplane.StateRunning:  {true, true},
		dataplane.StateStandby:  {false, true},
		dataplane.StateArchived: {false, false},
		dataplane.StateDeleted:  {false, false},
	}[intent]
	if w.container != want[0] || w.volume != want[1] {
		return fmt.Errorf("intent %s settled with container %v, volume %v", intent, w.container, w.volume)
	}
	if intent == dataplane.StateArchived && w.data && !w.archives[w.archiveKey] {
		return errors.New("ARCHIVED without a complete archive of its data")
	}
	return nil
}

// TestMachineProperties drives the workspace machine through random intents,
// ticks, transient and terminal step failures before and after their side
// effects, and crashes that lose the last status write, and checks the
// container ⇒ volume invariant after every step.
func TestMachineProperties(t *testing.T) {
	m, err := dataplane.NewMachine()
	if err != nil {
		t.Fatal(err)
	}
	smtest.Check(t, smtest.Config[dataplane.State, dataplane.Phase]{
		Machine:          m,
		TerminalFailures: true,
		World: func(t *rapid.T) smtest.World[dataplane.State, dataplane.Phase] {
			return &model{
				archives:   map[string]bool{},
				startDelay: time.Duration(rapid.Int64Range(0, int64(3*time.Minute)).Draw(t, "start delay")),
			}
		},
	})
}
