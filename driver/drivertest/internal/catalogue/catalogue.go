// Package catalogue is a catalogue of user-side defects the driver harness
// must find: a small virtual-machine controller, written as a user would
// from the docs, and the same controller with one defect planted in its
// steps, observers, API or machine. The worlds check only what a user
// would check from the simulated cloud's own truth; none of their checks
// is written for a planted defect.
package catalogue

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tendhq/tend/driver"
	"github.com/tendhq/tend/driver/drivertest"
	sm "github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// State is a VM's intent.
type State string

// Phase is a VM's progress.
type Phase string

// The VM's states and phases.
const (
	Running State = "Running"
	Stopped State = "Stopped"
	Deleted State = "Deleted"

	Provisioning Phase = "Provisioning"
	Off          Phase = "Off"
	Starting     Phase = "Starting"
	On           Phase = "On"
	Stopping     Phase = "Stopping"
	Rebooting    Phase = "Rebooting"
	Deleting     Phase = "Deleting"
	Gone         Phase = "Gone"
	Failed       Phase = "Failed"
)

// Definition returns the VM machine: a disk made once, the VM powered on
// and off, a reboot request, and deletion, which aborts a provisioning or
// a start.
func Definition() sm.Definition[State, Phase] {
	T := sm.Transitional
	return sm.Definition[State, Phase]{
		Name:    "VM",
		States:  []State{Running, Stopped, Deleted},
		Initial: Provisioning,
		Phases: []sm.PhaseSpec[Phase]{
			{Phase: Provisioning, Type: T, Then: Off, Steps: []string{"create_disk"}, Completion: []sm.Require{sm.Is("disk_ready")}},
			{Phase: Off},
			{Phase: Starting, Type: T, Then: On, Steps: []string{"power_on"}, Completion: []sm.Require{sm.Is("running")}},
			{Phase: On},
			{Phase: Stopping, Type: T, Then: Off, Steps: []string{"power_off"}, Completion: []sm.Require{sm.Not("running")}},
			{Phase: Rebooting, Type: T, Then: On, Steps: []string{"reboot"}, Completion: []sm.Require{sm.Is("running")}},
			{Phase: Deleting, Type: T, NoReturn: true, Then: Gone, Steps: []string{"power_off", "delete_disk"},
				Completion: []sm.Require{sm.Not("running"), sm.Not("disk_ready")}},
			{Phase: Gone, Type: sm.Terminal},
			{Phase: Failed, Type: sm.Fault},
		},
		Settled: []sm.Settle[State, Phase]{
			{State: Stopped, Phase: Off},
			{State: Running, Phase: On},
			{State: Deleted, Phase: Gone, Final: true},
		},
		Rules: []sm.Rule[State, Phase]{
			{State: Running, Phase: Off, Begin: Starting},
			{State: Deleted, Phase: Off, Begin: Deleting},
			{State: Stopped, Phase: On, Begin: Stopping},
			{State: Deleted, Phase: On, Begin: Deleting},
			{State: Deleted, Phase: Failed, Begin: Deleting},
		},
		Aborts: []sm.AbortRule[State, Phase]{
			{State: Deleted, Phase: Provisioning, To: Deleting},
			{State: Deleted, Phase: Starting, To: Deleting},
		},
		Refusals: []sm.RefusalRule[State, Phase]{{
			States: []State{Running, Stopped}, Phases: []Phase{Deleting, Gone},
			Reason: "a VM being deleted cannot be brought back",
		}},
		Requests: []sm.RequestRule[Phase]{{Name: "reboot",
			Serve:  []sm.Edge[Phase]{{From: On, To: Rebooting}},
			Refuse: []Phase{Off}, Reason: "a stopped VM has nothing to reboot"}},
		Bounds: sm.Bounds{Deadline: 10 * time.Minute},
	}
}

// Spec is a VM's spec.
type Spec struct {
	State State `json:"state"`
	// Reboot is the token of the last reboot asked for.
	Reboot string `json:"reboot,omitempty"`
}

// Intent returns the VM's intent.
func (s Spec) Intent() State { return s.State }

// Requests returns the reboot token the spec carries.
func (s Spec) Requests() map[string][]string {
	if s.Reboot == "" {
		return nil
	}
	return map[string][]string{"reboot": {s.Reboot}}
}

