// Package kube is a [store.Backend] on the Kubernetes API: each document is
// a custom resource, each lease a coordination.k8s.io Lease. Controllers
// built on tend then keep their state in a cluster, where kubectl, RBAC,
// audit logs and the garbage collector see it. Its [Client] acts on the
// objects such controllers manage.
//
//	s, err := kube.New(kube.Config{REST: restConfig, Namespace: "gateways",
//		Types: []kube.Kind{kube.KindOf[GatewaySpec, GatewayStatus]("ApiGateway")}})
//	if err != nil { ... }
//	if err := s.Install(ctx); err != nil { ... } // or apply the definitions as manifests
//
// # Kinds and objects
//
// Each kind is a namespaced CustomResourceDefinition in [Config.Group]
// (default "store.tend.dev"), version v1, resource [Plural] of the kind,
// in the category "tend", with the status subresource; see
// [Store.Definitions]. [Store.Install] creates or updates them and waits
// until they are served; without them every call fails with
// [ErrNotInstalled]. The spec and status of a kind of [Config.Kinds] may be
// any JSON; those of a kind of [Config.Types] have the schemas of their Go
// types (see below).
//
// # At home in kubectl
//
// A kind given with its Go types ([KindOf]) has a definition that
// describes them ([SchemaOf], by encoding/json's rules): `kubectl explain`
// documents their fields from `description` struct tags (the machine's
// status fields come described), and the API server refuses a spec or
// status of the wrong shape (store.ErrInvalid) before any controller reads
// it. When its status embeds statemachine.Status, the kind is driven and
// `kubectl get` shows:
//
//	NAME                                    STATE     PHASE      READY     AGE
//	gw-1-f5135b2765fda46992f81bd08c88b716   Running   Running    Settled   3m
//	gw-2-740cf10319fd90ab25fe2476eab9786a   Running   Creating   Working   12s
//
// READY is the summary the store writes into the status with each status
// write ([SummaryField]; Paused, Fault, Refused, Working or Settled) and
// leaves out of the status it returns. It is worked out when the status is
// written, so after a spec change it says what it said until the controller
// next writes the status. `kubectl get tend` lists the documents of every
// kind of every store at once.
//
// A store works in one namespace ([Config.Namespace]); stores in different
// namespaces are independent. A document's key is not a valid object name in
// general ("team-a/gw-1", up to 253 bytes, upper case allowed), so the object
// is named [ObjectName](key) — a readable slug and 32 hex digits of the key's
// SHA-256 — and the key is kept in the annotation "<group>/key". Objects
// without that annotation are not documents and are ignored.
//
// Meta maps to ObjectMeta:
//
//   - UID is metadata.uid; Revision is metadata.resourceVersion, read as the
//     integer it is on every etcd-backed API server; Generation is
//     metadata.generation, which the API server moves when the spec changes,
//     less the one step it adds when deletion is requested.
//   - CreatedAt is creationTimestamp, DeletionRequestedAt deletionTimestamp,
//     UpdatedAt the newest time in managedFields: whole seconds, as
//     Kubernetes keeps them.
//   - Labels and Finalizers are the object's own; tend validates them by the
//     same rules as Kubernetes.
//   - Owners are ownerReferences (apiVersion "<group>/v1", the owner's kind,
//     its ObjectName and UID), with the owners' keys in the annotation
//     "<group>/owners". They are real owner references: Kubernetes' garbage
//     collector removes a document whose owners are all gone.
//
// Spec and Status must be JSON. The API server stores them as JSON objects
// and returns them re-encoded, keys sorted and without spaces, so the store
// compares and returns payloads in that form: {"b":1, "a":2} reads back as
// {"a":2,"b":1}, and writing it again is not a change.
//
// # Writes
//
// UpdateSpec and UpdateStatus read the object, check the document's revision
// against it ([store.ErrConflict]) and the store's rules (no finalizer added
// while Terminating), then write with that resourceVersion as the API
// server's precondition: the main resource for the spec, labels, finalizers
// and owners, the status subresource for the status alone, so each has its
// own writer and RBAC rule. A write that changes nothing is not sent. Delete
// uses background propagation; the API server keeps an object with
// finalizers, Terminating, until the last is removed, and then deletes it:
// the store reports the document missing from that moment.
//
// # Lists and watches
//
// List is one consistent read of the kind in the namespace; its revision is
// the list's resourceVersion. Label selectors and owners are applied by the
// store. A paged List ([store.ListOptions.Limit]) reads each page at the
// first page's resourceVersion, so its pages are one snapshot ("410 Gone"
// once that version is compacted is [store.ErrCompacted]); object names do
// not sort as keys do, so each page reads the whole kind (see [Store.List]).
// Watch is the API's watch from that resourceVersion: the store
// resumes it when the API server ends it (as it does after its request
// timeout) and reports "410 Gone" as [store.ErrCompacted]. Kubernetes has no
// API to compact: history goes when the API server compacts etcd (every five
// minutes by default) or sooner when its watch cache no longer holds the
// revision.
//
// # Leases and fencing
//
// A lease is a Lease object in the namespace named [ObjectName](name), with
// the store's label and annotations: holderIdentity is the holder (empty
// once released), leaseTransitions the fence, renewTime plus the time to
// live (kept exactly in an annotation; leaseDurationSeconds rounds it up)
// the expiry. Every change is an update with the Lease's resourceVersion as
// precondition, so two processes never both take a lease. Expiry is judged
// by each process's clock against renewTime, as client-go's leader election
// does: the clocks must agree to well within the time to live.
//
// A fenced write ([store.WithFence]) must check its lease in the same atomic
// step as the write. The Kubernetes API has no transaction across objects,
// and neither admission webhooks nor ValidatingAdmissionPolicy parameters
// read the Lease at the write's own revision, so the check cannot be atomic.
// Rather than perform such writes unchecked, the store refuses them all with
// [ErrFencingUnsupported] and says so through [Store.FencingUnsupported]
// (the capability [backend.Unfenced]). Leases still give leader election and
// sharding their exclusion; what is lost is the guarantee that a process
// which lost its lease a moment ago cannot write once more. A controller
// Manager on this store states that choice with manager.Config.Unfenced
// (package github.com/tendhq/tend/controller), without which it refuses
// the store as its Leaser.
//
// # Acting on other objects
//
// A controller whose documents live anywhere acts on Kubernetes objects of
// any kind through a [Client] ([NewClient]): [Client.Apply] creates or
// updates typed or unstructured objects (Deployments, Services, ConfigMaps,
// Namespaces, custom resources) with server-side apply under the client's
// field manager, [SetOwner] gives them owner references so the garbage
// collector follows, [Client.Delete] deletes idempotently with background
// or foreground propagation and reports an object that is still
// Terminating, [DeploymentAvailable] and [ConditionTrue] judge readiness
// from status, and [Client.InstallDefinitions] installs
// CustomResourceDefinitions (the store's, or minimal ones of another
// project's custom resources, left alone where they exist) and waits until
// they are served. [NewFinalizerObject] makes any object a
// [finalizer.Guarded], so [finalizer.Ensure] guards Kubernetes objects as it
// guards documents: every finalizer write carries the resourceVersion and
// uid last read as preconditions, and Conflict and NotFound come back as
// [store.ErrConflict] and [store.ErrNotFound].
//
// Each call is one request to the API server (Delete also reads the object
// after; InstallDefinitions writes each definition and then polls), so an
// object is applied whole or not at all. Failures name the
// operation and the object and match a sentinel with errors.Is:
// [ErrUnavailable] (no API server at the address, or it cannot serve now:
// retry), [ErrNotInstalled] (no definition serves the kind: install it),
// [ErrForbidden] (RBAC refused: the error names the verbs and resource to
// grant), [ErrFieldConflict] (another field manager owns a field: leave it
// out, or set [ClientConfig.Force]), [ErrNamespaceTerminating] (the namespace is
// being deleted), [store.ErrNotFound], [store.ErrConflict] and
// [store.ErrInvalid].
//
// # Permissions and errors
//
// The store's identity needs get, list, watch, create, update and delete on
// the kinds' resources and their status, and on leases, in its namespace;
// Install also needs the right to write customresourcedefinitions. Errors
// are [*store.Error] values naming the document, whose cause matches the
// store's sentinels: NotFound is [store.ErrNotFound], AlreadyExists
// [store.ErrAlreadyExists], Conflict [store.ErrConflict], Invalid
// [store.ErrInvalid], Gone [store.ErrCompacted]; a forbidden request
// matches [ErrForbidden] and says which rights to grant.
package kube
