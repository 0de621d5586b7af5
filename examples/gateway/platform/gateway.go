package platform

import (
	"context"
	"errors"

	"github.com/tendhq/tend/driver"

	"github.com/tendhq/tend/examples/gateway/infra"
	sm "github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// Intent returns the gateway's State, for the controller's driver.
func (s GatewaySpec) Intent() GatewayState { return s.State }

// Requests returns the restart asked for, for the controller's driver: the
// token written with State Restarting.
func (s GatewaySpec) Requests() map[string][]string {
	if s.State != Restarting || s.Restart == "" {
		return nil
	}
	return map[string][]string{RequestRestart: {s.Restart}}
}

// MachineStatus returns the machine's part of the status, for the
// controller's driver.
func (s *GatewayStatus) MachineStatus() *sm.Status[GatewayState, GatewayPhase] { return &s.Status }

type (
	gatewayStep     = driver.StepFunc[GatewaySpec, GatewayStatus]
	gatewayObserver = driver.ObserverFunc[GatewaySpec, GatewayStatus]
)

// gatewaySteps maps every step of the gateway machine to its action. Each is
// idempotent; a step that waits for the cluster or for the runtime domain
// reports Progressed until what it waits for is true.
func (p *Platform) gatewaySteps() map[string]gatewayStep {
	return map[string]gatewayStep{
		StepCreateNamespace:         p.createNamespace,
		StepCreateDatabase:          p.createDatabase,
		StepCreateStages:            p.createStages,
		StepCreateRuntimeDomain:     p.createRuntimeDomain,
		StepCreateInstance:          p.createInstance,
		StepActivateRuntimeDomain:   p.activateRuntimeDomain,
		StepDeactivateRuntimeDomain: p.deactivateRuntimeDomain,
		StepDeleteInstance:          p.deleteInstance,
		StepDeleteCronTriggers:      deleteChildren(p.docs.CronTriggers),
		StepDeleteCloudFunctions:    deleteChildren(p.docs.CloudFunctions),
		StepDeleteStages:            p.deleteStages,
		StepDeleteEnvironments:      p.deleteEnvironments,
		StepDeleteRuntimeDomain:     p.deleteRuntimeDomain,
		StepDeleteDatabase:          p.deleteDatabase,
		StepDeleteNamespace:         p.deleteNamespace,
	}
}

// gatewayObservers maps every condition of the gateway machine to its probe.
func (p *Platform) gatewayObservers() map[string]gatewayObserver {
	return map[string]gatewayObserver{
		CondNamespaceReady: func(ctx context.Context, gw *Gateway) (bool, string, error) {
			return probe(ready(ctx, p.cluster, namespaceRef(gw.Key)))
		},
		CondNamespacePresent: func(ctx context.Context, gw *Gateway) (bool, string, error) {
			return probe(present(ctx, p.cluster, namespaceRef(gw.Key), configMapRef(gw.Key)))
		},
		CondDatabaseReady: func(ctx context.Context, gw *Gateway) (bool, string, error) {
			var ok bool
			err := try(ctx, func() (err error) {
				ok, err = p.dbs.DatabaseExists(ctx, databaseOf(gw.Key))
				return err
			})
			return ok, "", err
		},
		CondRuntimeDomainPresent: func(ctx context.Context, gw *Gateway) (bool, string, error) {
			_, err := p.docs.Domains.Get(ctx, gw.Key)
			if errors.Is(err, store.ErrNotFound) {
				return false, "", nil
			}
			return err == nil, "", err
		},
		CondRoutesReady: func(ctx context.Context, gw *Gateway) (bool, string, error) {
			d, err := p.docs.Domains.Get(ctx, gw.Key)
			if errors.Is(err, store.ErrNotFound) {
				return false, "no runtime domain", nil
			}
			if err != nil {
				return false, "", err
			}
			ok := d.Spec.State == Active && d.Status.Target == Active && d.Status.Phase == DomainCreated
			return ok, string(d.Status.Phase), nil
		},
		CondInstanceAvailable: func(ctx context.Context, gw *Gateway) (bool, string, error) {
			return probe(ready(ctx, p.cluster, deploymentRef(gw.Key), serviceRef(gw.Key)))
		},
		CondInstancePresent: func(ctx context.Context, gw *Gateway) (bool, string, error) {
			return probe(present(ctx, p.cluster, deploymentRef(gw.Key), serviceRef(gw.Key)))
		},
	}
}

func probe(ok bool, err error) (bool, string, error) { return ok, "", err }

// Creating.

func (p *Platform) createNamespace(ctx context.Context, gw *Gateway, _ string) (sm.Outcome, error) {
	err := applyAll(ctx, p.cluster,
		resource(gw.Key, namespaceRef(gw.Key), nil),
		resource(gw.Key, configMapRef(gw.Key), map[string]string{"database": databaseOf(gw.Key).Name}))
	return outcome(err)
}

func (p *Platform) createDatabase(ctx context.Context, gw *Gateway, _ string) (sm.Outcome, error) {
	db := databaseOf(gw.Key)
	doc := &store.Object[DatabaseSpec, Leaf]{Meta: ownedBy(KindDatabase, gw.Key, &gw.Meta, nil),
		Spec: DatabaseSpec{Name: db.Name, User: db.User}}
	if _, err := p.docs.Databases.Create(ctx, doc); err != nil && !errors.Is(err, store.ErrAlreadyExists) {
		return sm.Failed, err
	}
	return outcome(try(ctx, func() error { return p.dbs.EnsureDatabase(ctx, db) }))
}

func (p *Platform) createStages(ctx context.Context, gw *Gateway, _ string) (sm.Outcome, error) {
	for _, s := range Stages {
		stage := &store.Object[StageSpec, Leaf]{Meta: ownedBy(KindStage, childKey(gw.Key, s), &gw.Meta, nil),
			Spec: StageSpec{Name: s}}
		if _, err := p.docs.Stages.Create(ctx, stage); err != nil && !errors.Is(err, store.ErrAlreadyExists) {
			return sm.Failed, err
		}
		env := &store.Object[EnvironmentSpec, Leaf]{Meta: ownedBy(KindEnvironment, childKey(gw.Key, s), &gw.Meta, nil),
			Spec: EnvironmentSpec{Stage: s}}
		if _, err := p.docs.Environments.Create(ctx, env); err != nil && !errors.Is(err, store.ErrAlreadyExists) {
			return sm.Failed, err
		}
	}
	return sm.Done, nil
}

func (p *Platform) createRuntimeDomain(ctx context.Context, gw *Gateway, _ string) (sm.Outcome, error) {
	d := &Domain{Meta: ownedBy(KindRuntimeDomain, gw.Key, &gw.Meta, nil),
		Spec: DomainSpec{State: Active, Gateway: gw.Key, CustomDomain: gw.Spec.CustomDomain}}
	if _, err := p.docs.Domains.Create(ctx, d); err != nil && !errors.Is(err, store.ErrAlreadyExists) {
		return sm.Failed, err
	}
	return sm.Done, nil
}

// Starting and Stopping.

func (p *Platform) createInstance(ctx context.Context, gw *Gateway, _ string) (sm.Outcome, error) {
	err := applyAll(ctx, p.cluster,
		resource(gw.Key, deploymentRef(gw.Key), map[string]string{"image": gw.Spec.Image, "configMap": configMapRef(gw.Key).Name}),
		resource(gw.Key, serviceRef(gw.Key), map[string]string{"port": "80"}))
	return outcome(err)
}

// activateRuntimeDomain switches the routes on once a pod can serve them: it
// waits for the Deployment's first available replica and the Service, then sets the domain's
// intent to Active and waits until the domain has settled there.
func (p *Platform) activateRuntimeDomain(ctx context.Context, gw *Gateway, _ string) (sm.Outcome, error) {
	ok, err := ready(ctx, p.cluster, deploymentRef(gw.Key), serviceRef(gw.Key))
	switch {
	case err != nil:
		return sm.Failed, err
	case !ok:
		return sm.Progressed, nil
	}
	return p.domains.Settle(ctx, p.domainOf(gw), func(s *DomainSpec) { s.State = Active })
}

// deactivateRuntimeDomain takes the routes down before the pods: it sets the
// domain's intent to Inactive and waits until its resources are gone.
func (p *Platform) deactivateRuntimeDomain(ctx context.Context, gw *Gateway, _ string) (sm.Outcome, error) {
	return p.domains.Settle(ctx, p.domainOf(gw), func(s *DomainSpec) { s.State = Inactive })
}

// deleteInstance removes the Deployment and the Service and waits until they
// are gone: pods stop before anything they depend on goes.
func (p *Platform) deleteInstance(ctx context.Context, gw *Gateway, _ string) (sm.Outcome, error) {
	return p.removeResources(ctx, deploymentRef(gw.Key), serviceRef(gw.Key))
}

// Deleting: the ordered cascade. Each step does the work it still has and
// reports Progressed, then Done once nothing is left (the "if had X
// { delete X; return }").

// deleteChildren returns the step that deletes every document of c owned by
// the gateway.
func deleteChildren[Spec any](c *store.Collection[Spec, Leaf]) gatewayStep {
	return func(ctx context.Context, gw *Gateway, _ string) (sm.Outcome, error) {
		return deleteOwned(ctx, c, gw.UID)
	}
}

// deleteOwned deletes the documents of c owned by uid: Progressed when it
// deleted some, Done when there were none.
func deleteOwned[Spec any](ctx context.Context, c *store.Collection[Spec, Leaf], uid string) (sm.Outcome, error) {
	objs, _, err := c.List(ctx, store.ListOptions{OwnerUID: uid})
	if err != nil {
		return sm.Failed, err
	}
	if len(objs) == 0 {
		return sm.Done, nil
	}
	for _, o := range objs {
		if err := c.Delete(ctx, o.Key, store.DeleteOptions{UID: o.UID}); err != nil && !errors.Is(err, store.ErrNotFound) {
			return sm.Failed, err
		}
	}
	return sm.Progressed, nil
}

// deleteStages deletes the Stage documents and their routes, and is done once
// the routes are gone: traffic is cut before anything behind it goes. The
// routes are the runtime domain's, so the step first waits until the domain
// has no operation in flight: removing them under a domain that is still
// Creating would leave it waiting forever for routes to become ready.
func (p *Platform) deleteStages(ctx context.Context, gw *Gateway, _ string) (sm.Outcome, error) {
	out, err := deleteOwned(ctx, p.docs.Stages, gw.UID)
	if out != sm.Done {
		return out, err
	}
	if out, err := p.domains.Settle(ctx, p.domainOf(gw), nil); out != sm.Done {
		return out, err
	}
	return p.removeResources(ctx, routeRefs(gw.Key)...)
}

// deleteEnvironments deletes each environment's client apps, then the
// environments.
func (p *Platform) deleteEnvironments(ctx context.Context, gw *Gateway, _ string) (sm.Outcome, error) {
	envs, _, err := p.docs.Environments.List(ctx, store.ListOptions{OwnerUID: gw.UID})
	if err != nil {
		return sm.Failed, err
	}
	for _, env := range envs {
		if out, err := deleteOwned(ctx, p.docs.ClientApps, env.UID); out != sm.Done {
			return out, err
		}
	}
	return deleteOwned(ctx, p.docs.Environments, gw.UID)
}

// deleteRuntimeDomain only sets the domain's intent to Deleted; the domain's
// own controller removes its resources and then the document. The step is
// done once the document is gone.
func (p *Platform) deleteRuntimeDomain(ctx context.Context, gw *Gateway, _ string) (sm.Outcome, error) {
	return p.domains.Retire(ctx, p.domainOf(gw), func(s *DomainSpec) { s.State = DomainRemoved })
}

// deleteDatabase drops the database and its user, then deletes its document:
// a leaf, deleted directly. The instance is gone by now, so no pod can reach it.
func (p *Platform) deleteDatabase(ctx context.Context, gw *Gateway, _ string) (sm.Outcome, error) {
	if err := try(ctx, func() error { return p.dbs.DropDatabase(ctx, databaseOf(gw.Key)) }); err != nil {
		return sm.Failed, err
	}
	return deleteOwned(ctx, p.docs.Databases, gw.UID)
}

func (p *Platform) deleteNamespace(ctx context.Context, gw *Gateway, _ string) (sm.Outcome, error) {
	return p.removeResources(ctx, configMapRef(gw.Key), namespaceRef(gw.Key))
}

// removeResources requests the deletion of those of refs that exist and are
// not Terminating yet, and reports Done once all are gone, Progressed while
// some remain. It reads each ref before it deletes it, and does not ask
// again for what is already being deleted: the step runs again every poll
// while it waits, and an attempt succeeds only if each of its calls does, so
// each call it makes without need makes it likelier to fail, and its
// backoff to grow, for nothing (see README.md, "Where the time goes").
func (p *Platform) removeResources(ctx context.Context, refs ...infra.Ref) (sm.Outcome, error) {
	left := false
	for _, ref := range refs {
		o, err := get(ctx, p.cluster, ref)
		switch {
		case errors.Is(err, infra.ErrNotFound):
			continue
		case err != nil:
			return sm.Failed, err
		case !o.Terminating:
			if err := try(ctx, func() error { return p.cluster.Delete(ctx, ref) }); err != nil {
				return sm.Failed, err
			}
		}
		left = true
	}
	if left {
		return sm.Progressed, nil
	}
	return sm.Done, nil
}

// domainOf selects the gateway's runtime domain.
func (p *Platform) domainOf(gw *Gateway) store.ListOptions {
	return store.ListOptions{OwnerUID: gw.UID}
}

// outcome is Done for a nil error and Failed otherwise.
func outcome(err error) (sm.Outcome, error) {
	if err != nil {
		return sm.Failed, err
	}
	return sm.Done, nil
}