// Status is a VM's status.
type Status struct {
	sm.Status[State, Phase]
}

// timeouts is the share of the cloud's calls that time out after acting.
const timeouts = 0.2

// errTimeout is the cloud's API timing out after it acted.
var errTimeout = errors.New("cloud: request timed out")

// Object is a VM document.
type Object = store.Object[Spec, Status]

// Defect names a defect planted in the VM controller; the zero Defect is
// the correct controller.
type Defect int

// The defects of the catalogue.
const (
	Correct Defect = iota
	// CreateNotIdempotent: create_disk makes a new disk on every call.
	CreateNotIdempotent
	// StepDoesNothing: power_on succeeds without powering anything on.
	StepDoesNothing
	// ObserverLies: running reads the power switch, not whether the VM
	// still runs: a VM shutting down reads stopped.
	ObserverLies
	// RebootNotKeyed: reboot is not keyed on the operation id: a retried
	// call reboots again.
	RebootNotKeyed
	// TokenReused: the API writes every reboot under the same token, so
	// one token is served by two operations.
	TokenReused
	// AbortMissing: the machine does not abort a provisioning or a start
	// for deletion.
	AbortMissing
)

// Defects lists the planted defects, with the problems each is reported
// with (parts of the harness's message; the first problem of a run that
// finds the defect names one of them).
var Defects = []struct {
	Defect Defect
	Name   string
	Want   []string
}{
	{CreateNotIdempotent, "a create that is not idempotent", []string{"more than one disk"}},
	{StepDoesNothing, "a step that does nothing", []string{"nothing explains it"}},
	// A stopped VM settles while it still runs, or a deleted one is
	// removed while it does.
	{ObserverLies, "an observer that lies", []string{"still running true", "running true"}},
	// Twice or more: retries within one action may reboot it again.
	{RebootNotKeyed, "a step not keyed on the operation id", []string{"times for reboot"}},
	{TokenReused, "a request served twice", []string{"served by 2 operations"}},
	{AbortMissing, "a missing abort for deletion", []string{"billed for a VM being deleted"}},
}

// Names reports whether problem names one of want.
func Names(problem string, want []string) bool {
	return slices.ContainsFunc(want, func(w string) bool { return strings.Contains(problem, w) })
}

// Machine builds the VM machine with defect planted.
func Machine(defect Defect) (*sm.Machine[State, Phase], error) {
	def := Definition()
	if defect == AbortMissing {
		def.Aborts = nil
	}
	return sm.New(def)
}

// Config returns the harness's configuration of the VM controller with
// defect planted.
func Config(defect Defect) drivertest.Config[Spec, Status, State, Phase] {
	m, err := Machine(defect)
	if err != nil {
		panic(err) // the definition is the package's own
	}
	request := func(s *Spec, _, token string) { s.Reboot = token }
	if defect == TokenReused {
		request = func(s *Spec, _, _ string) { s.Reboot = "reboot" }
	}
	return drivertest.Config[Spec, Status, State, Phase]{
		Machine: m,
		Kind:    "VM",
		Fixture: func(env drivertest.Env) (drivertest.Fixture[Spec, Status], error) {
			c := &cloud{defect: defect, shutdown: time.Second + time.Duration(env.Rand.Int64N(int64(20*time.Second))),
				rnd:     rand.New(rand.NewPCG(env.Rand.Uint64(), env.Rand.Uint64())),
				reboots: map[string]int{}, keyed: map[string]bool{}}
			return drivertest.Fixture[Spec, Status]{
				Driver:    driver.Config[Spec, Status]{Steps: c.steps(), Observers: c.observers(), WaitInterval: time.Second},
				Invariant: c.invariant,
				Matches:   c.matches,
			}, nil
		},
		// As the VM's API: a new intent withdraws a reboot not yet served.
		SetIntent: func(s *Spec, st State) { s.State, s.Reboot = st, "" },
		Request:   request,
		// Long enough for a step whose retries back off for minutes after
		// faults stop to run once more.
		Horizon: 2 * time.Hour,
	}
}

