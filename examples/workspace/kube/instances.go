package kube

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/rest"

	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/examples/workspace/archive"
	"github.com/tendhq/tend/examples/workspace/dataplane"
	"github.com/tendhq/tend/examples/workspace/local"
)

// HomeDir is where a Pod mounts its home volume.
const HomeDir = "/home/workspace"

// Port is the port a workspace container serves its home on.
const Port = 8080

// ErrExited: a Pod ended (phase Failed or Succeeded) while Start waited for
// it to become Ready.
var ErrExited = errors.New("kube: pod ended before it was ready")

// InstancesConfig configures [NewInstances].
type InstancesConfig struct {
	// REST reaches the API server. Required.
	REST *rest.Config
	// Namespace holds the Pods; it must exist. Required.
	Namespace string
	// FieldManager names the backend's server-side applies. Empty means
	// [DefaultFieldManager].
	FieldManager string
	// StartTimeout bounds how long Start waits for a Pod to become Ready.
	// Zero means [DefaultTimeout].
	StartTimeout time.Duration
}

// Instances is the Kubernetes dataplane.InstanceController: workspace {id}
// runs as Pod ws-{id}, which mounts claim ws-{id}-home. It keeps no state:
// everything it knows it reads from the API server.
type Instances struct {
	conn
}

var _ dataplane.InstanceController = (*Instances)(nil)

// NewInstances returns the instance controller of cfg. It contacts nothing.
func NewInstances(cfg InstancesConfig) (*Instances, error) {
	c, err := newConn("NewInstances", cfg.REST, cfg.Namespace, cfg.FieldManager, cfg.StartTimeout)
	if err != nil {
		return nil, err
	}
	return &Instances{conn: c}, nil
}

func (in *Instances) pod(id string) object {
	return object{resource: "pods", namespace: in.namespace, name: PodName(id)}
}

// Pod returns workspace id's Pod, or nil when it does not exist.
func (in *Instances) Pod(ctx context.Context, id string) (*corev1.Pod, error) {
	p, err := in.cs.CoreV1().Pods(in.namespace).Get(ctx, PodName(id), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, in.fail("get", in.pod(id), err)
	}
	return p, nil
}

// ready reports whether p can take traffic: Running, Ready and not being
// deleted.
func ready(p *corev1.Pod) bool {
	if p == nil || p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// describe summarises what p is waiting for, for errors.
func describe(p *corev1.Pod) string {
	if p == nil {
		return "the pod is gone"
	}
	parts := []string{"phase " + string(p.Status.Phase)}
	if p.Spec.NodeName == "" {
		parts = append(parts, "not scheduled (is kube-scheduler running, with a node that can take it?)")
	}
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue && c.Message != "" {
			parts = append(parts, fmt.Sprintf("%s: %s", c.Type, c.Message))
		}
	}
	if p.Spec.NodeName != "" && p.Status.Phase == corev1.PodPending {
		parts = append(parts, "on node "+p.Spec.NodeName+" (is its kubelet running?)")
	}
	return strings.Join(parts, "; ")
}

// IsRunning implements dataplane.InstanceController: the Pod is Running and
// Ready.
func (in *Instances) IsRunning(ctx context.Context, id string) (bool, error) {
	p, err := in.Pod(ctx, id)
	return ready(p), err
}

