package kube

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/rest"

	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/examples/workspace/archive"
	"github.com/tendhq/tend/examples/workspace/dataplane"
	"github.com/tendhq/tend/examples/workspace/objstore"
)

// DefaultSize is the capacity of a volume when StorageConfig.Size is zero.
const DefaultSize = "1Gi"

// StorageConfig configures [NewStorage].
type StorageConfig struct {
	// REST reaches the API server. Required.
	REST *rest.Config
	// Namespace holds the claims; it must exist. Required.
	Namespace string
	// BaseDir is the absolute directory on this host under which volumes
	// are created ({BaseDir}/{namespace}/ws-{id}-home): the host path of
	// their PersistentVolumes. Required. The volumes' node must be this
	// host (see the package documentation).
	BaseDir string
	// Objects is the object storage archives go to. Required.
	Objects objstore.Addressable
	// JobImage is the storage jobs' image (see [JobsConfig.Image]).
	// Required.
	JobImage string
	// CredentialsSecret names the Secret the storage jobs take the object
	// storage's credentials from (see [JobsConfig.CredentialsSecret]).
	CredentialsSecret string
	// Size is each volume's capacity. Zero means [DefaultSize].
	Size resource.Quantity
	// FieldManager names the backend's server-side applies; the restore
	// marker is applied by FieldManager + "-restore". Empty means
	// [DefaultFieldManager].
	FieldManager string
	// Timeout bounds how long Provision waits for a claim to be bound and
	// DeleteVolume for the claim and the volume to be gone. Zero means
	// [DefaultTimeout].
	Timeout time.Duration
}

// Storage is the Kubernetes dataplane.StorageProvider: volume ws-{id}-home
// is a PersistentVolumeClaim bound to a PersistentVolume of a host path that
// Storage provisions. Archive and restore run as storage jobs, Kubernetes
// Jobs that mount the claim ([Jobs]); the restore marker is the claim's
// [AnnotationRestoredFrom] annotation.
type Storage struct {
	*dataplane.StorageJobs // Archive, Restore, ArchiveReady
	conn
	base string
	size resource.Quantity
}

var _ dataplane.StorageProvider = (*Storage)(nil)

// NewStorage returns the storage of cfg. It contacts nothing.
func NewStorage(cfg StorageConfig) (*Storage, error) {
	if cfg.BaseDir == "" || !filepath.IsAbs(cfg.BaseDir) || cfg.Objects == nil || cfg.JobImage == "" {
		return nil, errors.New("kube: NewStorage needs REST, Namespace, an absolute BaseDir, Objects and JobImage")
	}
	if cfg.Size.Sign() < 0 {
		return nil, errors.New("kube: NewStorage: negative Size")
	}
	c, err := newConn("NewStorage", cfg.REST, cfg.Namespace, cfg.FieldManager, cfg.Timeout)
	if err != nil {
		return nil, err
	}
	jobs, err := NewJobs(JobsConfig{REST: cfg.REST, Namespace: cfg.Namespace, Image: cfg.JobImage,
		CredentialsSecret: cfg.CredentialsSecret, FieldManager: cfg.FieldManager})
	if err != nil {
		return nil, err
	}
	s := &Storage{conn: c, base: filepath.Clean(cfg.BaseDir), size: cfg.Size}
	if s.size.IsZero() {
		s.size = resource.MustParse(DefaultSize)
	}
	s.StorageJobs, err = dataplane.NewStorageJobs(dataplane.StorageJobsConfig{Runner: jobs, Objects: cfg.Objects,
		VolumeExists: s.VolumeExists, Marker: s.RestoreMarker, Mark: s.mark})
	if err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Storage) claimObject(id string) object {
	return object{resource: "persistentvolumeclaims", namespace: s.namespace, name: ClaimName(id)}
}

func (s *Storage) volumeObject(id string) object {
	return object{resource: "persistentvolumes", name: PersistentVolumeName(s.namespace, id)}
}

// hostDir is where workspace id's volume keeps its files on this host.
func (s *Storage) hostDir(id string) string {
	return filepath.Join(s.base, s.namespace, ClaimName(id))
}

// Claim returns workspace id's claim, or nil when it does not exist.
func (s *Storage) Claim(ctx context.Context, id string) (*corev1.PersistentVolumeClaim, error) {
	c, err := s.cs.CoreV1().PersistentVolumeClaims(s.namespace).Get(ctx, ClaimName(id), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, s.fail("get", s.claimObject(id), err)
	}
	return c, nil
}

// volume returns workspace id's PersistentVolume, or nil when it does not
// exist.
func (s *Storage) volume(ctx context.Context, id string) (*corev1.PersistentVolume, error) {
	v, err := s.cs.CoreV1().PersistentVolumes().Get(ctx, PersistentVolumeName(s.namespace, id), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, s.fail("get", s.volumeObject(id), err)
	}
	return v, nil
}

