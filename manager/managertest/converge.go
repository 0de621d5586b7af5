package managertest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tendhq/tend/driver"
	"github.com/tendhq/tend/informer"
	"github.com/tendhq/tend/manager"

	"github.com/tendhq/tend/internal/wait"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tendhq/tend/controller"
	sm "github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// ConvergeConfig configures [Converge].
type ConvergeConfig struct {
	// Open returns a fresh, empty backend holding kinds, released when b
	// ends. Required.
	Open func(b *testing.B, kinds []string) store.Backend
	// Documents is how many documents to drive. Zero means 10,000.
	Documents int
	// Workers is how many documents the controller reconciles at once. Zero
	// means 8.
	Workers int
	// ServerCPU, if set, returns the CPU time the backend's server has used
	// so far, for a server outside the benchmark's process; Converge then
	// reports what it used while converging, as server-cpu-s/converge.
	ServerCPU func() (time.Duration, error)
}

// The gateway-like machine [Converge] drives.
const (
	convergeKind   = "ApiGateway"
	convergeTarget = "Started"
	// latencySamples is how many sequential status writes measure the
	// single-write latency.
	latencySamples = 200
)

type gwSpec struct {
	State string `json:"state"`
}

func (s gwSpec) Intent() string { return s.State }

type gwStatus struct {
	sm.Status[string, string]
}

func (s *gwStatus) MachineStatus() *sm.Status[string, string] { return &s.Status }

// gatewayMachine is an ApiGateway's way up: Creating (three steps) →
// Created → Starting (three steps) → Started.
func gatewayMachine() (*sm.Machine[string, string], error) {
	return sm.New(sm.Definition[string, string]{
		Name:    convergeKind,
		States:  []string{"Running"},
		Initial: "Creating",
		Phases: []sm.PhaseSpec[string]{
			{Phase: "Creating", Type: sm.Transitional, Then: "Created", FailTo: "Failed",
				Steps:      []string{"create_namespace", "create_database", "create_runtime_domain"},
				Completion: []sm.Require{sm.Is("namespace_ready"), sm.Is("database_ready"), sm.Is("runtime_domain_present")}},
			{Phase: "Created"},
			{Phase: "Starting", Type: sm.Transitional, Then: convergeTarget, FailTo: "Failed",
				Steps:      []string{"create_deployment", "create_service", "activate_runtime_domain"},
				Completion: []sm.Require{sm.Is("deployment_available")}},
			{Phase: convergeTarget},
			{Phase: "Failed", Type: sm.Fault},
		},
		Settled: []sm.Settle[string, string]{
			{State: "Running", Phase: convergeTarget},
		},
		Rules: []sm.Rule[string, string]{
			{State: "Running", Phase: "Created", Begin: "Starting"},
		},
	})
}

// WriteCounter is a store.Backend that counts the writes made through it:
// creations, spec and status updates and deletions, failed ones included.
// A benchmark wraps its store in one to report writes per document.
type WriteCounter struct {
	store.Backend
	writes atomic.Int64
}

// Writes returns how many writes were made through c since it was made or
// last reset.
func (c *WriteCounter) Writes() int64 { return c.writes.Load() }

// Reset sets the count back to zero, for a benchmark that counts only what
// follows its setup.
func (c *WriteCounter) Reset() { c.writes.Store(0) }

// Create counts the write and passes it on.
func (c *WriteCounter) Create(ctx context.Context, d store.Document) (store.Document, error) {
	c.writes.Add(1)
	return c.Backend.Create(ctx, d)
}

// UpdateSpec counts the write and passes it on.
func (c *WriteCounter) UpdateSpec(ctx context.Context, d store.Document) (store.Document, error) {
	c.writes.Add(1)
	return c.Backend.UpdateSpec(ctx, d)
}

// UpdateStatus counts the write and passes it on.
func (c *WriteCounter) UpdateStatus(ctx context.Context, d store.Document) (store.Document, error) {
	c.writes.Add(1)
	return c.Backend.UpdateStatus(ctx, d)
}

