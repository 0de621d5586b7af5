package platform

import (
	"context"
	"errors"
	"strings"

	"github.com/tendhq/tend/examples/gateway/infra"
)

// The names of a gateway's cluster resources and database. The namespace is
// the gateway's id; everything else is named after it.

func namespaceRef(gw string) infra.Ref { return infra.Ref{Kind: infra.Namespace, Name: gw} }

func configMapRef(gw string) infra.Ref {
	return infra.Ref{Kind: infra.ConfigMap, Namespace: gw, Name: gw + "-config"}
}

func deploymentRef(gw string) infra.Ref {
	return infra.Ref{Kind: infra.Deployment, Namespace: gw, Name: gw}
}

func serviceRef(gw string) infra.Ref { return infra.Ref{Kind: infra.Service, Namespace: gw, Name: gw} }

func routeRef(gw, stage string) infra.Ref {
	return infra.Ref{Kind: infra.ApisixRoute, Namespace: gw, Name: gw + "-" + stage}
}

func routeRefs(gw string) []infra.Ref {
	refs := make([]infra.Ref, len(Stages))
	for i, s := range Stages {
		refs[i] = routeRef(gw, s)
	}
	return refs
}

func pluginConfigRef(gw string) infra.Ref {
	return infra.Ref{Kind: infra.ApisixPluginConfig, Namespace: gw, Name: gw + "-plugins"}
}

// tlsRefs are the wildcard TLS secrets of the three stages, then, with a
// custom domain, the custom one.
func tlsRefs(gw string, custom bool) []infra.Ref {
	refs := make([]infra.Ref, 0, len(Stages)+1)
	for _, s := range Stages {
		refs = append(refs, infra.Ref{Kind: infra.ApisixTls, Namespace: gw, Name: gw + "-" + s + "-tls"})
	}
	if custom {
		refs = append(refs, infra.Ref{Kind: infra.ApisixTls, Namespace: gw, Name: gw + "-custom-tls"})
	}
	return refs
}

func certificateRef(gw string) infra.Ref {
	return infra.Ref{Kind: infra.Certificate, Namespace: gw, Name: gw + "-runtime-custom-domain"}
}

// domainRefs are every resource a runtime domain may own, custom ones
// included, in the order they are removed.
func domainRefs(gw string) []infra.Ref {
	refs := append(routeRefs(gw), pluginConfigRef(gw))
	return append(append(refs, tlsRefs(gw, true)...), certificateRef(gw))
}

func databaseOf(gw string) infra.Database {
	name := "gateway_" + strings.ReplaceAll(gw, "-", "_")
	return infra.Database{Name: name, User: name + "_user"}
}

func resource(gw string, ref infra.Ref, data map[string]string) infra.Resource {
	return infra.Resource{Ref: ref, Labels: map[string]string{LabelGateway: gw}, Data: data}
}

// callAttempts is how many times one infrastructure call is tried before its
// step or probe fails: a transient error (a dropped connection, a timeout) is
// retried at once, as a client library would, so one flaky call among the
// many a step makes does not fail the whole step.
const callAttempts = 2

// try calls f until it succeeds, fails with [infra.ErrNotFound], or has failed
// callAttempts times.
func try(ctx context.Context, f func() error) error {
	var err error
	for range callAttempts {
		if err = f(); err == nil || errors.Is(err, infra.ErrNotFound) || ctx.Err() != nil {
			return err
		}
	}
	return err
}

// get reads ref, trying again after a transient error.
func get(ctx context.Context, c infra.Cluster, ref infra.Ref) (infra.Observed, error) {
	var o infra.Observed
	err := try(ctx, func() (err error) {
		o, err = c.Get(ctx, ref)
		return err
	})
	return o, err
}

// applyAll applies each resource in order, stopping at the first error.
func applyAll(ctx context.Context, c infra.Cluster, rs ...infra.Resource) error {
	for _, r := range rs {
		if err := try(ctx, func() error { return c.Apply(ctx, r) }); err != nil {
			return err
		}
	}
	return nil
}

// deleteAll requests the deletion of each resource in order, stopping at the
// first error.
func deleteAll(ctx context.Context, c infra.Cluster, refs ...infra.Ref) error {
	for _, ref := range refs {
		if err := try(ctx, func() error { return c.Delete(ctx, ref) }); err != nil {
			return err
		}
	}
	return nil
}

// present reports whether any of refs still exists, Terminating or not.
func present(ctx context.Context, c infra.Cluster, refs ...infra.Ref) (bool, error) {
	for _, ref := range refs {
		_, err := get(ctx, c, ref)
		switch {
		case err == nil:
			return true, nil
		case !errors.Is(err, infra.ErrNotFound):
			return false, err
		}
	}
	return false, nil
}

// ready reports whether every one of refs exists and is ready.
func ready(ctx context.Context, c infra.Cluster, refs ...infra.Ref) (bool, error) {
	for _, ref := range refs {
		o, err := get(ctx, c, ref)
		switch {
		case errors.Is(err, infra.ErrNotFound):
			return false, nil
		case err != nil:
			return false, err
		case !o.Ready:
			return false, nil
		}
	}
	return true, nil
}