// bound reports whether claim is bound to its volume and not being deleted.
func bound(claim *corev1.PersistentVolumeClaim) bool {
	return claim != nil && claim.DeletionTimestamp == nil && claim.Status.Phase == corev1.ClaimBound
}

// Provision implements dataplane.StorageProvider. A claim that exists is
// kept as it is; otherwise what a half-done DeleteVolume left is removed and
// a new volume made: its directory, the PersistentVolume reserved for the
// claim, then the claim, which the binder then binds at once. When the
// claim cannot be made (no such namespace, RBAC forbids it) the volume is
// removed again. It returns once the claim is bound.
func (s *Storage) Provision(ctx context.Context, id string) error {
	if err := archive.ValidateID(id); err != nil {
		return controller.Terminal(err)
	}
	claim, err := s.Claim(ctx, id)
	if err != nil {
		return err
	}
	if claim == nil || claim.DeletionTimestamp != nil {
		if err := s.DeleteVolume(ctx, id); err != nil {
			return err
		}
		if err := s.makeVolume(ctx, id); err != nil {
			return err
		}
		if _, err := s.cs.CoreV1().PersistentVolumeClaims(s.namespace).Apply(ctx, s.claimSpec(id), s.apply()); err != nil {
			return errors.Join(s.fail("patch", s.claimObject(id), err), s.removeVolume(ctx, id))
		}
	} else if !bound(claim) {
		v, err := s.volume(ctx, id)
		if err != nil {
			return err
		}
		if v == nil {
			if err := s.makeVolume(ctx, id); err != nil {
				return err
			}
		}
	}
	return s.waitFor(ctx, fmt.Sprintf("claim %s/%s to be bound to %s", s.namespace, ClaimName(id), PersistentVolumeName(s.namespace, id)),
		func(ctx context.Context) (bool, string, error) {
			c, err := s.Claim(ctx, id)
			if err != nil || c == nil {
				return false, "the claim is gone", err
			}
			return bound(c), fmt.Sprintf("phase %s (is kube-controller-manager running its persistentvolume-binder-controller?)", c.Status.Phase), nil
		})
}

// makeVolume makes workspace id's directory and PersistentVolume.
func (s *Storage) makeVolume(ctx context.Context, id string) error {
	if err := os.MkdirAll(s.hostDir(id), 0o755); err != nil {
		return fmt.Errorf("kube: provision %s: %w", s.volumeObject(id), err)
	}
	if _, err := s.cs.CoreV1().PersistentVolumes().Apply(ctx, s.volumeSpec(id), s.apply()); err != nil {
		return s.fail("patch", s.volumeObject(id), err)
	}
	return nil
}

// volumeSpec is workspace id's PersistentVolume: its host directory,
// reserved for its claim, kept when the claim goes.
func (s *Storage) volumeSpec(id string) *corev1ac.PersistentVolumeApplyConfiguration {
	return corev1ac.PersistentVolume(PersistentVolumeName(s.namespace, id)).
		WithLabels(map[string]string{LabelWorkspace: id}).
		WithSpec(corev1ac.PersistentVolumeSpec().
			WithCapacity(corev1.ResourceList{corev1.ResourceStorage: s.size}).
			WithAccessModes(corev1.ReadWriteOnce).
			WithPersistentVolumeReclaimPolicy(corev1.PersistentVolumeReclaimRetain).
			WithStorageClassName("").
			WithClaimRef(corev1ac.ObjectReference().WithNamespace(s.namespace).WithName(ClaimName(id))).
			WithHostPath(corev1ac.HostPathVolumeSource().WithPath(s.hostDir(id)).WithType(corev1.HostPathDirectory)))
}

// claimSpec is workspace id's claim, naming its volume.
func (s *Storage) claimSpec(id string) *corev1ac.PersistentVolumeClaimApplyConfiguration {
	return corev1ac.PersistentVolumeClaim(ClaimName(id), s.namespace).
		WithLabels(map[string]string{LabelWorkspace: id}).
		WithSpec(corev1ac.PersistentVolumeClaimSpec().
			WithAccessModes(corev1.ReadWriteOnce).
			WithResources(corev1ac.VolumeResourceRequirements().WithRequests(corev1.ResourceList{corev1.ResourceStorage: s.size})).
			WithStorageClassName("").
			WithVolumeName(PersistentVolumeName(s.namespace, id)))
}

// VolumeExists implements dataplane.StorageProvider: the claim exists, is
// bound and is not being deleted.
func (s *Storage) VolumeExists(ctx context.Context, id string) (bool, error) {
	c, err := s.Claim(ctx, id)
	return bound(c), err
}

