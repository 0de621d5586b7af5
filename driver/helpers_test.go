package driver_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tendhq/tend/driver"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/controller"
	sm "github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// The ApiGateway machine, as the statemachine package's tests
// declare it.

type gwState string

type gwPhase string

const (
	gwRunning    gwState = "Running"
	gwStopped    gwState = "Stopped"
	gwRestarting gwState = "Restarting"
	gwDeleted    gwState = "Deleted"

	phCreating gwPhase = "Creating"
	phCreated  gwPhase = "Created"
	phStarting gwPhase = "Starting"
	phStarted  gwPhase = "Started"
	phStopping gwPhase = "Stopping"
	phStopped  gwPhase = "Stopped"
	phDeleting gwPhase = "Deleting"
	phDeleted  gwPhase = "Deleted"
	phFailed   gwPhase = "Failed"
)

var (
	creatingSteps = []string{"create_namespace", "create_database", "create_runtime_domain"}
	startingSteps = []string{"create_deployment", "create_service", "activate_runtime_domain"}
	stoppingSteps = []string{"deactivate_runtime_domain", "delete_deployment", "delete_service"}
	deletingSteps = []string{"delete_cron_triggers", "delete_cloud_functions", "delete_stages",
		"delete_runtime_domain", "delete_instance", "delete_database", "delete_namespace"}
)