// Delete counts the write and passes it on.
func (c *WriteCounter) Delete(ctx context.Context, kind, key string, opts store.DeleteOptions) error {
	c.writes.Add(1)
	return c.Backend.Delete(ctx, kind, key, opts)
}

// Converge measures how long one controller running a State/Phase driver
// takes to bring [ConvergeConfig].Documents ApiGateway documents with
// intent Running from Creating to Started over the backend, with steps and
// observers that return at once, so that the time is the store's and the
// controller's. Each iteration opens a fresh backend, creates the
// documents untimed, then times the convergence. It reports:
//
//   - s/converge: the time until every document is Started;
//   - writes/converge: the store writes made meanwhile (creations, spec and
//     status updates, deletions, failed ones included);
//   - write-ms: the latency of one status write, the mean of sequential
//     writes measured before the run;
//   - overhead: s/converge ÷ (writes × write latency). Below 1, the
//     workers' writes overlapped; above 1, time went elsewhere than into
//     writes;
//   - cpu-s/converge: the CPU time the benchmark's process used while
//     converging (an embedded server's included), and, with
//     [ConvergeConfig].ServerCPU, server-cpu-s/converge: the server's. On
//     a shared machine they measure the work done, whatever the wall clock
//     says.
func Converge(b *testing.B, cfg ConvergeConfig) {
	if cfg.Open == nil {
		b.Fatal("managertest: ConvergeConfig.Open is nil")
	}
	docs, workers := cmp.Or(cfg.Documents, 10_000), cmp.Or(cfg.Workers, 8)
	if docs < 0 || workers < 0 {
		b.Fatal("managertest: ConvergeConfig.Documents and Workers must not be negative")
	}
	var total run
	for range b.N {
		r, err := converge(b, cfg, cfg.Open(b, []string{convergeKind}), docs, workers)
		if err != nil {
			b.Fatal(err)
		}
		total.elapsed += r.elapsed
		total.writes += r.writes
		total.latency += r.latency
		total.cpu += r.cpu
		total.serverCPU += r.serverCPU
	}
	n := float64(b.N)
	b.ReportMetric(total.elapsed.Seconds()/n, "s/converge")
	b.ReportMetric(float64(total.writes)/n, "writes/converge")
	b.ReportMetric(float64(total.latency.Nanoseconds())/1e6/n, "write-ms")
	b.ReportMetric(float64(total.elapsed)/(float64(total.writes)*float64(total.latency)/n), "overhead")
	if _, ok := processCPU(); ok {
		b.ReportMetric(total.cpu.Seconds()/n, "cpu-s/converge")
	}
	if cfg.ServerCPU != nil {
		b.ReportMetric(total.serverCPU.Seconds()/n, "server-cpu-s/converge")
	}
}

// run is what one convergence measured.
type run struct {
	elapsed   time.Duration // until every document was Started
	writes    int64         // store writes meanwhile
	latency   time.Duration // of one sequential status write, measured before
	cpu       time.Duration // used by this process meanwhile
	serverCPU time.Duration // used by the server meanwhile, with ConvergeConfig.ServerCPU
}

// cpuTimes returns the CPU time of this process (zero where unknown) and,
// with cfg.ServerCPU, of the server.
func cpuTimes(cfg ConvergeConfig) (proc, server time.Duration, err error) {
	proc, _ = processCPU()
	if cfg.ServerCPU == nil {
		return proc, 0, nil
	}
	server, err = cfg.ServerCPU()
	return proc, server, err
}

