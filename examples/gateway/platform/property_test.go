package platform

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/examples/gateway/infra"
	sm "github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/statemachine/smtest"
	"github.com/tendhq/tend/store"
)

// propertyBatches runs each machine's property test this many times, each
// with rapid's number of checks (100 by default): 2 machines × 5 × 100 =
// 1,000 cases per run.
const propertyBatches = 5

// world is what both machines' worlds share: a memory store, the simulated
// infrastructure with failures injected, and a platform whose steps and probes
// are the real ones. Its clock follows the harness's and moves on by a second
// each time a step reports it is waiting, as a controller polling would.
type world struct {
	ctx   context.Context
	clock time.Time
	sim   *infra.Sim
	p     *Platform
}

func newWorld(t *rapid.T) *world {
	w := &world{ctx: context.Background()}
	st, err := memory.New(memory.Config{Kinds: Kinds()})
	if err != nil {
		t.Fatal(err)
	}
	delay := func(label string) time.Duration {
		return time.Duration(rapid.Int64Range(0, int64(20*time.Second)).Draw(t, label))
	}
	w.sim, err = infra.NewSim(infra.SimConfig{
		ReadyDelay:  delay("ready delay"),
		DeleteDelay: delay("delete delay"),
		FailureRate: rapid.Float64Range(0, 0.2).Draw(t, "failure rate"),
		Seed:        rapid.Uint64().Draw(t, "seed"),
		Now:         func() time.Time { return w.clock },
	})
	if err != nil {
		t.Fatal(err)
	}
	if w.p, err = New(Config{Store: st, Cluster: w.sim, Databases: w.sim}); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *world) at(now time.Time) {
	if now.After(w.clock) {
		w.clock = now
	}
}

// ran advances the clock when a step waits.
func (w *world) ran(out sm.Outcome) {
	if out == sm.Progressed {
		w.clock = w.clock.Add(time.Second)
	}
}

// gatewayWorld drives one gateway. Its runtime domain is driven by the real
// domain driver, one reconcile each time the harness acts, as its own
// controller would.
type gatewayWorld struct {
	*world
	id    string
	steps map[string]gatewayStep
	obs   map[string]gatewayObserver
}

