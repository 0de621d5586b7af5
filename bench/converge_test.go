package bench

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tendhq/tend/driver"
	"github.com/tendhq/tend/informer"
	"github.com/tendhq/tend/manager"

	"github.com/tendhq/tend/manager/managertest"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/controller"
	sm "github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// convergeDocs is how many documents BenchmarkConverge drives: 100,000
// unless -converge.docs says otherwise (for a quick look on a busy machine).
var convergeDocs = flag.Int("converge.docs", 100_000, "documents BenchmarkConverge drives")

// convergeHistory is how many changes the store of BenchmarkConverge keeps:
// the store's default unless -converge.history says otherwise.
var convergeHistory = flag.Int("converge.history", 0, "changes the store of BenchmarkConverge keeps (0: the store's default)")

type gwSpec struct {
	State string `json:"state"`
}

func (s gwSpec) Intent() string { return s.State }

type gwStatus struct {
	sm.Status[string, string]
}

func (s *gwStatus) MachineStatus() *sm.Status[string, string] { return &s.Status }

// convergeMachine is the ApiGateway machine without deletion:
// Creating (three steps) → Created → Starting (three steps) → Started, and
// back through Stopping.
func convergeMachine(b *testing.B) *sm.Machine[string, string] {
	m, err := sm.New(sm.Definition[string, string]{
		Name:    "ApiGateway",
		States:  []string{"Running", "Stopped"},
		Initial: "Creating",
		Phases: []sm.PhaseSpec[string]{
			{Phase: "Creating", Type: sm.Transitional, Then: "Created",
				Steps:      []string{"create_namespace", "create_database", "create_runtime_domain"},
				Completion: []sm.Require{sm.Is("namespace_ready"), sm.Is("database_ready"), sm.Is("runtime_domain_present")}},
			{Phase: "Created"},
			{Phase: "Starting", Type: sm.Transitional, Then: "Started",
				Steps:      []string{"create_deployment", "create_service", "activate_runtime_domain"},
				Completion: []sm.Require{sm.Is("deployment_available")}},
			{Phase: "Started"},
			{Phase: "Stopping", Type: sm.Transitional, Then: "Stopped",
				Steps:      []string{"deactivate_runtime_domain", "delete_deployment", "delete_service"},
				Completion: []sm.Require{sm.Not("instance_present")}},
			{Phase: "Stopped"},
			{Phase: "Failed", Type: sm.Fault},
		},
		Settled: []sm.Settle[string, string]{
			{State: "Stopped", Phase: "Created"},
			{State: "Running", Phase: "Started"},
			{State: "Stopped", Phase: "Stopped"},
		},
		Rules: []sm.Rule[string, string]{
			{State: "Running", Phase: "Created", Begin: "Starting"},
			{State: "Stopped", Phase: "Started", Begin: "Stopping"},
			{State: "Running", Phase: "Stopped", Begin: "Starting"},
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// BenchmarkConverge creates 100,000 ApiGateway documents with intent Running
// on the memory store, then measures how long one tend controller running a
// State/Phase driver takes to bring every one from Creating to Started, with
// steps and observers that return at once (every document: two operations,
// six steps, six status writes). Metrics are on. It reports the time to
// converge (s/converge), the peak heap in use while converging
// (peak-heap-MiB, sampled every 10 ms) and the memory obtained from the OS
// (sys-MiB), the CPU time used while converging (cpu-s/converge), a figure
// that stays meaningful on a busy machine, and the store writes per document
// (writes/doc, counted by a wrapping store.Backend) with their ratio to the
// writes per document before the driver combined its writes
// (writes-vs-before, see [BenchmarkConvergeWrites]), and the lists the
// informer made (lists: 1 when its watch kept up with the store's history).
// Run it once per measurement:
//
//	cd bench && go test -run '^$' -bench 'Converge$' -benchtime 1x -count 5 .
func BenchmarkConverge(b *testing.B) {
	for _, workers := range []int{2, 8} {
		b.Run(fmt.Sprintf("docs-%d/workers-%d", *convergeDocs, workers), func(b *testing.B) {
			for range b.N {
				converge(b, workers)
			}
		})
	}
}

func converge(b *testing.B, workers int) {
	b.StopTimer()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The store is configured as a user gets it: it keeps its default
	// history of changes (unless -converge.history says otherwise), so the
	// peak heap is the driver's and the store's as they ship. A watch that fell further behind than that history would
	// list every document again; lists counts the lists, so a run that did
	// (on a busy machine) shows it.
	mem, err := memory.New(memory.Config{Kinds: []string{"ApiGateway"}, History: *convergeHistory})
	if err != nil {
		b.Fatal(err)
	}
	listed := &listCounter{Backend: mem}
	counted := &managertest.WriteCounter{Backend: listed}
	gws, c, reg := gatewayController(b, counted, workers)
	createGateways(ctx, b, gws, *convergeDocs)
	counted.Reset()
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	var peak atomic.Uint64
	sampled := make(chan struct{})
	stopSampling := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-stopSampling:
				return
			case <-t.C:
			}
		}
	}()

	b.StartTimer()
	cpu0 := cpuTime(b)
	start := time.Now()
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := c.Run(ctx); err != nil {
			b.Error(err)
		}
	})
	// Each look gathers every metric of the registry: looking more often
	// would measure the look.
	for started(b, reg) < *convergeDocs {
		time.Sleep(20 * time.Millisecond)
	}
	elapsed := time.Since(start)
	cpu := cpuTime(b) - cpu0
	writes, lists := counted.Writes(), listed.lists.Load()
	b.StopTimer()
	cancel()
	wg.Wait()
	close(stopSampling)
	<-sampled

	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	b.ReportMetric(elapsed.Seconds(), "s/converge")
	b.ReportMetric(float64(*convergeDocs)/elapsed.Seconds(), "docs/s")
	b.ReportMetric(cpu.Seconds(), "cpu-s/converge")
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(before.HeapInuse)/(1<<20), "store-heap-MiB")
	b.ReportMetric(float64(after.Sys)/(1<<20), "sys-MiB")
	perDoc := float64(writes) / float64(*convergeDocs)
	b.ReportMetric(perDoc, "writes/doc")
	b.ReportMetric(perDoc/writesBefore.total(), "writes-vs-before")
	b.ReportMetric(float64(lists), "lists")
	// The framework's CPU per status write, against the typed collection's
	// own UpdateStatus (encode, store, decode) measured now, on the same
	// store and a converged document.
	perWrite := float64(cpu.Microseconds()) / float64(writes)
	alone := updateStatusCPU(b, gws)
	b.ReportMetric(perWrite, "cpu-us/write")
	b.ReportMetric(alone, "update-status-cpu-us")
	b.ReportMetric(perWrite/alone, "write-cost-ratio")
}

