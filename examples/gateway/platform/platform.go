package platform

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/tendhq/tend/driver"
	"github.com/tendhq/tend/examples/gateway/infra"
	"github.com/tendhq/tend/manager"
	sm "github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
	"github.com/tendhq/tend/workqueue"
)

// ErrInvalidConfig is returned, wrapped with the reason, by [New].
var ErrInvalidConfig = errors.New("platform: invalid config")

// Config configures a [Platform].
type Config struct {
	// Store holds the documents; it must hold every kind of [Kinds]. Required.
	Store store.Backend
	// Cluster holds the cluster resources. Required.
	Cluster infra.Cluster
	// Databases holds the gateways' databases. Required.
	Databases infra.Databases
	// Workers is how many documents each controller reconciles at once. Zero
	// means 4.
	Workers int
	// Poll is how soon a controller looks again at a document whose step or
	// completion waits for the cluster (a Deployment becoming available, a
	// route disappearing). Zero means 50ms.
	Poll time.Duration
	// MaxBackoff caps the delay before a failed step is retried (the delay
	// doubles from 5ms with each consecutive failure). Zero means 2s.
	MaxBackoff time.Duration
	// CertificateLifetime is how long a custom domain's certificate is valid
	// once issued. Zero means 90 days.
	CertificateLifetime time.Duration
	// RenewBefore is how long before its certificate expires a runtime
	// domain renews it. Zero means 30 days.
	RenewBefore time.Duration
	// HealthEvery is how often the Deployment and Service of a Started
	// gateway are checked for drift. Zero means the machine's (a minute).
	HealthEvery time.Duration
	// Manager configures how replicas of the platform share the work (Mode,
	// Identity, lease timings) and what its controllers share: Logger,
	// MetricsRegisterer (the controllers', work queues' and phase metrics),
	// TracerProvider (the spans of the reconciles and of the drivers' steps
	// and observers) and History (the history of every document the drivers
	// reconcile; the manager runs the recorder). Its Store is Store, and its
	// controllers are the platform's. The zero value runs every controller
	// in this process alone, with no logs, metrics, spans or history.
	Manager manager.Config
	// NewOperationID returns the id of each new operation. Nil means a random
	// id.
	NewOperationID func() string
}

// Controller names, in logs and metrics.
const (
	GatewayController = "gateways"
	DomainController  = "runtime-domains"
)

// Platform is the gateway platform's control plane: the two machines, the
// drivers that run their steps, the controllers and the API a user calls.
// Create it with [New].
type Platform struct {
	docs    *Collections
	cluster infra.Cluster
	dbs     infra.Databases
	// certLifetime and renewBefore time the custom domains' certificates.
	certLifetime, renewBefore time.Duration
	gateways                  *driver.Driver[GatewaySpec, GatewayStatus]
	domains                   *driver.Driver[DomainSpec, DomainStatus]
	manager                   *manager.Manager
	// gatewayConfig is the gateways' driver's configuration: the driver
	// harness runs it on replicas of its own.
	gatewayConfig driver.Config[GatewaySpec, GatewayStatus]
	runs          atomic.Int64 // step runs
	failed        atomic.Int64 // step runs that failed
	probes        atomic.Int64 // probe runs
	probesFailed  atomic.Int64 // probe runs that failed
	// observe, when set (by tests, before Run), is called before and after
	// every step run with the document's kind and key.
	observe func(ev stepEvent)
}

// stepEvent is one step starting (Outcome zero) or ending.
type stepEvent struct {
	Kind, Key, Step string
	Outcome         sm.Outcome
	Err             error
}

// Stats counts the steps and probes a platform's controllers ran.
type Stats struct {
	// Steps counts every run of a step.
	Steps int64
	// Retried counts the runs that failed, each retried later with backoff.
	Retried int64
	// Probes counts every run of a probe: an observation of a condition a
	// completion or a health check is judged from.
	Probes int64
	// ProbesFailed counts the probe runs that failed, each run again after
	// Poll, as waiting would have (no backoff: waiting is made of reads).
	ProbesFailed int64
}

// Stats returns the counts so far.
func (p *Platform) Stats() Stats {
	return Stats{Steps: p.runs.Load(), Retried: p.failed.Load(), Probes: p.probes.Load(), ProbesFailed: p.probesFailed.Load()}
}

// counted wraps every step so that p counts its runs and failures.
func counted[Spec, Status any](p *Platform, steps map[string]driver.StepFunc[Spec, Status]) map[string]driver.StepFunc[Spec, Status] {
	for name, step := range steps {
		steps[name] = func(ctx context.Context, obj *store.Object[Spec, Status], opID string) (sm.Outcome, error) {
			if p.observe != nil {
				p.observe(stepEvent{Kind: obj.Kind, Key: obj.Key, Step: name})
			}
			out, err := step(ctx, obj, opID)
			if p.observe != nil {
				p.observe(stepEvent{Kind: obj.Kind, Key: obj.Key, Step: name, Outcome: out, Err: err})
			}
			p.runs.Add(1)
			if err != nil || out == sm.Failed || out == sm.FailedTerminal {
				p.failed.Add(1)
			}
			return out, err
		}
	}
	return steps
}

// countedProbes wraps every probe so that p counts its runs and failures.
func countedProbes[Spec, Status any](p *Platform, probes map[string]driver.ObserverFunc[Spec, Status]) map[string]driver.ObserverFunc[Spec, Status] {
	for name, probe := range probes {
		probes[name] = func(ctx context.Context, obj *store.Object[Spec, Status]) (bool, string, error) {
			ok, reason, err := probe(ctx, obj)
			p.probes.Add(1)
			if err != nil {
				p.probesFailed.Add(1)
			}
			return ok, reason, err
		}
	}
	return probes
}

