package dataplane

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/driver"
	"github.com/tendhq/tend/examples/workspace/archive"
	"github.com/tendhq/tend/examples/workspace/gc"
	"github.com/tendhq/tend/manager"
	"github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
	"github.com/tendhq/tend/workqueue"
)

// Sentinel errors.
var (
	// ErrDataLoss: what an operation needs is gone (the volume before a
	// start, the archive before a restore). Terminal.
	ErrDataLoss = errors.New("dataplane: data loss")
	// ErrContainerRunning: the volume cannot be archived or deleted while
	// its container runs. Transient: the step is retried.
	ErrContainerRunning = errors.New("dataplane: container still running")
	// ErrInvalid: a request the controller refuses (a bad id, a DELETED
	// intent without Delete, …).
	ErrInvalid = errors.New("dataplane: invalid request")
)

// ControllerName names the controller, in logs, metrics and its manager
// ([manager.Manager.Controller]).
const ControllerName = "workspaces"

// DefaultWaitInterval is how long the controller waits before it observes an
// operation's conditions again when Config.WaitInterval is zero.
const DefaultWaitInterval = time.Second

// Config configures [New].
type Config struct {
	// Store holds the workspace documents, their histories and the
	// machine's registration (package registry): a store that can add
	// kinds (backends/memory, backends/postgres) is given those it lacks;
	// any other must hold [Kind], registry.Kind and, with a history
	// recorder, history.KindFor(Kind). Required.
	Store store.Backend
	// Instances runs the containers. Required.
	Instances InstanceController
	// Storage keeps the volumes and archives. Required.
	Storage StorageProvider
	// Workers is how many workspaces are reconciled at once. Zero means 4.
	Workers int
	// WaitInterval is how long to wait before observing again the
	// conditions of an operation that has not completed, or a storage job
	// that has not exited. Zero means [DefaultWaitInterval].
	WaitInterval time.Duration
	// Backoff spaces the retries of a step's transient failures, counted in
	// the workspace's status so that a restart keeps the schedule. Nil means
	// workqueue.DefaultBackoff (5 ms, doubling, up to 1000 s).
	Backoff workqueue.Backoff
	// RateLimiter spaces the retries of other failed reconciles (a store
	// that cannot be reached). Nil means
	// workqueue.DefaultControllerRateLimiter.
	RateLimiter workqueue.RateLimiter[string]
	// NewOperationID returns a new operation's id (op_id). Nil means a
	// random id.
	NewOperationID func() string
	// Now stamps deleted_at. Nil means time.Now.
	Now func() time.Time
	// Manager configures the manager that runs the controller (see
	// [Controller.Manager]): how replicas share the work (Mode, Identity,
	// lease timings) and what the controller and its driver are given:
	// Logger, MetricsRegisterer (the controller's, its work queue's and the
	// phase metrics), TracerProvider (a span per reconcile, step and
	// observer) and History (the history of every workspace; the manager
	// runs the recorder). Its Store is Store, and its only controller is
	// this one. The zero value runs the controller in this process alone,
	// with no logs, metrics, spans or history.
	Manager manager.Config
}

// Controller is the WorkspaceController: the only writer of a workspace's
// phase, operation, op_id, archive_key and conditions. It drives each
// workspace through the machine of [Definition] with the actuators of an
// [InstanceController] and a [StorageProvider].
type Controller struct {
	coll    *store.Collection[Spec, Status]
	machine *statemachine.Machine[State, Phase]
	driver  *driver.Driver[Spec, Status]
	// driverConfig is the driver's configuration: the driver harness runs
	// it on replicas of its own.
	driverConfig driver.Config[Spec, Status]
	manager      *manager.Manager
	instances    InstanceController
	storage      StorageProvider
	now          func() time.Time
}

// New returns a WorkspaceController. It starts nothing; call [Controller.Run].
func New(cfg Config) (*Controller, error) {
	if cfg.Store == nil || cfg.Instances == nil || cfg.Storage == nil {
		return nil, fmt.Errorf("%w: New needs Store, Instances and Storage", ErrInvalid)
	}
	if cfg.Workers < 0 || cfg.WaitInterval < 0 {
		return nil, fmt.Errorf("%w: negative Workers or WaitInterval", ErrInvalid)
	}
	m, err := NewMachine()
	if err != nil {
		return nil, err
	}
	c := &Controller{machine: m, instances: cfg.Instances, storage: cfg.Storage, now: cfg.Now}
	if c.now == nil {
		c.now = time.Now
	}
	c.driverConfig = driver.Config[Spec, Status]{
		Steps:          c.steps(),
		Observers:      c.observers(),
		NewOperationID: cfg.NewOperationID,
		WaitInterval:   cmp.Or(cfg.WaitInterval, DefaultWaitInterval),
		Backoff:        cfg.Backoff,
	}
	mc := cfg.Manager
	mc.Store, mc.Controllers = cfg.Store, nil
	if c.manager, err = manager.New(mc); err != nil {
		return nil, fmt.Errorf("dataplane: %w", err)
	}
	c.driver, err = manager.Drive[Spec, Status](c.manager, Definition()).Named(ControllerName).
		WithOptions(manager.Options{Workers: cmp.Or(cfg.Workers, 4), RateLimiter: cfg.RateLimiter}).
		WithDriver(c.driverConfig).Complete()
	if err != nil {
		return nil, fmt.Errorf("dataplane: %w", err)
	}
	c.coll = c.driver.Collection()
	return c, nil
}