// Dir returns the directory on this host holding workspace id's volume: the
// host path of the volume its claim is bound to, or "" when the claim does
// not exist or is not bound. A volume whose host path is not under BaseDir
// is refused, terminally: it is not one this storage provisioned.
func (s *Storage) Dir(ctx context.Context, id string) (string, error) {
	c, err := s.Claim(ctx, id)
	if !bound(c) || err != nil {
		return "", err
	}
	v, err := s.cs.CoreV1().PersistentVolumes().Get(ctx, c.Spec.VolumeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", s.fail("get", object{resource: "persistentvolumes", name: c.Spec.VolumeName}, err)
	}
	if v.Spec.HostPath == nil || !strings.HasPrefix(v.Spec.HostPath.Path, s.base+string(filepath.Separator)) {
		return "", controller.Terminal(fmt.Errorf("kube: %s, bound to %s, is not a host path under %s: only volumes this storage provisioned are archived or restored",
			s.volumeObject(id), s.claimObject(id), s.base))
	}
	return v.Spec.HostPath.Path, nil
}

// DeleteVolume implements dataplane.StorageProvider: the claim, then the
// volume, each awaited until gone, then the directory. A claim a Pod still
// uses stays until the Pod is gone (its protection finalizer), and the wait
// times out naming it.
func (s *Storage) DeleteVolume(ctx context.Context, id string) error {
	claims := s.cs.CoreV1().PersistentVolumeClaims(s.namespace)
	if err := claims.Delete(ctx, ClaimName(id), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return s.fail("delete", s.claimObject(id), err)
	}
	err := s.waitFor(ctx, fmt.Sprintf("claim %s/%s to be gone", s.namespace, ClaimName(id)), func(ctx context.Context) (bool, string, error) {
		c, err := s.Claim(ctx, id)
		if c != nil {
			return false, fmt.Sprintf("still there with finalizers %v (a pod still uses it, or kube-controller-manager does not run its persistentvolumeclaim-protection-controller)", c.Finalizers), err
		}
		return err == nil, "", err
	})
	if err != nil {
		return err
	}
	return s.removeVolume(ctx, id)
}

// removeVolume deletes workspace id's PersistentVolume, waits until it is
// gone, and removes its directory.
func (s *Storage) removeVolume(ctx context.Context, id string) error {
	if err := s.cs.CoreV1().PersistentVolumes().Delete(ctx, PersistentVolumeName(s.namespace, id), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return s.fail("delete", s.volumeObject(id), err)
	}
	err := s.waitFor(ctx, fmt.Sprintf("volume %s to be gone", PersistentVolumeName(s.namespace, id)), func(ctx context.Context) (bool, string, error) {
		v, err := s.volume(ctx, id)
		if v != nil {
			return false, fmt.Sprintf("still there, phase %s, with finalizers %v (is kube-controller-manager running its persistentvolume-binder-controller and persistentvolume-protection-controller?)", v.Status.Phase, v.Finalizers), err
		}
		return err == nil, "", err
	})
	if err != nil {
		return err
	}
	if err := os.RemoveAll(s.hostDir(id)); err != nil {
		return fmt.Errorf("kube: delete the directory of %s: %w", s.volumeObject(id), err)
	}
	return nil
}

// RestoreMarker implements dataplane.StorageProvider: the claim's
// [AnnotationRestoredFrom] annotation.
func (s *Storage) RestoreMarker(ctx context.Context, id string) (string, error) {
	c, err := s.Claim(ctx, id)
	if c == nil || err != nil {
		return "", err
	}
	return c.Annotations[AnnotationRestoredFrom], nil
}

// mark keeps the restore marker of workspace id, for
// dataplane.StorageJobs. The marker's own field manager applies the
// annotation alone, or nothing to remove it; the claim must exist, so that
// the apply never creates one.
func (s *Storage) mark(ctx context.Context, id, key string) error {
	c, err := s.Claim(ctx, id)
	if err != nil {
		return err
	}
	if c == nil {
		if key == "" {
			return nil
		}
		return fmt.Errorf("%w: claim %s/%s, to mark restored from %s", dataplane.ErrNoVolume, s.namespace, ClaimName(id), key)
	}
	ac := corev1ac.PersistentVolumeClaim(ClaimName(id), s.namespace).WithUID(c.UID)
	if key != "" {
		ac.WithAnnotations(map[string]string{AnnotationRestoredFrom: key})
	}
	opts := s.apply()
	opts.FieldManager += "-restore"
	if _, err := s.cs.CoreV1().PersistentVolumeClaims(s.namespace).Apply(ctx, ac, opts); err != nil {
		return s.fail("patch", s.claimObject(id), err)
	}
	return nil
}
