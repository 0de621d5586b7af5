package platform

import (
	"errors"
	"fmt"
	"time"

	sm "github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// The kinds of document the platform stores. Every document but the ApiGateway
// has an owner reference to the document it belongs to: the gateway, or for a
// ClientApp its Environment.
const (
	KindApiGateway    = "ApiGateway"
	KindRuntimeDomain = "RuntimeDomain"
	KindDatabase      = "Database"
	KindEnvironment   = "Environment"
	KindClientApp     = "ClientApp"
	KindCloudFunction = "CloudFunction"
	KindStage         = "Stage"
	KindCronTrigger   = "CronTrigger"
)

// Kinds returns every kind the platform stores, to configure a store backend
// with.
func Kinds() []string {
	return []string{KindApiGateway, KindRuntimeDomain, KindDatabase, KindEnvironment,
		KindClientApp, KindCloudFunction, KindStage, KindCronTrigger}
}

// Stages are the three deployment stages of every gateway, each with its
// Environment, its route and its TLS secret.
var Stages = []string{"dev", "staging", "prod"}

// LabelGateway labels every document and cluster resource the platform creates
// with the id of the gateway it belongs to.
const LabelGateway = "gateway"

// GatewaySpec is an ApiGateway's intent, written by its user.
type GatewaySpec struct {
	// State is what the user wants: Running, Stopped, Restarting or Deleted.
	// Restarting is Running plus a restart request (see Restart).
	State GatewayState `json:"state"`
	// Restart is the token of the last restart asked for, set by
	// [Platform.SetGatewayState] each time State Restarting is written, so
	// that each such write is served exactly once.
	Restart string `json:"restart,omitempty"`
	// Image is the runtime image the gateway's Deployment runs.
	Image string `json:"image,omitempty"`
	// CustomDomain, when set, is served with its own certificate besides the
	// three stage hosts.
	CustomDomain string `json:"customDomain,omitempty"`
}

// GatewayStatus is an ApiGateway's progress, written only by its controller.
type GatewayStatus struct {
	sm.Status[GatewayState, GatewayPhase]
}

// Gateway is a decoded ApiGateway document.
type Gateway = store.Object[GatewaySpec, GatewayStatus]

// DomainSpec is a RuntimeDomain's intent. Its only writer is the gateway's
// controller, which sets State and never touches the domain's resources.
type DomainSpec struct {
	// State is Active while the gateway runs, Inactive while it is stopped and
	// Deleted once the gateway is being deleted.
	State DomainState `json:"state"`
	// Gateway is the id of the gateway the domain routes to.
	Gateway string `json:"gateway"`
	// CustomDomain is copied from the gateway.
	CustomDomain string `json:"customDomain,omitempty"`
}

// DomainStatus is a RuntimeDomain's progress.
type DomainStatus struct {
	sm.Status[DomainState, DomainPhase]
	// CertificateExpires is when the custom domain's certificate, issued or
	// renewed last, expires; the renewal timer is due RenewBefore that.
	CertificateExpires time.Time `json:"certificateExpires,omitzero"`
}

// Domain is a decoded RuntimeDomain document.
type Domain = store.Object[DomainSpec, DomainStatus]

// DatabaseSpec is a gateway's Database document: a leaf with no machine of its
// own, created in the gateway's Creating phase and deleted directly in its
// Deleting phase.
type DatabaseSpec struct {
	Name string `json:"name"`
	User string `json:"user"`
}

// EnvironmentSpec is the configuration of one stage of a gateway.
type EnvironmentSpec struct {
	Stage     string            `json:"stage"`
	Variables map[string]string `json:"variables,omitempty"`
}

// ClientAppSpec is an application allowed to call one environment.
type ClientAppSpec struct {
	Name string `json:"name"`
}

// CloudFunctionSpec is a function served by a gateway.
type CloudFunctionSpec struct {
	Runtime string `json:"runtime"`
	Source  string `json:"source,omitempty"`
}

// StageSpec is one deployment stage of a gateway.
type StageSpec struct {
	Name string `json:"name"`
}

// CronTriggerSpec calls a cloud function on a schedule.
type CronTriggerSpec struct {
	Function string `json:"function"`
	Schedule string `json:"schedule"`
}

// Leaf is the status of the documents that have no controller of their own.
type Leaf struct{}

// Collections are the typed views of every kind the platform stores.
type Collections struct {
	Gateways       *store.Collection[GatewaySpec, GatewayStatus]
	Domains        *store.Collection[DomainSpec, DomainStatus]
	Databases      *store.Collection[DatabaseSpec, Leaf]
	Environments   *store.Collection[EnvironmentSpec, Leaf]
	ClientApps     *store.Collection[ClientAppSpec, Leaf]
	CloudFunctions *store.Collection[CloudFunctionSpec, Leaf]
	Stages         *store.Collection[StageSpec, Leaf]
	CronTriggers   *store.Collection[CronTriggerSpec, Leaf]
}

// OpenCollections returns the typed views of b's kinds. b must hold every kind of
// [Kinds].
func OpenCollections(b store.Backend) (*Collections, error) {
	var errs []error
	c := &Collections{
		Gateways:       open[GatewaySpec, GatewayStatus](b, KindApiGateway, &errs),
		Domains:        open[DomainSpec, DomainStatus](b, KindRuntimeDomain, &errs),
		Databases:      open[DatabaseSpec, Leaf](b, KindDatabase, &errs),
		Environments:   open[EnvironmentSpec, Leaf](b, KindEnvironment, &errs),
		ClientApps:     open[ClientAppSpec, Leaf](b, KindClientApp, &errs),
		CloudFunctions: open[CloudFunctionSpec, Leaf](b, KindCloudFunction, &errs),
		Stages:         open[StageSpec, Leaf](b, KindStage, &errs),
		CronTriggers:   open[CronTriggerSpec, Leaf](b, KindCronTrigger, &errs),
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("platform: %w", err)
	}
	return c, nil
}

func open[Spec, Status any](b store.Backend, kind string, errs *[]error) *store.Collection[Spec, Status] {
	c, err := store.NewCollection[Spec, Status](b, kind, store.CollectionConfig{})
	if err != nil {
		*errs = append(*errs, err)
	}
	return c
}

// ownedBy returns the metadata of a new document of kind under key, owned by
// the gateway gw (or by owner, when given) and labelled with its id.
func ownedBy(kind, key string, gw *store.Meta, owner *store.Meta) store.Meta {
	if owner == nil {
		owner = gw
	}
	return store.Meta{
		Kind:   kind,
		Key:    key,
		Owners: []store.OwnerRef{{Kind: owner.Kind, Key: owner.Key, UID: owner.UID, Controller: true, BlockOwnerDeletion: true}},
		Labels: map[string]string{LabelGateway: gw.Key},
	}
}

// childKey is the key of a gateway's child document named name.
func childKey(gateway, name string) string { return gateway + "/" + name }

// selectGateway lists the documents labelled with gateway id.
func selectGateway(id string) store.ListOptions {
	return store.ListOptions{Selector: store.SelectorFromMap(map[string]string{LabelGateway: id})}
}