// Run runs the controller under its manager until ctx ends and returns when
// every goroutine it started has stopped.
func (c *Controller) Run(ctx context.Context) error { return c.manager.Run(ctx) }

// Manager returns the manager that Run runs: its Handler serves the
// controller's probes, metrics and the workspaces' histories.
func (c *Controller) Manager() *manager.Manager { return c.manager }

// Reconcile runs one reconcile of workspace id, as a worker of Run would.
// Tests use it to drive a workspace step by step.
func (c *Controller) Reconcile(ctx context.Context, id string) (controller.Result, error) {
	return c.driver.Reconcile(ctx, id)
}

// Collection returns the collection of workspace documents.
func (c *Controller) Collection() *store.Collection[Spec, Status] { return c.coll }

// Machine returns the workspace machine.
func (c *Controller) Machine() *statemachine.Machine[State, Phase] { return c.machine }

// Create creates workspace id with the intent and image of spec. Its
// container will be ws-{id} and its volume ws-{id}-home.
func (c *Controller) Create(ctx context.Context, id string, spec Spec) (*Workspace, error) {
	if err := archive.ValidateID(id); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if spec.State == StateDeleted || !spec.DeletedAt.IsZero() {
		return nil, fmt.Errorf("%w: a workspace is created with intent RUNNING, STANDBY or ARCHIVED", ErrInvalid)
	}
	if err := c.machine.Admit(spec.State, c.machine.Initial()); err != nil {
		return nil, err
	}
	return c.coll.Create(ctx, &Workspace{Meta: store.Meta{Key: id}, Spec: spec})
}

// Get returns workspace id.
func (c *Controller) Get(ctx context.Context, id string) (*Workspace, error) {
	return c.coll.Get(ctx, id)
}

// SetState changes the intent of workspace id to RUNNING, STANDBY or
// ARCHIVED; use [Controller.Delete] to delete it. An intent the workspace
// can no longer reach (it is being deleted) is refused with an error
// matching statemachine.ErrIntentRefused.
func (c *Controller) SetState(ctx context.Context, id string, s State) (*Workspace, error) {
	if s == StateDeleted {
		return nil, fmt.Errorf("%w: delete a workspace with Delete, which sets deleted_at", ErrInvalid)
	}
	return c.driver.UpdateSpec(ctx, id, func(sp *Spec) { sp.State = s })
}

// Delete soft-deletes workspace id: in one spec write it sets deleted_at
// (first, so the GC stops protecting its archives) and the intent DELETED.
// The controller then steps it down (stop, archive) and deletes its
// container and volume; once DELETED, the document is removed. Archives are
// left to the GC.
func (c *Controller) Delete(ctx context.Context, id string) (*Workspace, error) {
	now := c.now()
	return c.driver.UpdateSpec(ctx, id, func(sp *Spec) {
		sp.State = StateDeleted
		if sp.DeletedAt.IsZero() {
			sp.DeletedAt = now
		}
	})
}

// ArchiveReferences reads every workspace and returns what the GC's
// protection rules need to know of each. It implements gc.Config.References.
func (c *Controller) ArchiveReferences(ctx context.Context) ([]gc.Reference, error) {
	list, _, err := c.coll.List(ctx, store.ListOptions{})
	if err != nil {
		return nil, err
	}
	refs := make([]gc.Reference, 0, len(list))
	for _, ws := range list {
		st := ws.Status
		ref := gc.Reference{
			WorkspaceID: ws.Key,
			Deleted:     !ws.Spec.DeletedAt.IsZero() || ws.Terminating(),
			Healthy:     st.Healthy(),
			ArchiveKey:  st.ArchiveKey,
		}
		if st.Operation != nil {
			ref.InFlightOpID = st.Operation.ID
		} else if st.Failure != nil {
			ref.FailedOpID = st.Failure.Operation.ID
		}
		refs = append(refs, ref)
	}
	return refs, nil
}

// outcome classifies an actuator's error: nil is Done, an error matching
// controller.ErrTerminal is terminal, any other is retried with backoff.
func outcome(err error) (statemachine.Outcome, error) {
	switch {
	case err == nil:
		return statemachine.Done, nil
	case errors.Is(err, ErrJobRunning):
		return statemachine.Pending, nil
	case errors.Is(err, controller.ErrTerminal):
		return statemachine.FailedTerminal, err
	}
	return statemachine.Failed, err
}

// step adapts an actuator call to a driver.Step.
type step = driver.StepFunc[Spec, Status]

