package dataplane

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/tendhq/tend/manager"

	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/driver/drivertest"
)

// cloud simulates, in memory and on the process's clock (which
// testing/synctest fakes), what a workspace's steps act on: volumes,
// containers and archives. A fifth of its calls fail, half of them before
// their effect and half after it.
type cloud struct {
	startDelay time.Duration

	mu         sync.Mutex
	rnd        *rand.Rand
	volumes    map[string]string    // workspace → restore marker
	containers map[string]time.Time // workspace → when it takes traffic
	archives   map[string]bool      // complete archives, by key
}

var errCloud = errors.New("cloud: injected failure")

// call runs effect under c's lock, failing a fifth of calls, half of them
// after the effect.
func (c *cloud) call(effect func() error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch x := c.rnd.Float64(); {
	case x < 0.1:
		return errCloud
	case x < 0.2:
		_ = effect()
		return errCloud
	}
	return effect()
}

func (c *cloud) Start(_ context.Context, id, _ string) error {
	return c.call(func() error {
		if _, ok := c.volumes[id]; !ok {
			return controller.Terminal(ErrDataLoss)
		}
		if _, ok := c.containers[id]; !ok {
			c.containers[id] = time.Now().Add(c.startDelay)
		}
		return nil
	})
}

func (c *cloud) Delete(_ context.Context, id string) error {
	return c.call(func() error { delete(c.containers, id); return nil })
}

func (c *cloud) IsRunning(_ context.Context, id string) (ok bool, err error) {
	err = c.call(func() error {
		at, exists := c.containers[id]
		ok = exists && !time.Now().Before(at)
		return nil
	})
	return ok, err
}

func (c *cloud) Provision(_ context.Context, id string) error {
	return c.call(func() error {
		if _, ok := c.volumes[id]; !ok {
			c.volumes[id] = ""
		}
		return nil
	})
}

func (c *cloud) Restore(_ context.Context, id, key string) (marker string, err error) {
	err = c.call(func() error {
		if _, ok := c.volumes[id]; !ok || !c.archives[key] {
			return controller.Terminal(ErrDataLoss)
		}
		c.volumes[id], marker = key, key
		return nil
	})
	return marker, err
}

func (c *cloud) Archive(_ context.Context, id, opID string) (key string, err error) {
	err = c.call(func() error {
		key = id + "/" + opID + "/home.tar.zst"
		if _, running := c.containers[id]; running {
			return ErrContainerRunning
		}
		if _, ok := c.volumes[id]; !ok && !c.archives[key] {
			return controller.Terminal(ErrDataLoss)
		}
		c.archives[key] = true
		return nil
	})
	return key, err
}

func (c *cloud) DeleteVolume(_ context.Context, id string) error {
	return c.call(func() error {
		if _, running := c.containers[id]; running {
			return ErrContainerRunning
		}
		delete(c.volumes, id)
		return nil
	})
}

func (c *cloud) VolumeExists(_ context.Context, id string) (ok bool, err error) {
	err = c.call(func() error { _, ok = c.volumes[id]; return nil })
	return ok, err
}

func (c *cloud) RestoreMarker(_ context.Context, id string) (m string, err error) {
	err = c.call(func() error { m = c.volumes[id]; return nil })
	return m, err
}

func (c *cloud) ArchiveReady(_ context.Context, key string) (ok bool, err error) {
	err = c.call(func() error { ok = c.archives[key]; return nil })
	return ok, err
}

// invariant: never a container without its volume; nothing left of a
// removed workspace but its archives.
func (c *cloud) invariant(_ context.Context, id string, ws *Workspace) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, container := c.containers[id]
	_, volume := c.volumes[id]
	switch {
	case container && !volume:
		return errors.New("a container without its volume")
	case ws == nil && (container || volume):
		return fmt.Errorf("removed, but container %t and volume %t are left", container, volume)
	}
	return nil
}

// settled: the world matches a settled workspace.
func (c *cloud) settled(_ context.Context, ws *Workspace) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, container := c.containers[ws.Key]
	_, volume := c.volumes[ws.Key]
	switch ws.Spec.State {
	case StateRunning:
		if !container || time.Now().Before(at) {
			return errors.New("RUNNING without a container taking traffic")
		}
	case StateStandby:
		if container || !volume {
			return fmt.Errorf("STANDBY with container %t, volume %t", container, volume)
		}
	case StateArchived: // never provisioned (PENDING), or archived
		if container || volume || ws.Status.Phase != Pending && !c.archives[ws.Status.ArchiveKey] {
			return fmt.Errorf("ARCHIVED with container %t, volume %t, archive %q complete %t",
				container, volume, ws.Status.ArchiveKey, c.archives[ws.Status.ArchiveKey])
		}
	}
	return nil
}

// The WorkspaceController's real driver and steps pass the driver harness:
// 1,000 runs of random intents, deletions, step faults, a fifth of the
// cloud's calls failing, crashes between a step's effect and its record, and
// two replicas sharing the work.
func TestWorkspaceDriverHarness(t *testing.T) {
	cfg := workspaceHarness(t)
	batches := 10
	if testing.Short() {
		batches = 1
	}
	for range batches {
		drivertest.Check(t, cfg)
	}
}

// The same with an on-call operator at random moments: pausing and
// resuming workspaces, and retrying, skipping or moving a failed one out
// of its Fault phase, as the oncall package does.
func TestWorkspaceDriverHarnessOperators(t *testing.T) {
	cfg := workspaceHarness(t)
	cfg.Operators, cfg.TerminalFailures = true, true
	drivertest.Check(t, cfg)
}

// workspaceHarness is the driver harness's configuration of the
// WorkspaceController: its real driver and steps over a simulated cloud,
// on two replicas sharing the work.
func workspaceHarness(t *testing.T) drivertest.Config[Spec, Status, State, Phase] {
	m, err := NewMachine()
	if err != nil {
		t.Fatal(err)
	}
	return drivertest.Config[Spec, Status, State, Phase]{
		Machine: m,
		Kind:    Kind,
		NewSpec: func() Spec { return Spec{Image: "workspace:1"} },
		Fixture: func(env drivertest.Env) (drivertest.Fixture[Spec, Status], error) {
			cl := &cloud{startDelay: time.Duration(env.Rand.Int64N(int64(10 * time.Second))),
				rnd: rand.New(rand.NewPCG(env.Rand.Uint64(), 1)), volumes: map[string]string{},
				containers: map[string]time.Time{}, archives: map[string]bool{}}
			c, err := New(Config{Store: env.Backend, Instances: cl, Storage: cl})
			if err != nil {
				return drivertest.Fixture[Spec, Status]{}, err
			}
			return drivertest.Fixture[Spec, Status]{Driver: c.driverConfig, Invariant: cl.invariant, Matches: cl.settled}, nil
		},
		SetIntent: func(s *Spec, st State) {
			s.State, s.DeletedAt = st, time.Time{}
			if st == StateDeleted {
				s.DeletedAt = time.Now()
			}
		},
		Replicas: 2,
		Mode:     manager.Sharded,
	}
}
