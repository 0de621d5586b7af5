package kube

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/tendhq/tend/store"
	"github.com/tendhq/tend/store/backend"
)

var leaseResource = schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}

// The store's annotations and label on Lease objects, after the group.
const (
	leaseNameSuffix = "/lease" // annotation: the lease's name; label: marks the store's leases
	leaseTTLSuffix  = "/ttl"   // annotation: the exact time to live
)

func (s *Store) leases() dynamic.ResourceInterface {
	return s.dyn.Resource(leaseResource).Namespace(s.cfg.Namespace)
}

// lease is a decoded Lease object.
type lease struct {
	obj     *coordinationv1.Lease
	holder  string // empty when released
	fence   int64
	ttl     time.Duration
	renewed time.Time
}

func (l *lease) expires() time.Time { return l.renewed.Add(l.ttl) }

func (l *lease) public(name string) store.Lease {
	return store.Lease{Name: name, Holder: l.holder, Fence: l.fence, TTL: l.ttl, Expires: l.expires()}
}

// getLease reads the named lease; a missing one is returned as nil.
func (s *Store) getLease(ctx context.Context, op, name string) (*lease, error) {
	u, err := s.leases().Get(ctx, ObjectName(name), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, s.leaseFail(op, name, err)
	}
	l, err := s.decodeLease(u)
	if err != nil {
		return nil, &store.Error{Op: op, Key: name, Err: err}
	}
	if l == nil || l.obj.Annotations[s.cfg.Group+leaseNameSuffix] != name {
		return nil, &store.Error{Op: op, Key: name,
			Err: fmt.Errorf("Lease %s/%s exists but was not written by the store; delete it or choose another lease name", s.cfg.Namespace, ObjectName(name))}
	}
	return l, nil
}

// decodeLease converts a Lease object; it returns nil for a Lease the store
// did not write.
func (s *Store) decodeLease(u *unstructured.Unstructured) (*lease, error) {
	var obj coordinationv1.Lease
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &obj); err != nil {
		return nil, err
	}
	ttlText, ok := obj.Annotations[s.cfg.Group+leaseTTLSuffix]
	if !ok {
		return nil, nil
	}
	ttl, err := time.ParseDuration(ttlText)
	if err != nil {
		return nil, fmt.Errorf("Lease %s: annotation %s: %w", obj.Name, s.cfg.Group+leaseTTLSuffix, err)
	}
	l := &lease{obj: &obj, ttl: ttl}
	if h := obj.Spec.HolderIdentity; h != nil {
		l.holder = *h
	}
	if t := obj.Spec.LeaseTransitions; t != nil {
		l.fence = int64(*t)
	}
	if t := obj.Spec.RenewTime; t != nil {
		l.renewed = t.Time
	}
	return l, nil
}

// writeLease creates (when l.obj has no resourceVersion) or updates the
// Lease, making holder its holder at fence for ttl from now. It reports
// false when another writer changed the Lease first.
func (s *Store) writeLease(ctx context.Context, op, name string, l *lease, holder string, fence int64, ttl time.Duration) (*lease, bool, error) {
	if fence > math.MaxInt32 {
		return nil, false, &store.Error{Op: op, Key: name, Err: fmt.Errorf("fence %d overflows leaseTransitions", fence)}
	}
	obj := l.obj.DeepCopy()
	obj.Name, obj.Namespace = ObjectName(name), s.cfg.Namespace
	if obj.Labels == nil {
		obj.Labels = map[string]string{}
	}
	if obj.Annotations == nil {
		obj.Annotations = map[string]string{}
	}
	obj.Labels[s.cfg.Group+leaseNameSuffix] = "true"
	obj.Annotations[s.cfg.Group+leaseNameSuffix] = name
	obj.Annotations[s.cfg.Group+leaseTTLSuffix] = ttl.String()
	now := metav1.NowMicro()
	if holder == "" {
		obj.Spec.HolderIdentity = nil
	} else {
		obj.Spec.HolderIdentity = &holder
		if l.holder != holder || l.fence != fence {
			obj.Spec.AcquireTime = &now
		}
	}
	obj.Spec.RenewTime = &now
	obj.Spec.LeaseDurationSeconds = ptr(int32(min(math.Ceil(ttl.Seconds()), math.MaxInt32)))
	obj.Spec.LeaseTransitions = ptr(int32(fence))
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, false, &store.Error{Op: op, Key: name, Err: err}
	}
	u := &unstructured.Unstructured{Object: content}
	u.SetAPIVersion("coordination.k8s.io/v1")
	u.SetKind("Lease")
	var out *unstructured.Unstructured
	if obj.ResourceVersion == "" {
		out, err = s.leases().Create(ctx, u, metav1.CreateOptions{FieldManager: s.cfg.FieldManager})
	} else {
		out, err = s.leases().Update(ctx, u, metav1.UpdateOptions{FieldManager: s.cfg.FieldManager})
	}
	switch {
	case apierrors.IsConflict(err), apierrors.IsAlreadyExists(err), obj.ResourceVersion != "" && apierrors.IsNotFound(err):
		return nil, false, nil
	case err != nil:
		return nil, false, s.leaseFail(op, name, err)
	}
	nl, err := s.decodeLease(out)
	if err == nil && nl == nil {
		err = errors.New("the API server returned a Lease without the store's annotations")
	}
	if err != nil {
		return nil, false, &store.Error{Op: op, Key: name, Err: err}
	}
	return nl, true, nil
}

