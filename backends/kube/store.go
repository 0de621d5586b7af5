package kube

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/tendhq/tend/store"
	"github.com/tendhq/tend/store/backend"
)

// Defaults of [Config].
const (
	DefaultNamespace    = "default"
	DefaultGroup        = "store.tend.dev"
	DefaultFieldManager = "tend"
)

// Config configures [New].
type Config struct {
	// REST says how to reach the API server, for example from
	// clientcmd.BuildConfigFromFlags. Required. Its QPS and Burst bound the
	// store's requests (client-go allows 5 a second, bursts of 10, when they
	// are zero); each update is two requests, a read and a write.
	REST *rest.Config
	// Kinds are the document kinds the store holds, one custom resource of
	// Group each, whose spec and status may be any JSON. Each must pass
	// [store.ValidateKind]. Kinds or Types is required.
	Kinds []string
	// Types are kinds the store holds whose spec and status have Go types
	// ([KindOf]): their definitions carry schemas generated from the types
	// ([SchemaOf]) and, for driven kinds, the columns State, Phase, Ready
	// and Age. A kind is in Kinds or in Types, not both.
	Types []Kind
	// Namespace holds the store's documents and leases; it must exist.
	// Stores in different namespaces are independent. Default
	// [DefaultNamespace].
	Namespace string
	// Group is the API group of the custom resources and the prefix of the
	// annotations and labels the store writes. Default [DefaultGroup].
	Group string
	// FieldManager names the store's writes in the objects' managedFields,
	// at most 128 bytes. Default [DefaultFieldManager].
	FieldManager string
}

// Store is a [store.Backend] over Kubernetes custom resources and
// coordination.k8s.io Leases. Create it with [New] and install its
// CustomResourceDefinitions with [Store.Install]. It is safe for concurrent
// use.
type Store struct {
	cfg    Config
	client *Client // installs the definitions
	dyn    dynamic.Interface
	kinds  map[string]bool
	names  []string                  // the kinds of cfg.Kinds and cfg.Types, sorted
	typed  map[string]kindDefinition // the kinds of cfg.Types
}

var (
	_ store.Backend    = (*Store)(nil)
	_ backend.Unfenced = (*Store)(nil)
)

