package kube

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/tendhq/tend/store"
)

// ClientConfig configures [NewClient].
type ClientConfig struct {
	// REST says how to reach the API server, for example from
	// clientcmd.BuildConfigFromFlags. Required. Its QPS and Burst bound the
	// client's requests (client-go allows 5 a second, bursts of 10, when
	// they are zero).
	REST *rest.Config
	// FieldManager names the client's writes: server-side apply records the
	// fields each Apply sets as owned by it, and managedFields show it.
	// Default [DefaultFieldManager].
	FieldManager string
	// Force makes Apply take over fields another field manager owns. By
	// default such an Apply fails with [ErrFieldConflict] and changes
	// nothing. A controller that is the only rightful writer of the fields
	// it applies sets it, as Kubernetes recommends for controllers.
	Force bool
}

// Client acts on Kubernetes objects of any kind, built-in or custom: it
// applies them with server-side apply ([Client.Apply]), deletes them
// ([Client.Delete]), reads and lists them, persists finalizer changes
// ([NewFinalizerObject]) and installs CustomResourceDefinitions
// ([Client.InstallDefinitions]). Objects are [unstructured.Unstructured]; Apply also
// takes typed objects such as *appsv1.Deployment. Create it with
// [NewClient]. It is safe for concurrent use.
//
// Kinds are resolved to resources through the API server's discovery, read
// on first use and cached. A kind the cache does not know makes the client
// read discovery again once, so a CustomResourceDefinition installed after
// the client started is found; a kind still unknown then fails with
// [ErrNotInstalled].
//
// Errors name the operation and the object, and match a sentinel callers
// branch on with errors.Is: [store.ErrNotFound] (the object or its namespace
// does not exist), [store.ErrConflict] (a resourceVersion or UID
// precondition failed), [store.ErrInvalid] (the API server refused the
// object as malformed), [ErrNotInstalled], [ErrFieldConflict],
// [ErrNamespaceTerminating], [ErrForbidden] and [ErrUnavailable].
type Client struct {
	cfg  ClientConfig
	dyn  dynamic.Interface
	disc discovery.DiscoveryInterfaceWithContext
	host string

	mu     sync.Mutex                 // guards mapper
	mapper meta.RESTMapperWithContext // from the last discovery read; nil before the first
}

// NewClient returns a client of the API server cfg.REST points to. It checks
// the configuration and makes no request.
func NewClient(cfg ClientConfig) (*Client, error) {
	if cfg.REST == nil {
		return nil, errors.New("kube: ClientConfig.REST is required")
	}
	if cfg.FieldManager == "" {
		cfg.FieldManager = DefaultFieldManager
	}
	if len(cfg.FieldManager) > 128 {
		return nil, fmt.Errorf("kube: field manager %q: at most 128 bytes", cfg.FieldManager)
	}
	rc := rest.CopyConfig(cfg.REST)
	cfg.REST = rc
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kube: %w", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kube: %w", err)
	}
	return &Client{cfg: cfg, dyn: dyn, disc: discovery.ToDiscoveryInterfaceWithContext(dc), host: rc.Host}, nil
}

// FieldManager returns the name the client's writes are recorded under.
func (c *Client) FieldManager() string { return c.cfg.FieldManager }

// Ref names one object.
type Ref struct {
	// APIVersion is the group and version, "apps/v1", or the version alone
	// for the core group, "v1".
	APIVersion string
	// Kind is the object's kind, "Deployment".
	Kind string
	// Namespace is the object's namespace; empty for a cluster-scoped kind
	// such as Namespace.
	Namespace string
	// Name is the object's name.
	Name string
}