func (c *Controller) steps() map[string]step {
	return map[string]step{
		StepProvision: func(ctx context.Context, ws *Workspace, _ string) (statemachine.Outcome, error) {
			return outcome(c.storage.Provision(ctx, ws.Key))
		},
		StepRestore: func(ctx context.Context, ws *Workspace, _ string) (statemachine.Outcome, error) {
			if ws.Status.ArchiveKey == "" {
				return outcome(controller.Terminal(fmt.Errorf("%w: no archive_key to restore %s from", ErrDataLoss, ws.Key)))
			}
			marker, err := c.storage.Restore(ctx, ws.Key, ws.Status.ArchiveKey)
			if err != nil {
				return outcome(err)
			}
			ws.Status.RestoreMarker = marker
			return statemachine.Done, nil
		},
		StepStart: func(ctx context.Context, ws *Workspace, _ string) (statemachine.Outcome, error) {
			// Contract 2: no container without its volume.
			ok, err := c.storage.VolumeExists(ctx, ws.Key)
			if err != nil {
				return outcome(err)
			}
			if !ok {
				return outcome(controller.Terminal(fmt.Errorf("%w: volume of %s missing before start", ErrDataLoss, ws.Key)))
			}
			return outcome(c.instances.Start(ctx, ws.Key, ws.Spec.Image))
		},
		StepStop: func(ctx context.Context, ws *Workspace, _ string) (statemachine.Outcome, error) {
			return outcome(c.instances.Delete(ctx, ws.Key))
		},
		StepDeleteContainer: func(ctx context.Context, ws *Workspace, _ string) (statemachine.Outcome, error) {
			return outcome(c.instances.Delete(ctx, ws.Key))
		},
		StepArchive: func(ctx context.Context, ws *Workspace, opID string) (statemachine.Outcome, error) {
			// The storage job is the volume's only writer while it runs.
			if err := c.notRunning(ctx, ws.Key); err != nil {
				return outcome(err)
			}
			key, err := c.storage.Archive(ctx, ws.Key, opID)
			if err != nil {
				return outcome(err)
			}
			// Contract 5: stored with this step's Done, before delete_volume runs.
			ws.Status.ArchiveKey = key
			return statemachine.Done, nil
		},
		StepDeleteVolume: func(ctx context.Context, ws *Workspace, opID string) (statemachine.Outcome, error) {
			// Contract 2: the container goes first, never the reverse.
			if err := c.notRunning(ctx, ws.Key); err != nil {
				return outcome(err)
			}
			if ws.Status.Operation != nil && ws.Status.Operation.Phase == Archiving {
				// Contract 5: never delete a volume whose archive is not
				// stored and complete.
				if ws.Status.ArchiveKey != archive.Key(ws.Key, opID) {
					return outcome(controller.Terminal(fmt.Errorf("%w: archive_key of operation %s not stored; the volume of %s is kept",
						ErrDataLoss, opID, ws.Key)))
				}
				ok, err := c.storage.ArchiveReady(ctx, ws.Status.ArchiveKey)
				if err != nil {
					return outcome(err)
				}
				if !ok {
					return outcome(controller.Terminal(fmt.Errorf("%w: archive %s incomplete; the volume of %s is kept",
						ErrDataLoss, ws.Status.ArchiveKey, ws.Key)))
				}
			}
			return outcome(c.storage.DeleteVolume(ctx, ws.Key))
		},
	}
}

// notRunning fails with ErrContainerRunning while the container runs.
func (c *Controller) notRunning(ctx context.Context, id string) error {
	running, err := c.instances.IsRunning(ctx, id)
	if err != nil {
		return err
	}
	if running {
		return fmt.Errorf("%w: ws-%s", ErrContainerRunning, id)
	}
	return nil
}

type observer = driver.ObserverFunc[Spec, Status]

// observers observe the world, never the actuators' return values
// (contract 1).
func (c *Controller) observers() map[string]observer {
	return map[string]observer{
		CondVolumeReady: func(ctx context.Context, ws *Workspace) (bool, string, error) {
			ok, err := c.storage.VolumeExists(ctx, ws.Key)
			return ok, "", err
		},
		CondContainerReady: func(ctx context.Context, ws *Workspace) (bool, string, error) {
			ok, err := c.instances.IsRunning(ctx, ws.Key)
			return ok, "", err
		},
		CondArchiveReady: func(ctx context.Context, ws *Workspace) (bool, string, error) {
			if ws.Status.ArchiveKey == "" {
				return false, "no archive_key", nil
			}
			ok, err := c.storage.ArchiveReady(ctx, ws.Status.ArchiveKey)
			return ok, ws.Status.ArchiveKey, err
		},
		CondRestoreMarkerMatches: func(ctx context.Context, ws *Workspace) (bool, string, error) {
			m, err := c.storage.RestoreMarker(ctx, ws.Key)
			if err != nil {
				return false, "", err
			}
			return m != "" && m == ws.Status.ArchiveKey, "volume restored from " + m, nil
		},
	}
}
