package driver_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tendhq/tend/driver"
	"github.com/tendhq/tend/internal/metrictest"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tendhq/tend/controller"
	sm "github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// runController runs c until the test ends, and fails the test if Run
// returns an error.
func runController(t *testing.T, c *controller.Controller) {
	runControllerIn(t, context.Background(), c)
}

// TestDriverUnderController runs the driver in a controller with fake time:
// the Deployment becomes available 30 s after it is created, the driver polls
// at 0.1, 0.2, 0.4, … 6.4 s, then every 5 s, and the gateway is Started at
// 31.4 s. It checks the phase
// metrics and the logs on the way.
func TestDriverUnderController(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newGWFixture(t)
		f.world.startDelay = 30 * time.Second
		reg := prometheus.NewRegistry()
		core, logs := observer.New(zap.InfoLevel)
		cfg := f.config()
		cfg.WaitInterval = 5 * time.Second
		cfg.MetricsRegisterer = reg
		d := f.driver(t, cfg)
		c, err := controller.New(controller.Config{Name: "gateways", Reconciler: d, Sources: []controller.Source{d.Source()},
			Logger: zap.New(core)})
		if err != nil {
			t.Fatal(err)
		}
		runController(t, c)
		f.create(t, "gw", gwRunning)

		synctest.Wait()
		if st := f.get(t, "gw").Status; st.Phase != phStarting || len(st.Operation.Done) != len(startingSteps) {
			t.Fatalf("at 0 s: %+v, want Starting with its steps done", st.Status)
		}
		time.Sleep(29 * time.Second)
		synctest.Wait()
		if got := f.get(t, "gw").Status.Phase; got != phStarting {
			t.Fatalf("at 29 s: phase %s, want Starting", got)
		}
		time.Sleep(2399 * time.Millisecond)
		synctest.Wait()
		if got := f.get(t, "gw").Status.Phase; got != phStarting {
			t.Fatalf("at 31.399 s: phase %s, want Starting", got)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if got := f.get(t, "gw").Status.Phase; got != phStarted {
			t.Fatalf("at 31.4 s: phase %s, want Started", got)
		}

		for _, e := range [][2]string{{"Creating", "Created"}, {"Created", "Starting"}, {"Starting", "Started"}} {
			labels := map[string]string{"kind": "ApiGateway", "from": e[0], "to": e[1]}
			if got := metrictest.Value(t, reg, "tend_phase_transitions_total", labels); got != 1 {
				t.Errorf("transitions %v: %v, want 1", e, got)
			}
		}
		if got := histogramSum(t, reg, "tend_phase_duration_seconds", "Starting"); got != 31.4 {
			t.Errorf("time in Starting: %v s, want 31.4", got)
		}
		if got := metrictest.Value(t, reg, "tend_phase_duration_seconds", map[string]string{"phase": "Created"}); got != 1 {
			t.Errorf("time in Created observed %v times, want 1", got)
		}

		changes := logs.FilterMessage("phase changed").FilterField(zap.String("kind", "ApiGateway")).
			FilterField(zap.String("key", "gw")).All()
		if len(changes) != 3 {
			t.Errorf("%d phase-change logs with kind and key, want 3", len(changes))
		}
		var fromStarting int
		for _, e := range changes {
			fields := e.ContextMap()
			if _, ok := fields["reconcileID"]; !ok {
				t.Errorf("log without a reconcile id: %v", fields)
			}
			if fmt.Sprint(fields["from"]) == "Starting" {
				fromStarting++
				if fields["after"] != 31400*time.Millisecond {
					t.Errorf("left Starting after %v, want 31.4s: %v", fields["after"], fields)
				}
			}
		}
		if fromStarting != 1 {
			t.Errorf("%d logs of a change from Starting, want 1", fromStarting)
		}
	})
}

// histogramSum returns the sum of the observations of the histogram called
// name with the given phase label.
func histogramSum(t *testing.T, reg *prometheus.Registry, name, phase string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if metrictest.HasLabels(m, map[string]string{"phase": phase}) {
				return m.GetHistogram().GetSampleSum()
			}
		}
	}
	return 0
}

// The gateway's RuntimeDomain, reduced to what the cascade needs: the
// gateway creates it, and on deletion only sets its intent to Deleted; its
// own driver removes its routes and then the document.

type domainSpec struct {
	State string `json:"state"`
}

func (s domainSpec) Intent() string { return s.State }

type domainStatus struct {
	sm.Status[string, string]
}

type domainObject = store.Object[domainSpec, domainStatus]