// Start implements dataplane.InstanceController. It refuses, with
// dataplane.ErrNoVolume, to create a Pod whose claim is missing, unbound
// or being deleted, and with [ErrVolumeInUse] while another Pod (a storage
// Job's) mounts the claim; it replaces a Pod that is not Ready, and returns once
// the new one is Ready, or removes it again when StartTimeout passes.
func (in *Instances) Start(ctx context.Context, id, image string) error {
	if err := archive.ValidateID(id); err != nil {
		return controller.Terminal(err)
	}
	p, err := in.Pod(ctx, id)
	if ready(p) || err != nil {
		return err
	}
	if p != nil { // not ready: clean up
		if err := in.Delete(ctx, id); err != nil {
			return err
		}
		if err := in.waitGone(ctx, id); err != nil {
			return err
		}
	}
	claim, err := in.cs.CoreV1().PersistentVolumeClaims(in.namespace).Get(ctx, ClaimName(id), metav1.GetOptions{})
	if apierrors.IsNotFound(err) || (err == nil && !bound(claim)) {
		return fmt.Errorf("%w: claim %s/%s is missing, unbound or being deleted; pod %s is not created",
			dataplane.ErrNoVolume, in.namespace, ClaimName(id), PodName(id))
	}
	if err != nil {
		return in.fail("get", object{"persistentvolumeclaims", in.namespace, ClaimName(id)}, err)
	}
	isPod := func(p *corev1.Pod) bool { return p.Name == PodName(id) }
	if err := in.claimFree(ctx, ClaimName(id), "pod "+PodName(id), isPod); err != nil {
		return err
	}
	if _, err := in.cs.CoreV1().Pods(in.namespace).Apply(ctx, podSpec(in.namespace, id, image), in.apply()); err != nil {
		return in.fail("patch", in.pod(id), err)
	}

	var seen *corev1.Pod
	err = in.waitFor(ctx, fmt.Sprintf("pod %s/%s to be Ready", in.namespace, PodName(id)), func(ctx context.Context) (bool, string, error) {
		p, err := in.Pod(ctx, id)
		if err != nil {
			return false, "", err
		}
		seen = p
		if p != nil && (p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded) {
			return false, "", fmt.Errorf("%w: pod %s/%s is %s: %s", ErrExited, in.namespace, PodName(id), p.Status.Phase, p.Status.Message)
		}
		return ready(p), describe(p), nil
	})
	if err != nil && seen != nil {
		// Leave no Pod that is not Ready: the next Start begins afresh.
		_ = in.Delete(context.WithoutCancel(ctx), id)
	}
	return err
}

// podSpec is the Pod of workspace id: the workspace image serving claim
// ws-{id}-home, Ready when it answers its health check.
func podSpec(namespace, id, image string) *corev1ac.PodApplyConfiguration {
	name := PodName(id)
	return corev1ac.Pod(name, namespace).
		WithLabels(map[string]string{LabelWorkspace: id}).
		WithSpec(corev1ac.PodSpec().
			WithTerminationGracePeriodSeconds(0).
			WithAutomountServiceAccountToken(false).
			WithContainers(corev1ac.Container().
				WithName("workspace").
				WithImage(image).
				WithArgs("-name", name, "-home", HomeDir, "-addr", fmt.Sprintf(":%d", Port)).
				WithPorts(corev1ac.ContainerPort().WithName("http").WithContainerPort(Port)).
				WithVolumeMounts(corev1ac.VolumeMount().WithName("home").WithMountPath(HomeDir)).
				WithReadinessProbe(corev1ac.Probe().
					WithHTTPGet(corev1ac.HTTPGetAction().WithPath(local.HealthPath).WithPort(intstr.FromInt32(Port))).
					WithPeriodSeconds(2))).
			WithVolumes(corev1ac.Volume().
				WithName("home").
				WithPersistentVolumeClaim(corev1ac.PersistentVolumeClaimVolumeSource().WithClaimName(ClaimName(id)))))
}

// Delete implements dataplane.InstanceController: the Pod is deleted with a
// grace period of zero, so its container is killed at once. The volume is
// kept.
func (in *Instances) Delete(ctx context.Context, id string) error {
	err := in.cs.CoreV1().Pods(in.namespace).Delete(ctx, PodName(id), metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	if err != nil && !apierrors.IsNotFound(err) {
		return in.fail("delete", in.pod(id), err)
	}
	return nil
}

// waitGone waits until workspace id's Pod no longer exists.
func (in *Instances) waitGone(ctx context.Context, id string) error {
	return in.waitFor(ctx, fmt.Sprintf("pod %s/%s to be gone", in.namespace, PodName(id)), func(ctx context.Context) (bool, string, error) {
		p, err := in.Pod(ctx, id)
		if p != nil {
			return false, fmt.Sprintf("still there with finalizers %v", p.Finalizers), err
		}
		return err == nil, "", err
	})
}
