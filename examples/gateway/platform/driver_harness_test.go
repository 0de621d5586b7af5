package platform

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tendhq/tend/manager"

	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/driver/drivertest"
	"github.com/tendhq/tend/examples/gateway/infra"
	"github.com/tendhq/tend/store"
)

// gatewayHarness is the driver harness's configuration of the gateway
// machine: its real driver with the platform's real steps and probes, over
// a simulated cluster and database server failing 20% of calls, next to the
// runtime domains' real controller, on two replicas sharing the lead.
func gatewayHarness(t testing.TB) drivertest.Config[GatewaySpec, GatewayStatus, GatewayState, GatewayPhase] {
	m, err := GatewayMachine()
	if err != nil {
		t.Fatal(err)
	}
	return drivertest.Config[GatewaySpec, GatewayStatus, GatewayState, GatewayPhase]{
		Machine: m,
		Kind:    KindApiGateway,
		Kinds:   Kinds(),
		NewSpec: func() GatewaySpec { return GatewaySpec{Image: "runtime:1"} },
		Fixture: func(env drivertest.Env) (drivertest.Fixture[GatewaySpec, GatewayStatus], error) {
			sim, err := infra.NewSim(infra.SimConfig{
				ReadyDelay:  time.Duration(env.Rand.Int64N(int64(20 * time.Second))),
				DeleteDelay: time.Duration(env.Rand.Int64N(int64(10 * time.Second))),
				FailureRate: 0.2,
				Seed:        env.Rand.Uint64(),
			})
			if err != nil {
				return drivertest.Fixture[GatewaySpec, GatewayStatus]{}, err
			}
			p, err := New(Config{Store: env.Backend, Cluster: sim, Databases: sim})
			if err != nil {
				return drivertest.Fixture[GatewaySpec, GatewayStatus]{}, err
			}
			return drivertest.Fixture[GatewaySpec, GatewayStatus]{
				Driver: p.gatewayConfig,
				Sources: func(b store.Backend) []controller.Source {
					return []controller.Source{controller.Owns(b, KindRuntimeDomain, KindApiGateway)}
				},
				Controllers: func(b store.Backend) ([]*controller.Controller, error) {
					q, err := New(Config{Store: b, Cluster: sim, Databases: sim})
					if err != nil {
						return nil, err
					}
					// The domain controller reads the cache of q's manager, which
					// runs while that manager does; here a controller of its own
					// runs it, beside the domain controller.
					cache, err := controller.New(controller.Config{
						Name:       "domain-cache",
						Reconciler: controller.ReconcilerFunc(func(context.Context, string) (controller.Result, error) { return controller.Result{}, nil }),
						Sources: []controller.Source{controller.SourceFunc(func(ctx context.Context, _ controller.Enqueuer) error {
							return q.manager.Cache(b).Run(ctx)
						})},
					})
					if err != nil {
						return nil, err
					}
					return []*controller.Controller{q.manager.Controller(DomainController), cache}, nil
				},
				Invariant: func(ctx context.Context, id string, gw *Gateway) error {
					err := CheckOrder(sim.Ops())
					if gw == nil {
						left, lerr := p.Leftovers(ctx, id, sim.Resources(), sim.DatabaseNames())
						if lerr == nil && len(left) > 0 {
							lerr = fmt.Errorf("gateway removed, but %v remain", left)
						}
						err = errors.Join(err, lerr)
					}
					return err
				},
				Matches: func(ctx context.Context, gw *Gateway) error { return matches(sim, gw) },
			}, nil
		},
		// As SetGatewayState: Restarting comes with a new restart token.
		SetIntent: func(s *GatewaySpec, st GatewayState) {
			s.State, s.Restart = st, ""
			if st == Restarting {
				s.Restart = rand.Text()
			}
		},
		Request:  func(s *GatewaySpec, _, token string) { s.State, s.Restart = Restarting, token },
		Replicas: 2,
		Mode:     manager.LeaderElection,
	}
}

// matches reports whether the simulated world matches a settled gateway.
func matches(sim *infra.Sim, gw *Gateway) error {
	have := map[infra.Ref]infra.Observed{}
	for _, o := range sim.Resources() {
		have[o.Ref] = o
	}
	instance := append(routeRefs(gw.Key), deploymentRef(gw.Key), serviceRef(gw.Key))
	switch gw.Spec.State {
	case Running, Restarting:
		for _, ref := range instance {
			if o, ok := have[ref]; !ok || !o.Ready {
				return fmt.Errorf("settled %s but %v is not ready", gw.Spec.State, ref)
			}
		}
	case Stopped:
		for _, ref := range instance {
			if _, ok := have[ref]; ok {
				return fmt.Errorf("settled Stopped but %v remains", ref)
			}
		}
	}
	if !slices.Contains(sim.DatabaseNames(), databaseOf(gw.Key).Name) {
		return fmt.Errorf("settled in %v without its database", gw.Status.Phase)
	}
	return nil
}

// The gateway's real driver and steps, with the runtime domains' real
// controller beside it, pass the driver harness: 1,000 runs of random
// intents, restarts, deletions, step faults, 20% failing backend calls,
// crashes between a step's effect and its record, and two replicas (200
// runs under the race detector, which makes each run several times slower;
// the test command runs the full 1,000 without it too).
func TestGatewayDriverHarness(t *testing.T) {
	batches := harnessBatches
	if testing.Short() {
		batches = 1
	}
	cfg := gatewayHarness(t)
	for range batches {
		drivertest.Check(t, cfg)
	}
}

// The same with an on-call operator at random moments: pausing and
// resuming gateways, asking for restarts, and retrying, skipping or
// moving a failed one out of its Fault phase, as the oncall package does.
func TestGatewayDriverHarnessOperators(t *testing.T) {
	cfg := gatewayHarness(t)
	cfg.Operators, cfg.TerminalFailures = true, true
	drivertest.Check(t, cfg)
}
