package platform

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/tendhq/tend/examples/gateway/infra"
)

// CheckOrder replays a log of infrastructure operations (see [infra.Sim.Ops])
// and reports every breach of the platform's ordering rules:
//
//   - routes are gone before the Deployment: no Deployment deletion is
//     requested while an ApisixRoute of its gateway still exists;
//   - the Deployment is gone before the database: no database is dropped
//     while its gateway's Deployment still exists, even Terminating.
//
// Tests and the demo check it on every run.
func CheckOrder(ops []infra.Op) error {
	live := map[infra.Ref]bool{}
	dbOwner := map[string]string{} // database name → gateway id (its namespace)
	var errs []error
	for _, op := range ops {
		switch op.Type {
		case infra.OpApply:
			live[op.Ref] = true
			if op.Ref.Kind == infra.Namespace {
				dbOwner[databaseOf(op.Ref.Name).Name] = op.Ref.Name
			}
		case infra.OpGone:
			delete(live, op.Ref)
		case infra.OpDelete:
			if op.Ref.Kind != infra.Deployment {
				continue
			}
			for _, r := range routeRefs(op.Ref.Namespace) {
				if live[r] {
					errs = append(errs, fmt.Errorf("%v: Deployment deleted while %v still exists", op, r))
				}
			}
		case infra.OpDropDatabase:
			if gw, ok := dbOwner[op.Database]; ok && live[deploymentRef(gw)] {
				errs = append(errs, fmt.Errorf("%v: database dropped while %v still exists", op, deploymentRef(gw)))
			}
		}
	}
	return errors.Join(errs...)
}

// Leftovers lists what still exists of gateway id: its documents of every
// kind (the gateway's own included), the cluster resources labelled with it
// among resources, and its database among databases. After the gateway's
// document is removed the list must be empty.
func (p *Platform) Leftovers(ctx context.Context, id string, resources []infra.Observed, databases []string) ([]string, error) {
	var out []string
	for _, kind := range Kinds() {
		res, err := p.docs.Gateways.Backend().List(ctx, kind, selectGateway(id))
		if err != nil {
			return nil, err
		}
		for _, d := range res.Items {
			out = append(out, fmt.Sprintf("document %s %s", kind, d.Meta.Key))
		}
	}
	for _, r := range resources {
		if r.Labels[LabelGateway] == id {
			out = append(out, "resource "+r.Ref.String())
		}
	}
	if slices.Contains(databases, databaseOf(id).Name) {
		out = append(out, "database "+databaseOf(id).Name)
	}
	return out, nil
}
