package kube

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/tendhq/tend/examples/workspace/local"
)

// DefaultFieldManager is the field manager of the backends' server-side
// applies when a config's FieldManager is empty.
const DefaultFieldManager = "tend-workspace"

// DefaultTimeout bounds each wait for the cluster (a Pod to become Ready, a
// claim to be bound, an object to be gone) when a config's timeout is zero.
const DefaultTimeout = time.Minute

// Names and keys the backends put on what they create.
const (
	// LabelWorkspace holds the workspace id of a Pod, claim or volume.
	LabelWorkspace = "workspace.tend.dev/id"
	// AnnotationRestoredFrom holds, on a claim, the archive key its volume
	// was restored from.
	AnnotationRestoredFrom = "workspace.tend.dev/restored-from"
)

// pollInterval is how often a wait reads the object again.
const pollInterval = 100 * time.Millisecond

// PodName returns the name of workspace id's Pod: ws-{id}.
func PodName(id string) string { return local.ContainerName(id) }

// ClaimName returns the name of workspace id's PersistentVolumeClaim:
// ws-{id}-home.
func ClaimName(id string) string { return local.VolumeName(id) }

// PersistentVolumeName returns the name of the PersistentVolume of
// workspace id in namespace: {namespace}.ws-{id}-home. Volumes are not
// namespaced, so the name holds the namespace; no namespace has a dot.
func PersistentVolumeName(namespace, id string) string { return namespace + "." + ClaimName(id) }

// conn is what both backends share: a client, the namespace and the field
// manager.
type conn struct {
	cs        kubernetes.Interface
	host      string
	namespace string
	manager   string
	timeout   time.Duration
}

func newConn(pkg string, cfg *rest.Config, namespace, manager string, timeout time.Duration) (conn, error) {
	if cfg == nil || namespace == "" {
		return conn{}, fmt.Errorf("kube: %s needs REST and Namespace", pkg)
	}
	if timeout < 0 {
		return conn{}, fmt.Errorf("kube: %s: negative timeout", pkg)
	}
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	if manager == "" {
		manager = DefaultFieldManager
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return conn{}, fmt.Errorf("kube: %s: %w", pkg, err)
	}
	return conn{cs: cs, host: cfg.Host, namespace: namespace, manager: manager, timeout: timeout}, nil
}

func (c conn) apply() metav1.ApplyOptions { return metav1.ApplyOptions{FieldManager: c.manager} }

// object names an object of the API in errors: "persistentvolumeclaims
// ns/ws-w1-home", "persistentvolumes ns.ws-w1-home" (not namespaced).
type object struct {
	resource, namespace, name string
}

func (o object) String() string {
	if o.namespace == "" {
		return o.resource + " " + o.name
	}
	return o.resource + " " + o.namespace + "/" + o.name
}

// fail turns err, from verb on o, into an error naming o and, where the
// caller can fix the cause, saying how.
func (c conn) fail(verb string, o object, err error) error {
	var hint string
	var status apierrors.APIStatus
	switch {
	case errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH):
		hint = fmt.Sprintf("the API server at %s does not answer: start it, or point the kubeconfig at a running one", c.host)
	case apierrors.IsForbidden(err):
		where := "cluster-wide"
		if o.namespace != "" {
			where = "in namespace " + o.namespace
		}
		hint = fmt.Sprintf("grant the kubeconfig's identity %q on %s %s", verb, o.resource, where)
	case apierrors.IsNotFound(err) && errors.As(err, &status) && status.Status().Details != nil &&
		status.Status().Details.Kind == "namespaces":
		hint = fmt.Sprintf("namespace %s does not exist: create it first", o.namespace)
	case apierrors.IsConflict(err) && errors.As(err, &status) && status.Status().Details != nil &&
		slices.ContainsFunc(status.Status().Details.Causes, func(c metav1.StatusCause) bool { return c.Type == metav1.CauseTypeFieldManagerConflict }):
		hint = fmt.Sprintf("another field manager owns fields that %s applies: leave them to it, or delete the object", c.manager)
	}
	if hint != "" {
		return fmt.Errorf("kube: %s %s: %s: %w", verb, o, hint, err)
	}
	return fmt.Errorf("kube: %s %s: %w", verb, o, err)
}

// waitFor polls done until it reports true, fails, or c.timeout passes; the
// timeout error says what was awaited and, through status, what was seen
// last and who should have acted.
func (c conn) waitFor(ctx context.Context, what string, done func(ctx context.Context) (ok bool, status string, err error)) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, pollInterval, c.timeout, true, func(ctx context.Context) (bool, error) {
		ok, status, err := done(ctx)
		last = status
		return ok, err
	})
	if err != nil && ctx.Err() == nil && wait.Interrupted(err) {
		return fmt.Errorf("kube: %s: not done after %v: %s", what, c.timeout, last)
	}
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}
