package infra

import (
	"context"
	"errors"
	"fmt"
	"maps"
)

// Sentinel errors, matched with errors.Is.
var (
	// ErrNotFound: the resource or its namespace does not exist.
	ErrNotFound = errors.New("infra: not found")
	// ErrTerminating: the resource, or the namespace it belongs in, is being
	// deleted; try again once it is gone.
	ErrTerminating = errors.New("infra: terminating")
	// ErrInjected: a failure injected by [Sim] (a network error, a timeout).
	ErrInjected = errors.New("infra: injected failure")
	// ErrInvalid: a malformed request (no kind or name, a namespaced kind
	// without a namespace).
	ErrInvalid = errors.New("infra: invalid request")
)

// Kind is a cluster resource kind.
type Kind string

// The kinds the gateway platform uses.
const (
	Namespace          Kind = "Namespace"
	ConfigMap          Kind = "ConfigMap"
	Deployment         Kind = "Deployment"
	Service            Kind = "Service"
	ApisixRoute        Kind = "ApisixRoute"
	ApisixPluginConfig Kind = "ApisixPluginConfig"
	ApisixTls          Kind = "ApisixTls"
	Certificate        Kind = "Certificate"
)

// Namespaced reports whether resources of kind k live in a namespace (all but
// Namespace itself).
func (k Kind) Namespaced() bool { return k != Namespace }

// Ref names one resource.
type Ref struct {
	Kind Kind
	// Namespace is empty for a Namespace.
	Namespace string
	Name      string
}

// String formats the ref as "Kind namespace/name".
func (r Ref) String() string {
	if r.Namespace == "" {
		return fmt.Sprintf("%s %s", r.Kind, r.Name)
	}
	return fmt.Sprintf("%s %s/%s", r.Kind, r.Namespace, r.Name)
}

func (r Ref) validate() error {
	switch {
	case r.Kind == "" || r.Name == "":
		return fmt.Errorf("%w: %v: kind and name are required", ErrInvalid, r)
	case r.Kind.Namespaced() && r.Namespace == "":
		return fmt.Errorf("%w: %v: a %s needs a namespace", ErrInvalid, r, r.Kind)
	case !r.Kind.Namespaced() && r.Namespace != "":
		return fmt.Errorf("%w: %v: a %s has no namespace", ErrInvalid, r, r.Kind)
	}
	return nil
}

// Resource is the desired state of one resource, as a controller applies it.
type Resource struct {
	Ref
	// Labels are kept with the resource (the platform labels everything it
	// creates with the gateway's id).
	Labels map[string]string
	// Data is the resource's content (a route's host, a Deployment's image…),
	// opaque to the cluster.
	Data map[string]string
}

func (r Resource) clone() Resource {
	r.Labels = maps.Clone(r.Labels)
	r.Data = maps.Clone(r.Data)
	return r
}

// Observed is a resource as the cluster reports it.
type Observed struct {
	Resource
	// Ready reports that the resource is serving: a Deployment has an available
	// replica, a Certificate was issued, a route was accepted by the ingress.
	Ready bool
	// Terminating reports that deletion was requested and the resource is not
	// gone yet.
	Terminating bool
}

// Cluster holds the platform's resources. Implementations are safe for
// concurrent use; every method blocks and honours ctx.
type Cluster interface {
	// Apply creates the resource or updates it to r. It fails with an error
	// matching [ErrNotFound] when r's namespace does not exist and
	// [ErrTerminating] when r or its namespace is being deleted.
	Apply(ctx context.Context, r Resource) error
	// Delete requests deletion of the resource. The resource may stay
	// Terminating for a while before it is gone. Deleting a resource that is
	// gone or already Terminating succeeds.
	Delete(ctx context.Context, ref Ref) error
	// Get returns the resource as observed now, or an error matching
	// [ErrNotFound] once it is gone.
	Get(ctx context.Context, ref Ref) (Observed, error)
}

// Database names a gateway's database and the user its pods connect as.
type Database struct {
	Name string
	User string
}

// Databases holds the platform's databases: a database server in production
// (CREATE DATABASE / CREATE ROLE). Implementations are safe for concurrent use.
type Databases interface {
	// EnsureDatabase creates the database and its user unless they exist.
	EnsureDatabase(ctx context.Context, db Database) error
	// DropDatabase drops the database and its user. Dropping what does not
	// exist succeeds.
	DropDatabase(ctx context.Context, db Database) error
	// DatabaseExists reports whether the database or its user still exists.
	DatabaseExists(ctx context.Context, db Database) (bool, error)
}