func newGatewayWorld(t *rapid.T) smtest.World[GatewayState, GatewayPhase] {
	w := &gatewayWorld{world: newWorld(t), id: "gw-1"}
	w.steps, w.obs = w.p.gatewaySteps(), w.p.gatewayObservers()
	spec := GatewaySpec{Image: "runtime:1"}
	if rapid.Bool().Draw(t, "custom domain") {
		spec.CustomDomain = "api.example.com"
	}
	gw, err := w.p.CreateGateway(w.ctx, w.id, spec)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rapid.IntRange(0, 3).Draw(t, "cloud functions") {
		if err := w.p.AddCloudFunction(w.ctx, gw, fmt.Sprint("fn-", i), CloudFunctionSpec{Runtime: "node"}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range rapid.IntRange(0, 3).Draw(t, "cron triggers") {
		if err := w.p.AddCronTrigger(w.ctx, gw, fmt.Sprint("tr-", i), CronTriggerSpec{Function: "fn-0", Schedule: "@daily"}); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

func (w *gatewayWorld) gateway() (*Gateway, error) { return w.p.docs.Gateways.Get(w.ctx, w.id) }

// domainTick is one reconcile of the runtime domain by its own driver.
func (w *gatewayWorld) domainTick() {
	_, _ = w.p.domains.Reconcile(w.ctx, w.id)
}

func (w *gatewayWorld) Run(d sm.Decision[GatewayState, GatewayPhase], now time.Time) (sm.Outcome, error) {
	w.at(now)
	w.domainTick()
	gw, err := w.gateway()
	if err != nil {
		return sm.Failed, err
	}
	out, err := w.steps[d.Step](w.ctx, gw, d.Operation.ID)
	w.ran(out)
	if err != nil && out != sm.FailedTerminal {
		out = sm.Failed
	}
	return out, err
}

func (w *gatewayWorld) Observe(now time.Time) []sm.Observation {
	w.at(now)
	w.domainTick()
	gw, err := w.gateway()
	if err != nil {
		return nil
	}
	var obs []sm.Observation
	for _, name := range slices.Sorted(maps.Keys(w.obs)) {
		if ok, reason, err := w.obs[name](w.ctx, gw); err == nil {
			obs = append(obs, sm.Observation{Name: name, Status: ok, Reason: reason})
		}
	}
	return obs
}

func (w *gatewayWorld) Check(GatewayState, sm.Status[GatewayState, GatewayPhase]) error {
	return CheckOrder(w.sim.Ops())
}

func (w *gatewayWorld) Matches(intent GatewayState, _ sm.Status[GatewayState, GatewayPhase]) error {
	have := w.resources()
	instance := append(routeRefs(w.id), deploymentRef(w.id), serviceRef(w.id))
	switch intent {
	case Running, Restarting:
		for _, ref := range instance {
			if o, ok := have[ref]; !ok || !o.Ready {
				return fmt.Errorf("settled %s but %v is not ready", intent, ref)
			}
		}
	case Stopped:
		for _, ref := range instance {
			if _, ok := have[ref]; ok {
				return fmt.Errorf("settled Stopped but %v remains", ref)
			}
		}
	case Deleted:
		left, err := w.p.Leftovers(w.ctx, w.id, w.sim.Resources(), w.sim.DatabaseNames())
		if err != nil {
			return err
		}
		// The gateway's own document goes once its controller sees the
		// final pair; everything else must be gone already.
		left = slices.DeleteFunc(left, func(s string) bool { return s == "document ApiGateway "+w.id })
		if len(left) > 0 {
			return fmt.Errorf("settled Deleted but %v remain", left)
		}
	}
	return nil
}

// resources are the resources that exist, read without injected failures.
func (w *world) resources() map[infra.Ref]infra.Observed {
	have := map[infra.Ref]infra.Observed{}
	for _, o := range w.sim.Resources() {
		have[o.Ref] = o
	}
	return have
}

// domainWorld drives one runtime domain alone, in a namespace that exists.
type domainWorld struct {
	*world
	id    string
	steps map[string]domainStep
	obs   map[string]domainObserver
}

func newDomainWorld(t *rapid.T) smtest.World[DomainState, DomainPhase] {
	w := &domainWorld{world: newWorld(t), id: "gw-1"}
	w.steps, w.obs = w.p.domainSteps(), w.p.domainObservers()
	for w.sim.Apply(w.ctx, resource(w.id, namespaceRef(w.id), nil)) != nil {
	}
	spec := DomainSpec{State: Active, Gateway: w.id}
	if rapid.Bool().Draw(t, "custom domain") {
		spec.CustomDomain = "api.example.com"
	}
	if _, err := w.p.docs.Domains.Create(w.ctx, &Domain{Meta: store.Meta{Kind: KindRuntimeDomain, Key: w.id}, Spec: spec}); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *domainWorld) domain() (*Domain, error) { return w.p.docs.Domains.Get(w.ctx, w.id) }

func (w *domainWorld) Run(d sm.Decision[DomainState, DomainPhase], now time.Time) (sm.Outcome, error) {
	w.at(now)
	dm, err := w.domain()
	if err != nil {
		return sm.Failed, err
	}
	out, err := w.steps[d.Step](w.ctx, dm, d.Operation.ID)
	w.ran(out)
	if err != nil && out != sm.FailedTerminal {
		out = sm.Failed
	}
	return out, err
}

func (w *domainWorld) Observe(now time.Time) []sm.Observation {
	w.at(now)
	dm, err := w.domain()
	if err != nil {
		return nil
	}
	var obs []sm.Observation
	for _, name := range slices.Sorted(maps.Keys(w.obs)) {
		if ok, reason, err := w.obs[name](w.ctx, dm); err == nil {
			obs = append(obs, sm.Observation{Name: name, Status: ok, Reason: reason})
		}
	}
	return obs
}

// Check: a route that is not being deleted always has its plugin config.
func (w *domainWorld) Check(DomainState, sm.Status[DomainState, DomainPhase]) error {
	var routes, config bool
	for _, r := range w.sim.Resources() {
		switch {
		case r.Kind == infra.ApisixRoute && !r.Terminating:
			routes = true
		case r.Kind == infra.ApisixPluginConfig && !r.Terminating:
			config = true
		}
	}
	if routes && !config {
		return errors.New("a route points at a missing plugin config")
	}
	return nil
}

func (w *domainWorld) Matches(intent DomainState, _ sm.Status[DomainState, DomainPhase]) error {
	var kinds []string
	for _, r := range w.sim.Resources() {
		if r.Kind != infra.Namespace {
			kinds = append(kinds, r.Ref.String())
		}
	}
	dm, err := w.domain()
	if err != nil {
		return err
	}
	want := len(domainWants(dm))
	switch {
	case intent == Active && len(kinds) != want:
		return fmt.Errorf("settled Active with %d resources, want %d: %s", len(kinds), want, strings.Join(kinds, ", "))
	case intent != Active && len(kinds) != 0:
		return fmt.Errorf("settled %s but %s remain", intent, strings.Join(kinds, ", "))
	}
	return nil
}

// TestGatewayMachineProperties drives the ApiGateway machine with its real
// steps against the simulated infrastructure (failures injected by the
// infrastructure and by the harness, crash-restarts, random intents and
// delays), checking the ordering invariants after every action and that the
// world matches each settled intent.
func TestGatewayMachineProperties(t *testing.T) {
	m, err := GatewayMachine()
	if err != nil {
		t.Fatal(err)
	}
	for i := range propertyBatches {
		t.Run(fmt.Sprint("batch-", i+1), func(t *testing.T) {
			smtest.Check(t, smtest.Config[GatewayState, GatewayPhase]{Machine: m, World: newGatewayWorld, MaxAdvance: 10 * time.Second})
		})
	}
}

// TestDomainMachineProperties does the same for the RuntimeDomain machine,
// including its sanctioned Deleted → Creating cycle.
func TestDomainMachineProperties(t *testing.T) {
	m, err := DomainMachine()
	if err != nil {
		t.Fatal(err)
	}
	for i := range propertyBatches {
		t.Run(fmt.Sprint("batch-", i+1), func(t *testing.T) {
			smtest.Check(t, smtest.Config[DomainState, DomainPhase]{Machine: m, World: newDomainWorld, MaxAdvance: 10 * time.Second})
		})
	}
}