// updateStatusCPU returns the CPU time, in µs, one Collection.UpdateStatus
// of a converged gateway's status takes on gws's store, alone: encoding
// the status, the store's write, decoding the result.
func updateStatusCPU(b *testing.B, gws *store.Collection[gwSpec, gwStatus]) float64 {
	ctx := context.Background()
	o, err := gws.Get(ctx, "team-0/gw-0")
	if err != nil {
		b.Fatal(err)
	}
	const n = 20_000
	cpu0 := cpuTime(b)
	for i := range n {
		o.Status.ObservedGeneration = int64(100 + i%2) // a change, so a write
		if o, err = gws.UpdateStatus(ctx, o); err != nil {
			b.Fatal(err)
		}
	}
	return float64((cpuTime(b) - cpu0).Microseconds()) / n
}

// listCounter counts the lists of its backend: the informer's first list,
// and any list again after its watch fell behind the store's history.
type listCounter struct {
	store.Backend
	lists atomic.Int64
}

func (c *listCounter) List(ctx context.Context, kind string, opts store.ListOptions) (store.ListResult, error) {
	c.lists.Add(1)
	return c.Backend.List(ctx, kind, opts)
}

// gatewayController returns a controller running a State/Phase driver of
// the ApiGateway documents of backend over convergeMachine, with steps and
// observers that return at once and its metrics in the registry returned.
//
// The controller runs under a manager that shares one informer cache of the
// kind between the driver's source and its reads, as a user's does.
func gatewayController(b *testing.B, backend store.Backend, workers int) (*store.Collection[gwSpec, gwStatus], *manager.Manager, *prometheus.Registry) {
	gws, err := store.NewCollection[gwSpec, gwStatus](backend, "ApiGateway", store.CollectionConfig{})
	if err != nil {
		b.Fatal(err)
	}
	instant := func(context.Context, *store.Object[gwSpec, gwStatus], string) (sm.Outcome, error) {
		return sm.Done, nil
	}
	holds := func(v bool) driver.ObserverFunc[gwSpec, gwStatus] {
		return func(context.Context, *store.Object[gwSpec, gwStatus]) (bool, string, error) { return v, "", nil }
	}
	m := convergeMachine(b)
	steps := map[string]driver.StepFunc[gwSpec, gwStatus]{}
	for _, s := range m.Steps() {
		steps[s] = instant
	}
	reg := prometheus.NewRegistry()
	cache, err := informer.NewFactory(backend, informer.FactoryConfig{})
	if err != nil {
		b.Fatal(err)
	}
	d, err := driver.New(gws, m, driver.Config[gwSpec, gwStatus]{
		Cache: cache,
		Steps: steps,
		Observers: map[string]driver.ObserverFunc[gwSpec, gwStatus]{
			"namespace_ready": holds(true), "database_ready": holds(true), "runtime_domain_present": holds(true),
			"deployment_available": holds(true), "instance_present": holds(false),
		},
		MetricsRegisterer: reg,
	})
	if err != nil {
		b.Fatal(err)
	}
	// Count arrivals in Started through the driver's own metric.
	c, err := controller.New(controller.Config{Name: "gateways", Reconciler: d, Sources: []controller.Source{d.Source()},
		Workers: workers})
	if err != nil {
		b.Fatal(err)
	}
	mgr, err := manager.New(manager.Config{Controllers: []*controller.Controller{c}, Informers: cache})
	if err != nil {
		b.Fatal(err)
	}
	return gws, mgr, reg
}

// createGateways creates n ApiGateway documents with intent Running.
func createGateways(ctx context.Context, b *testing.B, gws *store.Collection[gwSpec, gwStatus], n int) {
	for i := range n {
		obj := &store.Object[gwSpec, gwStatus]{Meta: store.Meta{Key: fmt.Sprintf("team-%d/gw-%d", i%100, i)}, Spec: gwSpec{State: "Running"}}
		if _, err := gws.Create(ctx, obj); err != nil {
			b.Fatal(err)
		}
	}
}

// cpuTime returns the user and system CPU time the process has used: on a
// shared machine it measures the work done, whatever the wall clock says.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// started returns how many documents the driver moved into Started.
func started(b *testing.B, reg *prometheus.Registry) int {
	families, err := reg.Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "tend_phase_transitions_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "to" && l.GetValue() == "Started" {
					return int(m.GetCounter().GetValue())
				}
			}
		}
	}
	return 0
}