// New returns a store on the API server cfg.REST points to. It checks the
// configuration, builds the schemas of [Config.Types] (a type with none
// fails with an error matching [ErrUnsupportedType]) and makes no request.
func New(cfg Config) (*Store, error) {
	cfg.Kinds, cfg.Types = slices.Clone(cfg.Kinds), slices.Clone(cfg.Types)
	if cfg.REST == nil {
		return nil, errors.New("kube: Config.REST is required")
	}
	if len(cfg.Kinds) == 0 && len(cfg.Types) == 0 {
		return nil, errors.New("kube: Config.Kinds and Config.Types are empty")
	}
	if cfg.Namespace == "" {
		cfg.Namespace = DefaultNamespace
	}
	if cfg.Group == "" {
		cfg.Group = DefaultGroup
	}
	if cfg.FieldManager == "" {
		cfg.FieldManager = DefaultFieldManager
	}
	if errs := validation.IsDNS1123Label(cfg.Namespace); len(errs) > 0 {
		return nil, fmt.Errorf("kube: namespace %q: %s", cfg.Namespace, strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1123Subdomain(cfg.Group); len(errs) > 0 || !strings.Contains(cfg.Group, ".") {
		return nil, fmt.Errorf("kube: group %q: must be a DNS subdomain with at least one dot", cfg.Group)
	}
	kinds := make(map[string]bool, len(cfg.Kinds)+len(cfg.Types))
	plurals := make(map[string]string, len(cfg.Kinds)+len(cfg.Types))
	typed := make(map[string]kindDefinition, len(cfg.Types))
	names := slices.Clone(cfg.Kinds)
	for _, k := range cfg.Types {
		d, err := typedDefinition(k)
		if err != nil {
			return nil, fmt.Errorf("kube: %w", err)
		}
		typed[k.name] = d
		names = append(names, k.name)
	}
	for _, k := range names {
		if err := store.ValidateKind(k); err != nil {
			return nil, fmt.Errorf("kube: %w", err)
		}
		if kinds[k] {
			return nil, fmt.Errorf("kube: kind %q listed twice", k)
		}
		p := Plural(k)
		if other, ok := plurals[p]; ok {
			return nil, fmt.Errorf("kube: kinds %q and %q share the resource name %q", other, k, p)
		}
		kinds[k], plurals[p] = true, k
	}
	// The store owns its definitions: Install takes their fields back.
	client, err := NewClient(ClientConfig{REST: cfg.REST, FieldManager: cfg.FieldManager, Force: true})
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	return &Store{cfg: cfg, client: client, dyn: client.dyn, kinds: kinds, names: names, typed: typed}, nil
}

// Kinds returns the configured kinds, sorted.
func (s *Store) Kinds() []string { return slices.Clone(s.names) }

// Namespace returns the namespace the store works in.
func (s *Store) Namespace() string { return s.cfg.Namespace }

// FencingUnsupported returns [ErrFencingUnsupported]: every write whose
// context carries a fence ([store.WithFence]) fails with it. See the package
// documentation for why.
func (s *Store) FencingUnsupported() error { return ErrFencingUnsupported }

// keyAnnotation holds a document's key; ownersAnnotation maps the UIDs of its
// owners to their keys.
func (s *Store) keyAnnotation() string    { return s.cfg.Group + "/key" }
func (s *Store) ownersAnnotation() string { return s.cfg.Group + "/owners" }

// resource returns the client of kind's custom resources in the namespace.
func (s *Store) resource(kind string) dynamic.ResourceInterface {
	return s.dyn.Resource(resource(s.cfg.Group, kind)).Namespace(s.cfg.Namespace)
}

// checkKind checks ctx and kind, and key when it is not empty.
func (s *Store) checkKind(ctx context.Context, op, kind, key string, checkKey bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !s.kinds[kind] {
		return backend.UnknownKind(op, kind, key, s.names)
	}
	if checkKey {
		if err := store.ValidateKey(key); err != nil {
			return &store.Error{Op: op, Kind: kind, Key: key, Err: err}
		}
	}
	return nil
}

// unfenced refuses a write whose context carries a fence.
func unfenced(ctx context.Context, op, kind, key string) error {
	return backend.RefuseFence(ctx, op, kind, key, ErrFencingUnsupported)
}

// get reads the object under key. An object being removed (Terminating with
// no finalizer left) is reported missing, as it is about to be.
func (s *Store) get(ctx context.Context, op, kind, key string) (*unstructured.Unstructured, store.Document, error) {
	u, err := s.resource(kind).Get(ctx, ObjectName(key), metav1.GetOptions{})
	if err != nil {
		return nil, store.Document{}, s.fail(op, kind, key, err)
	}
	d, ok, err := s.document(kind, u)
	switch {
	case err != nil:
		return nil, store.Document{}, &store.Error{Op: op, Kind: kind, Key: key, Err: err}
	case !ok || d.Meta.Key != key || removing(d):
		return nil, store.Document{}, &store.Error{Op: op, Kind: kind, Key: key, Err: store.ErrNotFound}
	}
	return u, d, nil
}

// removing reports whether d is the last state of a document the API server
// is removing: Terminating with no finalizer left.
func removing(d store.Document) bool { return d.Meta.Terminating() && len(d.Meta.Finalizers) == 0 }

// Get returns the document stored under key.
func (s *Store) Get(ctx context.Context, kind, key string) (store.Document, error) {
	const op = "get"
	if err := s.checkKind(ctx, op, kind, key, true); err != nil {
		return store.Document{}, err
	}
	_, d, err := s.get(ctx, op, kind, key)
	return d, err
}

// List reads the documents of kind in one consistent read from the API
// server and filters them by opts. The result's revision is the list's
// resourceVersion.
//
// Object names do not sort as keys do, so the API server's own pages, in
// name order, cannot be the store's pages, in key order. A paged List reads
// the kind (in pages of the API server's limit and continue) at the
// resourceVersion of its first page (resourceVersionMatch=Exact), and
// returns the documents after the last key of the page before: together
// the pages are one snapshot, each bounded in size for the caller, though
// the API server reads the whole kind for each. Once the API server has
// compacted that resourceVersion it answers "410 Gone" and the page fails
// with [store.ErrCompacted]: the list starts again from its first page.
func (s *Store) List(ctx context.Context, kind string, opts store.ListOptions) (store.ListResult, error) {
	const op = "list"
	if err := s.checkKind(ctx, op, kind, "", false); err != nil {
		return store.ListResult{}, err
	}
	cursor, err := backend.StartList(kind, opts)
	if err != nil {
		return store.ListResult{}, err
	}
	var items []store.Document
	lo := metav1.ListOptions{Limit: listChunk}
	if cursor.Revision != 0 {
		lo.ResourceVersion, lo.ResourceVersionMatch = formatRevision(cursor.Revision), metav1.ResourceVersionMatchExact
	}
	var rev int64
	for {
		ul, err := s.resource(kind).List(ctx, lo)
		if err != nil {
			return store.ListResult{}, s.fail(op, kind, "", err)
		}
		if rev == 0 {
			if rev, err = parseRevision(ul.GetResourceVersion()); err != nil {
				return store.ListResult{}, &store.Error{Op: op, Kind: kind, Err: err}
			}
		}
		for i := range ul.Items {
			d, ok, err := s.document(kind, &ul.Items[i])
			if err != nil {
				return store.ListResult{}, &store.Error{Op: op, Kind: kind, Err: err}
			}
			if !ok || removing(d) || !backend.Selects(opts, &d.Meta) {
				continue
			}
			items = append(items, d)
		}
		if ul.GetContinue() == "" {
			break
		}
		// The API server's continue token carries the resourceVersion.
		lo = metav1.ListOptions{Limit: listChunk, Continue: ul.GetContinue()}
	}
	slices.SortFunc(items, func(a, b store.Document) int { return strings.Compare(a.Meta.Key, b.Meta.Key) })
	key := func(d store.Document) string { return d.Meta.Key }
	page, next, rev := backend.Page(items, key, opts.Limit, cursor, rev)
	return store.ListResult{Items: page, Revision: rev, Continue: next}, nil
}

// listChunk is how many objects one request of List reads from the API
// server.
const listChunk = 500

// Create stores a new custom resource for doc.
func (s *Store) Create(ctx context.Context, doc store.Document) (store.Document, error) {
	const op = "create"
	kind, key := doc.Meta.Kind, doc.Meta.Key
	if err := s.checkKind(ctx, op, kind, key, true); err != nil {
		return store.Document{}, err
	}
	if err := backend.ValidateCreate(doc); err != nil {
		return store.Document{}, &store.Error{Op: op, Kind: kind, Key: key, Err: err}
	}
	if err := unfenced(ctx, op, kind, key); err != nil {
		return store.Document{}, err
	}
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetAPIVersion(s.cfg.Group + "/" + Version)
	u.SetKind(kind)
	u.SetName(ObjectName(key))
	u.SetNamespace(s.cfg.Namespace)
	if err := s.setSpec(u, doc); err != nil {
		return store.Document{}, &store.Error{Op: op, Kind: kind, Key: key, Err: err}
	}
	out, err := s.resource(kind).Create(ctx, u, metav1.CreateOptions{FieldManager: s.cfg.FieldManager})
	if err != nil {
		return store.Document{}, s.fail(op, kind, key, err)
	}
	return s.stored(op, kind, key, out)
}

// stored converts an object the API server returned after a write.
func (s *Store) stored(op, kind, key string, u *unstructured.Unstructured) (store.Document, error) {
	d, ok, err := s.document(kind, u)
	if err == nil && !ok {
		err = fmt.Errorf("the API server returned an object without the %s annotation", s.keyAnnotation())
	}
	if err != nil {
		return store.Document{}, &store.Error{Op: op, Kind: kind, Key: key, Err: err}
	}
	return d, nil
}

// current reads the object a write based on doc replaces and checks doc's
// revision against it.
func (s *Store) current(ctx context.Context, op string, doc store.Document) (*unstructured.Unstructured, store.Document, error) {
	kind, key := doc.Meta.Kind, doc.Meta.Key
	u, d, err := s.get(ctx, op, kind, key)
	if err != nil {
		return nil, store.Document{}, err
	}
	if d.Meta.Revision != doc.Meta.Revision {
		return nil, store.Document{}, backend.RevisionConflict(op, kind, key, doc.Meta.Revision, d.Meta.Revision)
	}
	return u, d, nil
}

// UpdateSpec replaces the object's spec, labels, finalizers and owner
// references, with doc's revision as the resourceVersion precondition.
func (s *Store) UpdateSpec(ctx context.Context, doc store.Document) (store.Document, error) {
	const op = "update spec"
	kind, key := doc.Meta.Kind, doc.Meta.Key
	if err := s.checkKind(ctx, op, kind, key, true); err != nil {
		return store.Document{}, err
	}
	if err := backend.ValidateMeta(&doc.Meta); err != nil {
		return store.Document{}, &store.Error{Op: op, Kind: kind, Key: key, Err: err}
	}
	spec, err := canonical(doc.Spec)
	if err != nil {
		return store.Document{}, &store.Error{Op: op, Kind: kind, Key: key, Err: fmt.Errorf("%w: spec: %w", store.ErrInvalid, err)}
	}
	if err := unfenced(ctx, op, kind, key); err != nil {
		return store.Document{}, err
	}
	u, cur, err := s.current(ctx, op, doc)
	if err != nil {
		return store.Document{}, err
	}
	update := doc
	update.Spec = spec
	if u, err := backend.ApplySpec(cur, update); err != nil || !u.Changed {
		if err != nil {
			return store.Document{}, &store.Error{Op: op, Kind: kind, Key: key, Err: err}
		}
		return cur, nil
	}
	if err := s.setSpec(u, doc); err != nil {
		return store.Document{}, &store.Error{Op: op, Kind: kind, Key: key, Err: err}
	}
	out, err := s.resource(kind).Update(ctx, u, metav1.UpdateOptions{FieldManager: s.cfg.FieldManager})
	if err != nil {
		return store.Document{}, s.fail(op, kind, key, err)
	}
	return s.stored(op, kind, key, out)
}

// UpdateStatus replaces the object's status through the status subresource,
// with doc's revision as the resourceVersion precondition. The status of a
// driven kind ([KindOf]) is written with its summary ([SummaryField]),
// which a write of the same status brings up to date.
func (s *Store) UpdateStatus(ctx context.Context, doc store.Document) (store.Document, error) {
	const op = "update status"
	kind, key := doc.Meta.Kind, doc.Meta.Key
	if err := s.checkKind(ctx, op, kind, key, true); err != nil {
		return store.Document{}, err
	}
	status, err := canonical(doc.Status)
	if err != nil {
		return store.Document{}, &store.Error{Op: op, Kind: kind, Key: key, Err: fmt.Errorf("%w: status: %w", store.ErrInvalid, err)}
	}
	if err := unfenced(ctx, op, kind, key); err != nil {
		return store.Document{}, err
	}
	u, cur, err := s.current(ctx, op, doc)
	if err != nil {
		return store.Document{}, err
	}
	sum, written := "", ""
	if s.typed[kind].driven {
		sum, written = summaryOf(status, cur.Meta.Generation), writtenSummary(u)
	}
	if string(status) == string(cur.Status) && sum == written {
		return cur, nil
	}
	if err := setPayload(u, "status", status); err != nil {
		return store.Document{}, &store.Error{Op: op, Kind: kind, Key: key, Err: err}
	}
	if m, ok := u.Object["status"].(map[string]any); ok && sum != "" {
		m[SummaryField] = sum
	}
	out, err := s.resource(kind).UpdateStatus(ctx, u, metav1.UpdateOptions{FieldManager: s.cfg.FieldManager})
	if err != nil {
		return store.Document{}, s.fail(op, kind, key, err)
	}
	return s.stored(op, kind, key, out)
}

// Delete deletes the object with background propagation; the API server
// keeps an object with finalizers until they are removed.
func (s *Store) Delete(ctx context.Context, kind, key string, opts store.DeleteOptions) error {
	const op = "delete"
	if err := s.checkKind(ctx, op, kind, key, true); err != nil {
		return err
	}
	if err := unfenced(ctx, op, kind, key); err != nil {
		return err
	}
	_, cur, err := s.get(ctx, op, kind, key)
	if err != nil {
		return err
	}
	if err := backend.CheckDelete(cur.Meta, opts); err != nil || cur.Meta.Terminating() {
		return err
	}
	background := metav1.DeletePropagationBackground
	del := metav1.DeleteOptions{PropagationPolicy: &background, Preconditions: &metav1.Preconditions{}}
	if opts.UID != "" {
		del.Preconditions.UID = ptr(typesUID(opts.UID))
	}
	if opts.Revision != 0 {
		del.Preconditions.ResourceVersion = ptr(formatRevision(opts.Revision))
	}
	if err := s.resource(kind).Delete(ctx, ObjectName(key), del); err != nil {
		return s.fail(op, kind, key, err)
	}
	return nil
}

func ptr[T any](v T) *T { return &v }