func (s *Store) leaseFail(op, name string, err error) error {
	return &store.Error{Op: op, Key: name, Err: s.cause("", err)}
}

// AcquireLease takes or renews the named Lease. Expiry is judged by this
// process's clock against the Lease's renewTime, as client-go's leader
// election does: the clocks of the processes sharing a lease must agree to
// well within its time to live.
func (s *Store) AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (store.Lease, error) {
	const op = "acquire lease"
	if err := backend.CheckLease(ctx, op, name, holder, ttl); err != nil {
		return store.Lease{}, err
	}
	for {
		l, err := s.getLease(ctx, op, name)
		if err != nil {
			return store.Lease{}, err
		}
		var fence int64
		switch {
		case l == nil:
			l, fence = &lease{obj: &coordinationv1.Lease{}}, 1
		case l.holder == holder:
			fence = l.fence // a renewal: nobody held the lease in between
		case l.holder != "" && time.Now().Before(l.expires()):
			return store.Lease{}, backend.LeaseHeld(op, name, l.holder, l.expires())
		default:
			fence = l.fence + 1
		}
		nl, ok, err := s.writeLease(ctx, op, name, l, holder, fence, ttl)
		if err != nil {
			return store.Lease{}, err
		}
		if ok {
			return nl.public(name), nil
		}
	}
}

// RenewLease extends a lease its holder still has at the same fence.
func (s *Store) RenewLease(ctx context.Context, held store.Lease) (store.Lease, error) {
	const op = "renew lease"
	if err := backend.CheckLease(ctx, op, held.Name, held.Holder, held.TTL); err != nil {
		return store.Lease{}, err
	}
	for {
		l, err := s.getLease(ctx, op, held.Name)
		if err != nil {
			return store.Lease{}, err
		}
		if l == nil || l.holder != held.Holder || l.fence != held.Fence {
			return store.Lease{}, backend.LeaseLost(op, held)
		}
		nl, ok, err := s.writeLease(ctx, op, held.Name, l, held.Holder, held.Fence, held.TTL)
		if err != nil {
			return store.Lease{}, err
		}
		if ok {
			return nl.public(held.Name), nil
		}
	}
}

// ReleaseLease clears the Lease's holder, keeping its fence so the next
// holder gets a greater one.
func (s *Store) ReleaseLease(ctx context.Context, held store.Lease) error {
	const op = "release lease"
	if err := ctx.Err(); err != nil {
		return err
	}
	for {
		l, err := s.getLease(ctx, op, held.Name)
		if err != nil {
			return err
		}
		if l == nil || l.holder != held.Holder || l.fence != held.Fence {
			return nil
		}
		_, ok, err := s.writeLease(ctx, op, held.Name, l, "", l.fence, l.ttl)
		if err != nil || ok {
			return err
		}
	}
}

// ListLeases lists the store's held, unexpired Leases whose names start
// with prefix.
func (s *Store) ListLeases(ctx context.Context, prefix string) ([]store.Lease, error) {
	const op = "list leases"
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ul, err := s.leases().List(ctx, metav1.ListOptions{LabelSelector: s.cfg.Group + leaseNameSuffix + "=true"})
	if err != nil {
		return nil, s.leaseFail(op, prefix, err)
	}
	now := time.Now()
	var out []store.Lease
	for i := range ul.Items {
		l, err := s.decodeLease(&ul.Items[i])
		if err != nil {
			return nil, &store.Error{Op: op, Key: ul.Items[i].GetName(), Err: err}
		}
		if l == nil {
			continue
		}
		name := l.obj.Annotations[s.cfg.Group+leaseNameSuffix]
		if l.holder == "" || !now.Before(l.expires()) || !strings.HasPrefix(name, prefix) {
			continue
		}
		out = append(out, l.public(name))
	}
	slices.SortFunc(out, func(a, b store.Lease) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