// converge runs one convergence and returns what it measured.
func converge(b *testing.B, cfg ConvergeConfig, backend store.Backend, docs, workers int) (run, error) {
	b.StopTimer()
	defer b.StartTimer()
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	counted := &WriteCounter{Backend: backend}
	gws, err := store.NewCollection[gwSpec, gwStatus](counted, convergeKind, store.CollectionConfig{})
	if err != nil {
		return run{}, err
	}
	latency, err := writeLatency(ctx, backend)
	if err != nil {
		return run{}, err
	}
	m, err := gatewayMachine()
	if err != nil {
		return run{}, err
	}
	instant := func(context.Context, *store.Object[gwSpec, gwStatus], string) (sm.Outcome, error) {
		return sm.Done, nil
	}
	holds := func(context.Context, *store.Object[gwSpec, gwStatus]) (bool, string, error) { return true, "", nil }
	steps := map[string]driver.StepFunc[gwSpec, gwStatus]{}
	for _, s := range m.Steps() {
		steps[s] = instant
	}
	observers := map[string]driver.ObserverFunc[gwSpec, gwStatus]{}
	for _, c := range m.Conditions() {
		observers[c] = holds
	}
	reg := prometheus.NewRegistry()
	cache, err := informer.NewFactory(counted, informer.FactoryConfig{})
	if err != nil {
		return run{}, err
	}
	d, err := driver.New(gws, m, driver.Config[gwSpec, gwStatus]{
		Steps: steps, Observers: observers, MetricsRegisterer: reg, Cache: cache,
	})
	if err != nil {
		return run{}, err
	}
	c, err := controller.New(controller.Config{Name: "gateways", Reconciler: d, Sources: []controller.Source{d.Source()}, Workers: workers})
	if err != nil {
		return run{}, err
	}
	mgr, err := manager.New(manager.Config{Controllers: []*controller.Controller{c}, Informers: cache})
	if err != nil {
		return run{}, err
	}
	if err := createAll(ctx, gws, docs); err != nil {
		return run{}, err
	}

	counted.writes.Store(0)
	cpu0, server0, err := cpuTimes(cfg)
	if err != nil {
		return run{}, err
	}
	b.StartTimer()
	start := time.Now()
	var wg sync.WaitGroup
	runErr := make(chan error, 1)
	wg.Go(func() { runErr <- mgr.Run(ctx) })
	for {
		n, err := started(reg)
		if err != nil {
			return run{}, err
		}
		if n >= docs {
			break
		}
		if err := wait.Sleep(ctx, 10*time.Millisecond); err != nil {
			return run{}, err
		}
	}
	r := run{elapsed: time.Since(start), writes: counted.Writes(), latency: latency}
	cpu1, server1, err := cpuTimes(cfg)
	if err != nil {
		return run{}, err
	}
	r.cpu, r.serverCPU = cpu1-cpu0, server1-server0
	b.StopTimer()
	cancel()
	wg.Wait()
	if err := <-runErr; err != nil && !errors.Is(err, context.Canceled) {
		return run{}, err
	}
	return r, nil
}

// writeLatency returns the mean latency of sequential status writes to a
// document it creates and deletes.
func writeLatency(ctx context.Context, s store.Backend) (time.Duration, error) {
	d, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: convergeKind, Key: "latency-probe"}, Spec: []byte(`{}`)})
	if err != nil {
		return 0, err
	}
	start := time.Now()
	for i := range latencySamples {
		d.Status = fmt.Appendf(d.Status[:0], `{"n":%d}`, i)
		if d, err = s.UpdateStatus(ctx, d); err != nil {
			return 0, err
		}
	}
	latency := time.Since(start) / latencySamples
	return latency, s.Delete(ctx, convergeKind, d.Meta.Key, store.DeleteOptions{})
}

// createAll creates the documents, eight at a time.
func createAll(ctx context.Context, gws *store.Collection[gwSpec, gwStatus], docs int) error {
	var next atomic.Int64
	errs := make(chan error, 8)
	for range cap(errs) {
		go func() {
			for i := int(next.Add(1)) - 1; i < docs; i = int(next.Add(1)) - 1 {
				obj := &store.Object[gwSpec, gwStatus]{Meta: store.Meta{Key: fmt.Sprintf("team-%d/gw-%d", i%100, i)}, Spec: gwSpec{State: "Running"}}
				if _, err := gws.Create(ctx, obj); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	var first error
	for range cap(errs) {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// started returns how many documents the driver moved into Started,
// from its phase transition metric.
func started(reg *prometheus.Registry) (int, error) {
	families, err := reg.Gather()
	if err != nil {
		return 0, err
	}
	for _, f := range families {
		if f.GetName() != "tend_phase_transitions_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "to" && l.GetValue() == convergeTarget {
					return int(m.GetCounter().GetValue()), nil
				}
			}
		}
	}
	return 0, nil
}