// New builds the machines (a definition with a hole fails here, with an error
// naming the pair), their drivers and controllers. It starts nothing: see
// [Platform.Run].
func New(cfg Config) (*Platform, error) {
	switch {
	case cfg.Store == nil:
		return nil, fmt.Errorf("%w: Store is required", ErrInvalidConfig)
	case cfg.Cluster == nil:
		return nil, fmt.Errorf("%w: Cluster is required", ErrInvalidConfig)
	case cfg.Databases == nil:
		return nil, fmt.Errorf("%w: Databases is required", ErrInvalidConfig)
	case cfg.Workers < 0:
		return nil, fmt.Errorf("%w: Workers %d is negative", ErrInvalidConfig, cfg.Workers)
	case cfg.Poll < 0:
		return nil, fmt.Errorf("%w: Poll %v is negative", ErrInvalidConfig, cfg.Poll)
	case cfg.MaxBackoff < 0:
		return nil, fmt.Errorf("%w: MaxBackoff %v is negative", ErrInvalidConfig, cfg.MaxBackoff)
	case cfg.CertificateLifetime < 0 || cfg.RenewBefore < 0 || cfg.HealthEvery < 0:
		return nil, fmt.Errorf("%w: negative CertificateLifetime, RenewBefore or HealthEvery", ErrInvalidConfig)
	}
	// One schedule for everything that retries: failed steps (kept in the
	// documents' status) and failed reconciles.
	schedule := workqueue.ExponentialConfig{Max: cmp.Or(cfg.MaxBackoff, 2*time.Second)}
	backoff, err := workqueue.NewExponentialLimiter[string](schedule)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	workers := cmp.Or(cfg.Workers, 4)
	poll := cmp.Or(cfg.Poll, 50*time.Millisecond)
	docs, err := OpenCollections(cfg.Store)
	if err != nil {
		return nil, err
	}
	gdef := GatewayDefinition()
	for i := range gdef.Phases {
		if len(gdef.Phases[i].Health) > 0 && cfg.HealthEvery > 0 {
			gdef.Phases[i].HealthEvery = cfg.HealthEvery
		}
	}
	p := &Platform{docs: docs, cluster: cfg.Cluster, dbs: cfg.Databases,
		certLifetime: cmp.Or(cfg.CertificateLifetime, 90*24*time.Hour), renewBefore: cmp.Or(cfg.RenewBefore, 30*24*time.Hour)}
	mc := cfg.Manager
	mc.Store, mc.Controllers = cfg.Store, nil
	if p.manager, err = manager.New(mc); err != nil {
		return nil, fmt.Errorf("platform: %w", err)
	}
	// Each controller has a rate limiter of its own, on the schedule of the
	// drivers' backoff.
	options := func() (manager.Options, error) {
		limiter, err := workqueue.NewExponentialLimiter[string](schedule)
		return manager.Options{Workers: workers, RateLimiter: limiter}, err
	}
	p.gatewayConfig = driver.Config[GatewaySpec, GatewayStatus]{
		Steps: counted(p, p.gatewaySteps()), Observers: countedProbes(p, p.gatewayObservers()), NewOperationID: cfg.NewOperationID,
		WaitInterval: poll, ProgressInterval: poll, Backoff: backoff,
	}
	gopts, err := options()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if p.gateways, err = manager.Drive[GatewaySpec, GatewayStatus](p.manager, gdef).Named(GatewayController).
		Owns(KindRuntimeDomain).WithOptions(gopts).WithDriver(p.gatewayConfig).Complete(); err != nil {
		return nil, fmt.Errorf("platform: %w", err)
	}
	dopts, err := options()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if p.domains, err = manager.Drive[DomainSpec, DomainStatus](p.manager, DomainDefinition()).Named(DomainController).
		WithOptions(dopts).WithDriver(driver.Config[DomainSpec, DomainStatus]{
		Steps: counted(p, p.domainSteps()), Observers: countedProbes(p, p.domainObservers()), NewOperationID: cfg.NewOperationID,
		WaitInterval: poll, ProgressInterval: poll, Backoff: backoff,
		Timers: map[string]func(*Domain) time.Time{TimerRenewCertificate: p.renewCertificateAt},
	}).Complete(); err != nil {
		return nil, fmt.Errorf("platform: %w", err)
	}
	return p, nil
}

// Run runs the controllers until ctx ends, and returns once everything it
// started has stopped.
func (p *Platform) Run(ctx context.Context) error { return p.manager.Run(ctx) }

// Manager returns the manager that runs the platform's controllers: its
// Handler serves their probes, metrics and histories.
func (p *Platform) Manager() *manager.Manager { return p.manager }

// Identity names this replica (see manager.Config.Identity).
func (p *Platform) Identity() string { return p.manager.Identity() }

// Collections returns the typed views of the platform's documents.
func (p *Platform) Collections() *Collections { return p.docs }

// GatewayMachine builds the ApiGateway machine from [GatewayDefinition].
func GatewayMachine() (*sm.Machine[GatewayState, GatewayPhase], error) {
	return sm.New(GatewayDefinition())
}

// DomainMachine builds the RuntimeDomain machine from [DomainDefinition].
func DomainMachine() (*sm.Machine[DomainState, DomainPhase], error) {
	return sm.New(DomainDefinition())
}
