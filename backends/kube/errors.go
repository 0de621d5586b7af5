package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	"github.com/tendhq/tend/store"
)

// ErrFencingUnsupported is the cause of every write whose context carries a
// fence ([store.WithFence]). The Kubernetes API has no transaction across
// objects, so a write cannot be made conditional on a Lease. It matches
// [store.ErrInvalid]: retrying does not help.
var ErrFencingUnsupported = fmt.Errorf("kube: fenced writes are not supported: the Kubernetes API cannot check a lease and write an object in one step: %w", store.ErrInvalid)

// ErrNotInstalled is the cause of calls on a kind the API server does not
// serve ("no matches for kind"): its CustomResourceDefinition is not
// installed, or not yet served. For a [Store], call [Store.Install] or apply
// the definitions first; for a [Client], install the definition of the kind.
// It matches [store.ErrUnknownKind].
var ErrNotInstalled = fmt.Errorf("kube: custom resource definition not installed: %w", store.ErrUnknownKind)

// ErrForbidden is the cause of a request the API server refused to the
// client's identity: RBAC does not allow it, or the credentials were
// rejected. The error names the rights to grant. Retrying does not help.
var ErrForbidden = errors.New("kube: forbidden")

// ErrUnavailable is the cause of a request that did not reach the API
// server, or that the server could not serve now (connection refused, a
// timeout, "503 Service Unavailable", "429 Too Many Requests"). The request
// may or may not have taken effect; every call of [Client] is idempotent, so
// retry it.
var ErrUnavailable = errors.New("kube: API server unavailable")

// ErrFieldConflict is the cause of an [Client.Apply] that would change
// fields another field manager owns. Nothing was changed. Leave those
// fields out of the applied object, or set [ClientConfig.Force] to take
// them over.
var ErrFieldConflict = errors.New("kube: field manager conflict")

// ErrNamespaceTerminating is the cause of an [Client.Apply] into a namespace whose
// deletion was requested: nothing new can be created there. Apply again
// once the namespace is gone.
var ErrNamespaceTerminating = errors.New("kube: namespace terminating")

// fail turns an error of the API into a [*store.Error] whose cause matches
// the store's sentinel for it.
func (s *Store) fail(op, kind, key string, err error) error {
	return &store.Error{Op: op, Kind: kind, Key: key, Err: s.cause(kind, err)}
}

func (s *Store) cause(kind string, err error) error {
	var status apierrors.APIStatus
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &status) {
		return err
	}
	switch {
	case apierrors.IsNotFound(err):
		if d := status.Status().Details; d == nil || d.Name == "" {
			if kind == "" {
				return fmt.Errorf("%w: %w", store.ErrUnknownKind, err)
			}
			return fmt.Errorf("%w: %s.%s (call Store.Install): %w", ErrNotInstalled, Plural(kind), s.cfg.Group, err)
		}
		return fmt.Errorf("%w: %w", store.ErrNotFound, err)
	case apierrors.IsAlreadyExists(err):
		return fmt.Errorf("%w: %w", store.ErrAlreadyExists, err)
	case apierrors.IsConflict(err):
		return fmt.Errorf("%w: %w", store.ErrConflict, err)
	case apierrors.IsResourceExpired(err), apierrors.IsGone(err):
		return fmt.Errorf("%w: %w", store.ErrCompacted, err)
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		return fmt.Errorf("%w: %w", store.ErrInvalid, err)
	case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err):
		what := "leases.coordination.k8s.io"
		if kind != "" {
			what = Plural(kind) + "." + s.cfg.Group + " and " + Plural(kind) + "/status"
		}
		return fmt.Errorf("%w: %w (grant the store's identity get, list, watch, create, update and delete on %s in namespace %s)",
			ErrForbidden, err, what, s.cfg.Namespace)
	}
	return err
}

// fail turns an error of a [Client] request into one that names the
// operation and the object, whose cause matches the sentinel for it. gvr is
// the object's resource, zero when it was not resolved.
func (c *Client) fail(op string, ref Ref, gvr schema.GroupVersionResource, err error) error {
	return fmt.Errorf("kube: %s %v: %w", op, ref, c.cause(op, ref, gvr, err))
}

// verbs are the RBAC verbs each operation of a Client needs.
var verbs = map[string]string{
	"apply":          "get, create and patch",
	"create":         "create",
	"delete":         "get and delete",
	"get":            "get",
	"list":           "list",
	"set finalizers": "get and patch",
}

func (c *Client) cause(op string, ref Ref, gvr schema.GroupVersionResource, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if meta.IsNoMatchError(err) {
		return fmt.Errorf("%w: the API server at %s serves no %s in %s: install the CustomResourceDefinition that defines it: %w",
			ErrNotInstalled, c.host, ref.Kind, ref.APIVersion, err)
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		if unreachable(err) {
			return fmt.Errorf("%w: %w (check that the API server at %s is running and reachable, then retry)", ErrUnavailable, err, c.host)
		}
		return err
	}
	where := "cluster-wide"
	if ref.Namespace != "" {
		where = "in namespace " + ref.Namespace
	}
	switch {
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return fmt.Errorf("%w: %w (apply again once namespace %s is gone)", ErrNamespaceTerminating, err, ref.Namespace)
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%w: %w", store.ErrNotFound, err)
	case apierrors.IsConflict(err) && apierrors.HasStatusCause(err, metav1.CauseTypeFieldManagerConflict):
		return fmt.Errorf("%w: %w (field manager %q changed nothing: leave those fields out of the object, or set ClientConfig.Force to take them over)",
			ErrFieldConflict, err, c.cfg.FieldManager)
	case apierrors.IsConflict(err):
		return fmt.Errorf("%w: %w", store.ErrConflict, err)
	case apierrors.IsAlreadyExists(err):
		return fmt.Errorf("%w: %w", store.ErrAlreadyExists, err)
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		return fmt.Errorf("%w: %w", store.ErrInvalid, err)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("%w: %w (the API server at %s rejected the credentials: check the kubeconfig's user)", ErrForbidden, err, c.host)
	case apierrors.IsForbidden(err):
		res := gvr.Resource
		if gvr.Group != "" {
			res += "." + gvr.Group
		}
		return fmt.Errorf("%w: %w (grant the client's identity %s on %s %s)", ErrForbidden, err, verbs[op], res, where)
	case apierrors.IsServiceUnavailable(err), apierrors.IsServerTimeout(err), apierrors.IsTimeout(err),
		apierrors.IsTooManyRequests(err), apierrors.IsUnexpectedServerError(err):
		return fmt.Errorf("%w: %w (retry)", ErrUnavailable, err)
	}
	return err
}

// unreachable reports whether err is a failure to talk to the API server:
// a network error, or discovery that could not be read.
func unreachable(err error) bool {
	var ue *url.Error
	var ne net.Error
	var de *discovery.ErrGroupDiscoveryFailed
	return errors.As(err, &ue) || errors.As(err, &ne) || errors.As(err, &de) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET)
}
