package kube

import (
	"context"
	"errors"
	"fmt"

	"github.com/tendhq/tend/store"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// ErrFencingUnsupported is the cause of every write whose context carries a
// fence ([store.WithFence]). The Kubernetes API has no transaction across
// objects, so a write cannot be made conditional on a Lease. It matches
// [store.ErrInvalid]: retrying does not help.
var ErrFencingUnsupported = fmt.Errorf("kube: fenced writes are not supported: the Kubernetes API cannot check a lease and write an object in one step: %w", store.ErrInvalid)

// ErrNotInstalled is the cause of calls on a kind whose
// CustomResourceDefinition the API server does not serve. Call
// [Store.Install] or apply the definitions first. It matches
// [store.ErrUnknownKind].
var ErrNotInstalled = fmt.Errorf("kube: custom resource definition not installed (call Store.Install): %w", store.ErrUnknownKind)

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
			return fmt.Errorf("%w: %s.%s: %w", ErrNotInstalled, Plural(kind), s.cfg.Group, err)
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
		return fmt.Errorf("%w (grant the store's identity get, list, watch, create, update and delete on %s in namespace %s)",
			err, what, s.cfg.Namespace)
	}
	return err
}
