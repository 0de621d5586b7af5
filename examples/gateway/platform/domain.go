package platform

import (
	"context"
	"time"

	"github.com/tendhq/tend/driver"

	"github.com/tendhq/tend/examples/gateway/infra"
	sm "github.com/tendhq/tend/statemachine"
)

// Intent returns the domain's State, for the controller's driver.
func (s DomainSpec) Intent() DomainState { return s.State }

// MachineStatus returns the machine's part of the status, for the
// controller's driver.
func (s *DomainStatus) MachineStatus() *sm.Status[DomainState, DomainPhase] { return &s.Status }

type (
	domainStep     = driver.StepFunc[DomainSpec, DomainStatus]
	domainObserver = driver.ObserverFunc[DomainSpec, DomainStatus]
)

// domainSteps maps every step of the runtime domain machine to its action.
// Creation goes TLS, plugin config, routes; removal the other way round, so a
// route never points at a missing plugin config or secret.
func (p *Platform) domainSteps() map[string]domainStep {
	return map[string]domainStep{
		StepCreateTLS: func(ctx context.Context, d *Domain, _ string) (sm.Outcome, error) {
			var rs []infra.Resource
			for _, ref := range tlsRefs(d.Spec.Gateway, d.Spec.CustomDomain != "") {
				rs = append(rs, resource(d.Spec.Gateway, ref, nil))
			}
			if out, err := outcome(applyAll(ctx, p.cluster, rs...)); out != sm.Done {
				return out, err
			}
			return p.issueCertificate(ctx, d, "")
		},
		StepRenewCertificate: p.issueCertificate,
		StepCreatePluginConfig: func(ctx context.Context, d *Domain, _ string) (sm.Outcome, error) {
			return outcome(applyAll(ctx, p.cluster, resource(d.Spec.Gateway, pluginConfigRef(d.Spec.Gateway),
				map[string]string{"plugins": "cors,key-auth"})))
		},
		StepCreateRoutes: func(ctx context.Context, d *Domain, _ string) (sm.Outcome, error) {
			var rs []infra.Resource
			for _, s := range Stages {
				rs = append(rs, resource(d.Spec.Gateway, routeRef(d.Spec.Gateway, s), map[string]string{
					"host": d.Spec.Gateway + "-" + s + ".example.dev", "backend": serviceRef(d.Spec.Gateway).Name}))
			}
			return outcome(applyAll(ctx, p.cluster, rs...))
		},
		StepDeleteRoutes: func(ctx context.Context, d *Domain, _ string) (sm.Outcome, error) {
			return outcome(deleteAll(ctx, p.cluster, routeRefs(d.Spec.Gateway)...))
		},
		StepDeletePluginConfig: func(ctx context.Context, d *Domain, _ string) (sm.Outcome, error) {
			return outcome(deleteAll(ctx, p.cluster, pluginConfigRef(d.Spec.Gateway)))
		},
		StepDeleteTLS: func(ctx context.Context, d *Domain, _ string) (sm.Outcome, error) {
			// Custom ones too, whatever the spec says now: deleting what is
			// gone succeeds.
			return outcome(deleteAll(ctx, p.cluster, append(tlsRefs(d.Spec.Gateway, true), certificateRef(d.Spec.Gateway))...))
		},
	}
}

// issueCertificate issues (or renews) the custom domain's certificate, if
// the domain has one, and records when it expires: the renewal timer is due
// RenewBefore that.
func (p *Platform) issueCertificate(ctx context.Context, d *Domain, _ string) (sm.Outcome, error) {
	if d.Spec.CustomDomain == "" {
		return sm.Done, nil
	}
	now := time.Now()
	out, err := outcome(applyAll(ctx, p.cluster, resource(d.Spec.Gateway, certificateRef(d.Spec.Gateway),
		map[string]string{"host": d.Spec.CustomDomain, "issued": now.UTC().Format(time.RFC3339)})))
	if out == sm.Done {
		d.Status.CertificateExpires = now.Add(p.certLifetime)
	}
	return out, err
}

// renewCertificateAt is when the renewal timer of d is due: RenewBefore its
// certificate expires; never for a domain without a custom domain.
func (p *Platform) renewCertificateAt(d *Domain) time.Time {
	if d.Spec.CustomDomain == "" || d.Status.CertificateExpires.IsZero() {
		return time.Time{}
	}
	return d.Status.CertificateExpires.Add(-p.renewBefore)
}

// domainObservers maps every condition of the runtime domain machine to its
// probe.
func (p *Platform) domainObservers() map[string]domainObserver {
	return map[string]domainObserver{
		CondResourcesReady: func(ctx context.Context, d *Domain) (bool, string, error) {
			return probe(ready(ctx, p.cluster, domainWants(d)...))
		},
		CondResourcesPresent: func(ctx context.Context, d *Domain) (bool, string, error) {
			return probe(present(ctx, p.cluster, domainRefs(d.Spec.Gateway)...))
		},
	}
}

// domainWants lists the resources an Active domain has.
func domainWants(d *Domain) []infra.Ref {
	custom := d.Spec.CustomDomain != ""
	refs := append(tlsRefs(d.Spec.Gateway, custom), pluginConfigRef(d.Spec.Gateway))
	refs = append(refs, routeRefs(d.Spec.Gateway)...)
	if custom {
		refs = append(refs, certificateRef(d.Spec.Gateway))
	}
	return refs
}