func gatewayMachine(t testing.TB) *sm.Machine[gwState, gwPhase] {
	t.Helper()
	m, err := sm.New(gatewayDefinition())
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func gatewayDefinition() sm.Definition[gwState, gwPhase] {
	return sm.Definition[gwState, gwPhase]{
		Name:    "ApiGateway",
		States:  []gwState{gwRunning, gwStopped, gwRestarting, gwDeleted},
		Initial: phCreating,
		Phases: []sm.PhaseSpec[gwPhase]{
			{Phase: phCreating, Type: sm.Transitional, Then: phCreated, Steps: creatingSteps,
				Completion: []sm.Require{sm.Is("namespace_ready"), sm.Is("database_ready"), sm.Is("runtime_domain_present")}},
			{Phase: phCreated},
			{Phase: phStarting, Type: sm.Transitional, Then: phStarted, Steps: startingSteps,
				Completion: []sm.Require{sm.Is("deployment_available")}},
			{Phase: phStarted},
			{Phase: phStopping, Type: sm.Transitional, Then: phStopped, Steps: stoppingSteps,
				Completion: []sm.Require{sm.Not("instance_present")}},
			{Phase: phStopped},
			{Phase: phDeleting, Type: sm.Transitional, NoReturn: true, Then: phDeleted, Steps: deletingSteps,
				Completion: []sm.Require{sm.Not("runtime_domain_present"), sm.Not("instance_present"),
					sm.Not("database_ready"), sm.Not("namespace_ready")}},
			{Phase: phDeleted, Type: sm.Terminal},
			{Phase: phFailed, Type: sm.Fault},
		},
		Settled: []sm.Settle[gwState, gwPhase]{
			{State: gwStopped, Phase: phCreated},
			{State: gwRunning, Phase: phStarted},
			{State: gwRestarting, Phase: phStarted},
			{State: gwStopped, Phase: phStopped},
			{State: gwDeleted, Phase: phDeleted, Final: true},
		},
		Rules: []sm.Rule[gwState, gwPhase]{
			{State: gwRunning, Phase: phCreated, Begin: phStarting},
			{State: gwRestarting, Phase: phCreated, Begin: phStarting},
			{State: gwDeleted, Phase: phCreated, Begin: phDeleting},
			{State: gwStopped, Phase: phStarted, Begin: phStopping},
			{State: gwDeleted, Phase: phStarted, Begin: phDeleting},
			{State: gwRunning, Phase: phStopped, Begin: phStarting},
			{State: gwRestarting, Phase: phStopped, Begin: phStarting},
			{State: gwDeleted, Phase: phStopped, Begin: phDeleting},
			{State: gwDeleted, Phase: phFailed, Begin: phDeleting},
		},
		Requests: []sm.RequestRule[gwPhase]{{Name: "restart",
			Serve: []sm.Edge[gwPhase]{{From: phStarted, To: phStopping}, {From: phCreated, To: phStarting}, {From: phStopped, To: phStarting}}}},
		Refusals: []sm.RefusalRule[gwState, gwPhase]{{
			States: []gwState{gwRunning, gwStopped, gwRestarting},
			Phases: []gwPhase{phDeleting, phDeleted},
			Reason: "a gateway being deleted cannot be brought back",
		}},
	}
}

type gwSpec struct {
	State gwState `json:"state"`
	// Restart is the token of the last restart asked for: written with
	// State Restarting, a restart request.
	Restart string `json:"restart,omitempty"`
}

func (s gwSpec) Intent() gwState { return s.State }

func (s gwSpec) Requests() map[string][]string {
	if s.State != gwRestarting || s.Restart == "" {
		return nil
	}
	return map[string][]string{"restart": {s.Restart}}
}

type gwStatus struct {
	sm.Status[gwState, gwPhase]
	// Namespace is a step's output, recorded with its outcome.
	Namespace string `json:"namespace,omitempty"`
}

type gwObject = store.Object[gwSpec, gwStatus]

// stepRun is one call of a step action.
type stepRun struct {
	key, step, opID string
}

// gwResources are what one gateway owns in the simulated world.
type gwResources struct {
	namespace, database, domain, deployment, service, routes bool
	availableAt                                              time.Time
	triggers                                                 int
}

// gwWorld simulates the resources of every gateway, records each step run and
// injects faults.
type gwWorld struct {
	startDelay time.Duration // how long a Deployment takes to be available
	// hook, when set, runs before each step's effect; a non-zero outcome or
	// an error replaces the step's result.
	hook func(r stepRun) (sm.Outcome, error)
	// after, when set, runs after each step's effect.
	after func(r stepRun)

	// mu guards res and runs.
	mu   sync.Mutex
	res  map[string]*gwResources
	runs []stepRun
}

func newGWWorld() *gwWorld { return &gwWorld{res: make(map[string]*gwResources)} }

func (w *gwWorld) of(key string) *gwResources {
	r := w.res[key]
	if r == nil {
		r = &gwResources{}
		w.res[key] = r
	}
	return r
}

// steps returns the step actions of the gateway machine over w.
func (w *gwWorld) steps() map[string]driver.StepFunc[gwSpec, gwStatus] {
	steps := make(map[string]driver.StepFunc[gwSpec, gwStatus])
	for _, name := range slices.Concat(creatingSteps, startingSteps, stoppingSteps, deletingSteps) {
		steps[name] = func(ctx context.Context, obj *gwObject, opID string) (sm.Outcome, error) {
			return w.run(obj, stepRun{key: obj.Key, step: name, opID: opID})
		}
	}
	return steps
}

func (w *gwWorld) run(obj *gwObject, run stepRun) (sm.Outcome, error) {
	if w.hook != nil {
		if out, err := w.hook(run); out != 0 || err != nil {
			return out, err
		}
	}
	w.mu.Lock()
	w.runs = append(w.runs, run)
	r := w.of(run.key)
	out := sm.Done
	switch run.step {
	case "create_namespace":
		r.namespace = true
		obj.Status.Namespace = "ns-" + run.opID
	case "create_database":
		r.database = true
	case "create_runtime_domain":
		r.domain = true
	case "create_deployment":
		if !r.deployment {
			r.deployment = true
			r.availableAt = time.Now().Add(w.startDelay)
		}
	case "create_service":
		r.service = true
	case "activate_runtime_domain":
		r.routes = true
	case "deactivate_runtime_domain":
		r.routes = false
	case "delete_deployment":
		r.deployment = false
	case "delete_service":
		r.service = false
	case "delete_cron_triggers":
		if r.triggers > 0 {
			r.triggers--
			out = sm.Progressed
		}
	case "delete_runtime_domain":
		r.domain, r.routes = false, false
	case "delete_instance":
		r.deployment, r.service = false, false
	case "delete_database":
		r.database = false
	case "delete_namespace":
		r.namespace = false
	}
	w.mu.Unlock()
	if w.after != nil {
		w.after(run)
	}
	return out, nil
}

func (w *gwWorld) observers() map[string]driver.ObserverFunc[gwSpec, gwStatus] {
	fact := func(f func(r *gwResources) bool) driver.ObserverFunc[gwSpec, gwStatus] {
		return func(ctx context.Context, obj *gwObject) (bool, string, error) {
			w.mu.Lock()
			defer w.mu.Unlock()
			return f(w.of(obj.Key)), "", nil
		}
	}
	return map[string]driver.ObserverFunc[gwSpec, gwStatus]{
		"namespace_ready":        fact(func(r *gwResources) bool { return r.namespace }),
		"database_ready":         fact(func(r *gwResources) bool { return r.database }),
		"runtime_domain_present": fact(func(r *gwResources) bool { return r.domain }),
		"deployment_available": fact(func(r *gwResources) bool {
			return r.deployment && !time.Now().Before(r.availableAt)
		}),
		"instance_present": fact(func(r *gwResources) bool { return r.deployment || r.service }),
	}
}

// stepsRun returns the names of the steps run for key, in order.
func (w *gwWorld) stepsRun(key string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, r := range w.runs {
		if r.key == key {
			out = append(out, r.step)
		}
	}
	return out
}

// opIDs returns, for key, the operation id of each step run, in order.
func (w *gwWorld) opIDs(key string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, r := range w.runs {
		if r.key == key {
			out = append(out, r.opID)
		}
	}
	return out
}

func (w *gwWorld) resources(key string) gwResources {
	w.mu.Lock()
	defer w.mu.Unlock()
	return *w.of(key)
}

// gwFixture is a memory store holding the ApiGateway kind, its collection,
// a world and a driver over them.
type gwFixture struct {
	mem   *memory.Store
	coll  *store.Collection[gwSpec, gwStatus]
	world *gwWorld
	m     *sm.Machine[gwState, gwPhase]
}

func newGWFixture(t testing.TB, kinds ...string) *gwFixture {
	t.Helper()
	mem, err := memory.New(memory.Config{Kinds: append([]string{"ApiGateway"}, kinds...)})
	if err != nil {
		t.Fatal(err)
	}
	return newGWFixtureOn(t, mem, mem)
}

func newGWFixtureOn(t testing.TB, mem *memory.Store, b store.Backend) *gwFixture {
	t.Helper()
	coll, err := store.NewCollection[gwSpec, gwStatus](b, "ApiGateway", store.CollectionConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return &gwFixture{mem: mem, coll: coll, world: newGWWorld(), m: gatewayMachine(t)}
}

// runsUnder returns the id of the operation a step of obj, as stored, runs
// under: the stored operation's, or for a document whose status the driver
// never wrote (it records the generation with every status), the
// document's UID, which its first operation takes. It is empty when no
// operation is stored.
func runsUnder(obj *gwObject) string {
	switch {
	case obj.Status.Operation != nil:
		return obj.Status.Operation.ID
	case obj.Status.ObservedGeneration == 0:
		return obj.UID
	}
	return ""
}

// counterIDs returns an operation id generator counting op-1, op-2, …
func counterIDs() func() string {
	var mu sync.Mutex
	n := 0
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		n++
		return fmt.Sprintf("op-%d", n)
	}
}

// edit rebuilds the fixture's machine from the gateway definition as edit
// changes it.
func (f *gwFixture) edit(t testing.TB, edit func(d *sm.Definition[gwState, gwPhase])) {
	t.Helper()
	def := gatewayDefinition()
	edit(&def)
	m, err := sm.New(def)
	if err != nil {
		t.Fatal(err)
	}
	f.m = m
}

func (f *gwFixture) config() driver.Config[gwSpec, gwStatus] {
	return driver.Config[gwSpec, gwStatus]{
		Steps:          f.world.steps(),
		Observers:      f.world.observers(),
		NewOperationID: counterIDs(),
	}
}

func (f *gwFixture) driver(t testing.TB, cfg driver.Config[gwSpec, gwStatus]) *driver.Driver[gwSpec, gwStatus] {
	t.Helper()
	d, err := driver.New(f.coll, f.m, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func (f *gwFixture) create(t testing.TB, key string, intent gwState) *gwObject {
	t.Helper()
	obj, err := f.coll.Create(context.Background(), &gwObject{Meta: store.Meta{Key: key}, Spec: gwSpec{State: intent}})
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

func (f *gwFixture) get(t testing.TB, key string) *gwObject {
	t.Helper()
	obj, err := f.coll.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

// settle reconciles key until the driver reports nothing more to do, and
// returns the last result. It fails the test after 100 reconciles.
func settle(t testing.TB, d *driver.Driver[gwSpec, gwStatus], key string) controller.Result {
	t.Helper()
	for range 100 {
		res, err := d.Reconcile(context.Background(), key)
		if err != nil {
			t.Fatalf("reconcile %s: %v", key, err)
		}
		if res.RequeueAfter == 0 {
			return res
		}
		if res.RequeueAfter <= 10*time.Millisecond {
			// A failed step's first backoff (5 ms) passes in real time;
			// without waiting, a fast machine spends every turn before it.
			time.Sleep(res.RequeueAfter)
		}
	}
	t.Fatalf("%s did not settle", key)
	return controller.Result{}
}

var errInjected = errors.New("injected fault")

// run runs c until ctx ends and returns the channel Run's error arrives on.
func run(c *controller.Controller, ctx context.Context) <-chan error {
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	return done
}