// cloud simulates the VM: its disks and its power. It boots at once, and
// takes shutdown to stop once powered off. Its API times out on a fifth of
// the calls, after acting, as clouds do.
type cloud struct {
	defect   Defect
	shutdown time.Duration

	mu      sync.Mutex // guards the fields below
	rnd     *rand.Rand
	disks   int
	powered bool
	stopsAt time.Time       // when a VM powered off stops running
	reboots map[string]int  // by reboot token served
	keyed   map[string]bool // the operations whose reboot was done
	billed  []string        // work done for a VM being deleted
}

func (c *cloud) steps() map[string]driver.StepFunc[Spec, Status] {
	do := func(f func(obj *Object, opID string)) driver.StepFunc[Spec, Status] {
		return func(_ context.Context, obj *Object, opID string) (sm.Outcome, error) {
			c.mu.Lock()
			defer c.mu.Unlock()
			f(obj, opID)
			if c.rnd.Float64() < timeouts {
				return sm.Failed, errTimeout
			}
			return sm.Done, nil
		}
	}
	// bill records billable work done for a VM whose deletion was asked
	// for when the step read it.
	bill := func(obj *Object, what string) {
		if obj.Terminating() || obj.Spec.State == Deleted {
			c.billed = append(c.billed, what)
		}
	}
	return map[string]driver.StepFunc[Spec, Status]{
		"create_disk": do(func(obj *Object, _ string) {
			bill(obj, "a disk made")
			if c.disks == 0 || c.defect == CreateNotIdempotent {
				c.disks++
			}
		}),
		"power_on": do(func(obj *Object, _ string) {
			bill(obj, "a boot")
			if c.defect == StepDoesNothing {
				return
			}
			c.powered = true
		}),
		"power_off": do(func(*Object, string) {
			if c.powered {
				c.powered, c.stopsAt = false, time.Now().Add(c.shutdown)
			}
		}),
		"delete_disk": do(func(*Object, string) { c.disks = 0 }),
		"reboot": do(func(obj *Object, opID string) {
			if c.keyed[opID] && c.defect != RebootNotKeyed {
				return
			}
			c.keyed[opID] = true
			// The reboot serves the tokens its operation carries.
			if op := obj.Status.Operation; op != nil {
				for _, tok := range op.Tokens {
					c.reboots[tok]++
				}
			}
		}),
	}
}

func (c *cloud) observers() map[string]driver.ObserverFunc[Spec, Status] {
	read := func(f func() bool) driver.ObserverFunc[Spec, Status] {
		return func(context.Context, *Object) (bool, string, error) {
			c.mu.Lock()
			defer c.mu.Unlock()
			return f(), "", nil
		}
	}
	return map[string]driver.ObserverFunc[Spec, Status]{
		"disk_ready": read(func() bool { return c.disks > 0 }),
		"running": read(func() bool {
			if c.defect == ObserverLies {
				return c.powered
			}
			return c.running()
		}),
	}
}

// running reports whether the VM runs: powered on, or shutting down. c.mu
// is held.
func (c *cloud) running() bool { return c.powered || time.Now().Before(c.stopsAt) }

// invariant: never two disks, nothing billed for a VM being deleted, one
// reboot per token, nothing left once the VM is removed.
func (c *cloud) invariant(_ context.Context, _ string, obj *Object) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	if c.disks > 1 {
		errs = append(errs, fmt.Errorf("more than one disk: %d", c.disks))
	}
	if len(c.billed) > 0 {
		errs = append(errs, fmt.Errorf("billed for a VM being deleted: %v", c.billed))
	}
	for _, tok := range slices.Sorted(maps.Keys(c.reboots)) {
		if n := c.reboots[tok]; n > 1 {
			errs = append(errs, fmt.Errorf("rebooted %d times for reboot %s", n, tok))
		}
	}
	if obj == nil && (c.disks > 0 || c.running()) {
		errs = append(errs, fmt.Errorf("removed, but %d disks left, running %t", c.disks, c.running()))
	}
	return errors.Join(errs...)
}

// matches: a running VM has its disk and runs, a stopped one does not.
func (c *cloud) matches(_ context.Context, obj *Object) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch obj.Spec.State {
	case Running:
		if c.disks != 1 || !c.running() {
			return fmt.Errorf("running, but %d disks and not running", c.disks)
		}
	case Stopped:
		if c.disks != 1 || c.running() {
			return fmt.Errorf("stopped, but %d disks, still running %t", c.disks, c.running())
		}
	}
	return nil
}