func domainMachine(t testing.TB) *sm.Machine[string, string] {
	t.Helper()
	m, err := sm.New(sm.Definition[string, string]{
		Name:    "RuntimeDomain",
		States:  []string{"Active", "Deleted"},
		Initial: "Creating",
		Phases: []sm.PhaseSpec[string]{
			{Phase: "Creating", Type: sm.Transitional, Unbounded: true, Steps: []string{"create_routes"},
				Completion: []sm.Require{sm.Is("routes_present")}, Then: "Created"},
			{Phase: "Created"},
			{Phase: "Deleting", Type: sm.Transitional, NoReturn: true, Unbounded: true, Steps: []string{"delete_routes"},
				Completion: []sm.Require{sm.Not("routes_present")}, Then: "Deleted"},
			{Phase: "Deleted", Type: sm.Terminal},
		},
		Settled: []sm.Settle[string, string]{
			{State: "Active", Phase: "Created"},
			{State: "Deleted", Phase: "Deleted", Final: true},
		},
		Rules:    []sm.Rule[string, string]{{State: "Deleted", Phase: "Created", Begin: "Deleting"}},
		Refusals: []sm.RefusalRule[string, string]{{States: []string{"Active"}, Phases: []string{"Deleting", "Deleted"}, Reason: "a deleted domain stays deleted"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestDriverCascade deletes a gateway whose RuntimeDomain is a document with
// its own machine: the gateway's step sets the domain's intent and waits;
// the domain's driver removes its routes and the document; only then does
// the gateway go on to its instance, and finally both documents are gone.
func TestDriverCascade(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newGWFixture(t, "RuntimeDomain")
		domains, err := store.NewCollection[domainSpec, domainStatus](f.mem, "RuntimeDomain", store.CollectionConfig{})
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex // guards order and routes
		var order []string
		routes := map[string]bool{}
		note := func(s string) {
			mu.Lock()
			order = append(order, s)
			mu.Unlock()
		}

		dd, err := driver.New(domains, domainMachine(t), driver.Config[domainSpec, domainStatus]{
			Steps: map[string]driver.StepFunc[domainSpec, domainStatus]{
				"create_routes": func(_ context.Context, o *domainObject, _ string) (sm.Outcome, error) {
					mu.Lock()
					routes[o.Key] = true
					mu.Unlock()
					return sm.Done, nil
				},
				"delete_routes": func(_ context.Context, o *domainObject, _ string) (sm.Outcome, error) {
					mu.Lock()
					delete(routes, o.Key)
					mu.Unlock()
					note("domain:delete_routes")
					return sm.Done, nil
				},
			},
			Observers: map[string]driver.ObserverFunc[domainSpec, domainStatus]{
				"routes_present": func(_ context.Context, o *domainObject) (bool, string, error) {
					mu.Lock()
					defer mu.Unlock()
					return routes[o.Key], "", nil
				},
			},
		})
		if err != nil {
			t.Fatal(err)
		}

		cfg := f.config()
		children := func(ctx context.Context, gw *gwObject) int {
			objs, _, err := domains.List(ctx, store.ListOptions{OwnerUID: gw.UID})
			if err != nil {
				t.Error(err)
			}
			return len(objs)
		}
		cfg.Steps["create_runtime_domain"] = func(ctx context.Context, gw *gwObject, _ string) (sm.Outcome, error) {
			_, err := domains.Create(ctx, &domainObject{
				Meta: store.Meta{Key: gw.Key, Owners: []store.OwnerRef{{Kind: "ApiGateway", Key: gw.Key, UID: gw.UID, Controller: true}}},
				Spec: domainSpec{State: "Active"},
			})
			if err != nil && !errors.Is(err, store.ErrAlreadyExists) {
				return sm.Failed, err
			}
			return sm.Done, nil
		}
		cfg.Steps["delete_runtime_domain"] = func(ctx context.Context, gw *gwObject, _ string) (sm.Outcome, error) {
			return dd.Retire(ctx, store.ListOptions{OwnerUID: gw.UID}, func(s *domainSpec) { s.State = "Deleted" })
		}
		deleteInstance := cfg.Steps["delete_instance"]
		cfg.Steps["delete_instance"] = func(ctx context.Context, gw *gwObject, op string) (sm.Outcome, error) {
			note("gateway:delete_instance")
			return deleteInstance(ctx, gw, op)
		}
		cfg.Observers["runtime_domain_present"] = func(ctx context.Context, gw *gwObject) (bool, string, error) {
			return children(ctx, gw) > 0, "", nil
		}
		gd := f.driver(t, cfg)

		for _, c := range []controller.Config{
			{Name: "gateways", Reconciler: gd, Sources: []controller.Source{gd.Source(), controller.Owns(f.mem, "RuntimeDomain", "ApiGateway")}},
			{Name: "domains", Reconciler: dd, Sources: []controller.Source{dd.Source()}},
		} {
			ctrl, err := controller.New(c)
			if err != nil {
				t.Fatal(err)
			}
			runController(t, ctrl)
		}

		ctx := context.Background()
		f.create(t, "gw", gwRunning)
		synctest.Wait()
		if got := f.get(t, "gw").Status.Phase; got != phStarted {
			t.Fatalf("gateway phase %s, want Started", got)
		}
		dom, err := domains.Get(ctx, "gw")
		if err != nil || dom.Status.Phase != "Created" {
			t.Fatalf("domain %+v, %v; want Created", dom, err)
		}

		if _, err := gd.UpdateSpec(ctx, "gw", func(s *gwSpec) { s.State = gwDeleted }); err != nil {
			t.Fatal(err)
		}
		for range 10 {
			time.Sleep(time.Second)
			synctest.Wait()
		}
		if _, err := f.coll.Get(ctx, "gw"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("gateway still stored: %v", err)
		}
		if _, err := domains.Get(ctx, "gw"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("domain still stored: %v", err)
		}
		mu.Lock()
		defer mu.Unlock()
		if want := []string{"domain:delete_routes", "gateway:delete_instance"}; !slices.Equal(order, want) {
			t.Errorf("order %v, want %v", order, want)
		}
	})
}