// RefOf returns the Ref of obj.
func RefOf(obj *unstructured.Unstructured) Ref {
	return Ref{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// String formats the ref as "Deployment.apps team-a/web", "Namespace team-a",
// or, without a name (a list), "ConfigMap in team-a".
func (r Ref) String() string {
	kind := r.Kind
	if g := r.gvk().Group; g != "" {
		kind += "." + g
	}
	switch {
	case r.Name == "" && r.Namespace != "":
		return kind + " in " + r.Namespace
	case r.Namespace == "":
		return strings.TrimSuffix(kind+" "+r.Name, " ")
	}
	return kind + " " + r.Namespace + "/" + r.Name
}

func (r Ref) gvk() schema.GroupVersionKind {
	gv, _ := schema.ParseGroupVersion(r.APIVersion)
	return gv.WithKind(r.Kind)
}

// target is a resolved object: its ref and the client of its resource,
// namespaced where the kind is.
type target struct {
	ref Ref
	gvr schema.GroupVersionResource
	res dynamic.ResourceInterface
}

// resolve checks ref and finds its resource. A ref without a name is a kind
// and a namespace, as List takes them.
func (c *Client) resolve(ctx context.Context, op string, ref Ref, named bool) (target, error) {
	if err := ctx.Err(); err != nil {
		return target{}, err
	}
	if _, err := schema.ParseGroupVersion(ref.APIVersion); err != nil || ref.APIVersion == "" || ref.Kind == "" {
		return target{}, fmt.Errorf("kube: %s %v: %w: apiVersion %q and kind %q are required", op, ref, store.ErrInvalid, ref.APIVersion, ref.Kind)
	}
	if named {
		msgs := rest.IsValidPathSegmentName(ref.Name)
		if ref.Name == "" {
			msgs = []string{"a name is required"}
		}
		if len(msgs) > 0 {
			return target{}, fmt.Errorf("kube: %s %v: %w: name %q: %s", op, ref, store.ErrInvalid, ref.Name, strings.Join(msgs, "; "))
		}
	}
	m, err := c.mapping(ctx, ref.gvk())
	if err != nil {
		return target{}, c.fail(op, ref, schema.GroupVersionResource{}, err)
	}
	t := target{ref: ref, gvr: m.Resource}
	switch namespaced := m.Scope.Name() == meta.RESTScopeNameNamespace; {
	case namespaced && ref.Namespace == "" && named:
		return target{}, fmt.Errorf("kube: %s %v: %w: a %s needs a namespace", op, ref, store.ErrInvalid, ref.Kind)
	case !namespaced && ref.Namespace != "":
		return target{}, fmt.Errorf("kube: %s %v: %w: a %s is cluster-scoped and has no namespace", op, ref, store.ErrInvalid, ref.Kind)
	case namespaced && ref.Namespace != "":
		t.res = c.dyn.Resource(m.Resource).Namespace(ref.Namespace)
	default:
		t.res = c.dyn.Resource(m.Resource)
	}
	return t, nil
}

// mapping resolves gvk to its resource, reading discovery again when the
// last read does not know the kind.
func (c *Client) mapping(ctx context.Context, gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	c.mu.Lock()
	m := c.mapper
	c.mu.Unlock()
	if m != nil {
		if mapping, err := m.RESTMappingWithContext(ctx, gvk.GroupKind(), gvk.Version); !meta.IsNoMatchError(err) {
			return mapping, err
		}
	}
	groups, err := restmapper.GetAPIGroupResourcesWithContext(ctx, c.disc)
	if err != nil {
		return nil, err
	}
	m = restmapper.NewDiscoveryRESTMapperWithContext(groups)
	c.mu.Lock()
	c.mapper = m
	c.mu.Unlock()
	return m.RESTMappingWithContext(ctx, gvk.GroupKind(), gvk.Version)
}

// Get returns the object ref names. It fails with an error matching
// [store.ErrNotFound] when the object does not exist.
func (c *Client) Get(ctx context.Context, ref Ref) (*unstructured.Unstructured, error) {
	t, err := c.resolve(ctx, "get", ref, true)
	if err != nil {
		return nil, err
	}
	u, err := t.res.Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return nil, c.fail("get", ref, t.gvr, err)
	}
	return u, nil
}

// ListOptions selects the objects [Client.List] returns.
type ListOptions struct {
	// Namespace restricts the list to one namespace. Empty lists every
	// namespace, or the objects of a cluster-scoped kind.
	Namespace string
	// Selector is a label selector ("gateway=gw-01", "tier in (web,api)").
	// Empty selects every object.
	Selector string
}

// List returns the objects of apiVersion and kind that opts selects, in the
// API server's order, from one consistent read.
func (c *Client) List(ctx context.Context, apiVersion, kind string, opts ListOptions) ([]*unstructured.Unstructured, error) {
	ref := Ref{APIVersion: apiVersion, Kind: kind, Namespace: opts.Namespace}
	t, err := c.resolve(ctx, "list", ref, false)
	if err != nil {
		return nil, err
	}
	l, err := t.res.List(ctx, metav1.ListOptions{LabelSelector: opts.Selector})
	if err != nil {
		return nil, c.fail("list", ref, t.gvr, err)
	}
	out := make([]*unstructured.Unstructured, len(l.Items))
	for i := range l.Items {
		out[i] = &l.Items[i]
	}
	return out, nil
}
