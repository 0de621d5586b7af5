package configmap

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"

	"github.com/tendhq/tend/backends/kube"
	"github.com/tendhq/tend/examples/raftcluster/operator"
)

// DataKey is the ConfigMap data key that holds the initial cluster.
const DataKey = "initial-cluster"

// KeyAnnotation holds the key of the cluster a ConfigMap belongs to.
const KeyAnnotation = "raftcluster.tend.dev/cluster"

// DefaultFieldManager is the default of [Config.FieldManager].
const DefaultFieldManager = "raftcluster"

// Config configures [New].
type Config struct {
	// REST says how to reach the API server. Required.
	REST *rest.Config
	// Namespace holds the ConfigMaps. It must be the namespace of the
	// Cluster custom resources (kube.Config.Namespace), since an owner
	// reference names an object of its dependent's namespace. Default
	// [kube.DefaultNamespace].
	Namespace string
	// Group is the API group of the Cluster custom resource
	// (kube.Config.Group), named by the owner references. Default
	// [kube.DefaultGroup].
	Group string
	// FieldManager names the writes in the ConfigMaps' managedFields.
	// Default [DefaultFieldManager].
	FieldManager string
}

// MemberConfig is the [operator.MemberConfig] of clusters on Kubernetes: a
// ConfigMap per cluster. Create it with [New]. It is safe for concurrent
// use.
type MemberConfig struct {
	cfg Config
	cms corev1client.ConfigMapInterface
}

var _ operator.MemberConfig = (*MemberConfig)(nil)

// New returns the member configurations of the clusters in cfg.Namespace.
// It checks the configuration and makes no request.
func New(cfg Config) (*MemberConfig, error) {
	if cfg.REST == nil {
		return nil, errors.New("configmap: Config.REST is required")
	}
	if cfg.Namespace == "" {
		cfg.Namespace = kube.DefaultNamespace
	}
	if cfg.Group == "" {
		cfg.Group = kube.DefaultGroup
	}
	if cfg.FieldManager == "" {
		cfg.FieldManager = DefaultFieldManager
	}
	if errs := validation.IsDNS1123Label(cfg.Namespace); len(errs) > 0 {
		return nil, fmt.Errorf("configmap: namespace %q: %v", cfg.Namespace, errs)
	}
	cs, err := kubernetes.NewForConfig(cfg.REST)
	if err != nil {
		return nil, fmt.Errorf("configmap: %w", err)
	}
	return &MemberConfig{cfg: cfg, cms: cs.CoreV1().ConfigMaps(cfg.Namespace)}, nil
}

// Name returns the name of the ConfigMap of the cluster with key: the name
// of the cluster's custom resource, [kube.ObjectName] of the key.
func Name(clusterKey string) string { return kube.ObjectName(clusterKey) }

// Get returns the ConfigMap of the cluster with key as the API server has
// it, whoever it belongs to.
func (m *MemberConfig) Get(ctx context.Context, clusterKey string) (*corev1.ConfigMap, error) {
	cm, err := m.cms.Get(ctx, Name(clusterKey), metav1.GetOptions{})
	if err != nil {
		return nil, m.fail("get", clusterKey, err)
	}
	return cm, nil
}

// Create creates the ConfigMap of c holding initialCluster. One that exists
// and is c's is success and is left as it is; one of an earlier cluster of
// the same key is taken over. See [operator.MemberConfig].
func (m *MemberConfig) Create(ctx context.Context, c operator.ClusterRef, initialCluster string) error {
	_, err := m.cms.Create(ctx, m.configMap(c, initialCluster), metav1.CreateOptions{FieldManager: m.cfg.FieldManager})
	if !apierrors.IsAlreadyExists(err) {
		return m.fail("create", c.Key, err)
	}
	cm, err := m.cms.Get(ctx, Name(c.Key), metav1.GetOptions{})
	if err != nil {
		return m.fail("get", c.Key, err)
	}
	if owned(cm, c.UID) {
		return nil
	}
	return m.write(ctx, cm, c, initialCluster)
}

// Update sets the ConfigMap of c to initialCluster, creating it if it is
// missing. A ConfigMap that holds it already is not written. See
// [operator.MemberConfig].
func (m *MemberConfig) Update(ctx context.Context, c operator.ClusterRef, initialCluster string) error {
	cm, err := m.cms.Get(ctx, Name(c.Key), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = m.cms.Create(ctx, m.configMap(c, initialCluster), metav1.CreateOptions{FieldManager: m.cfg.FieldManager})
		return m.fail("create", c.Key, err)
	}
	if err != nil {
		return m.fail("get", c.Key, err)
	}
	if owned(cm, c.UID) && cm.Data[DataKey] == initialCluster {
		return nil
	}
	return m.write(ctx, cm, c, initialCluster)
}

// write makes cm, as read, c's ConfigMap holding initialCluster, with cm's
// resourceVersion as the precondition.
func (m *MemberConfig) write(ctx context.Context, cm *corev1.ConfigMap, c operator.ClusterRef, initialCluster string) error {
	if cm.DeletionTimestamp != nil {
		return fmt.Errorf("configmap: ConfigMap %s/%s of cluster %s is being deleted; it is written again once it is gone",
			m.cfg.Namespace, cm.Name, c.Key)
	}
	want := m.configMap(c, initialCluster)
	cm = cm.DeepCopy()
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[KeyAnnotation] = c.Key
	cm.OwnerReferences = want.OwnerReferences
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data[DataKey] = initialCluster
	_, err := m.cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: m.cfg.FieldManager})
	return m.fail("update", c.Key, err)
}

// InitialCluster returns the initial cluster the ConfigMap of c holds. A
// ConfigMap that is missing, or is another cluster's, fails with an error
// matching [operator.ErrNoMemberConfig].
func (m *MemberConfig) InitialCluster(ctx context.Context, c operator.ClusterRef) (string, error) {
	cm, err := m.cms.Get(ctx, Name(c.Key), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", fmt.Errorf("%w: no ConfigMap %s/%s for cluster %s", operator.ErrNoMemberConfig, m.cfg.Namespace, Name(c.Key), c.Key)
	}
	if err != nil {
		return "", m.fail("get", c.Key, err)
	}
	if !owned(cm, c.UID) {
		return "", fmt.Errorf("%w: ConfigMap %s/%s belongs to an earlier cluster %s, not uid %s",
			operator.ErrNoMemberConfig, m.cfg.Namespace, cm.Name, c.Key, c.UID)
	}
	return cm.Data[DataKey], nil
}

// configMap returns the ConfigMap of c holding initialCluster.
func (m *MemberConfig) configMap(c operator.ClusterRef, initialCluster string) *corev1.ConfigMap {
	yes := true
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:        Name(c.Key),
			Namespace:   m.cfg.Namespace,
			Annotations: map[string]string{KeyAnnotation: c.Key},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion:         m.cfg.Group + "/" + kube.Version,
				Kind:               operator.KindCluster,
				Name:               kube.ObjectName(c.Key),
				UID:                types.UID(c.UID),
				Controller:         &yes,
				BlockOwnerDeletion: &yes,
			}},
		},
		Data: map[string]string{DataKey: initialCluster},
	}
}

// owned reports whether cm belongs to the cluster with uid.
func owned(cm *corev1.ConfigMap, uid string) bool {
	return slices.ContainsFunc(cm.OwnerReferences, func(r metav1.OwnerReference) bool {
		return r.Kind == operator.KindCluster && string(r.UID) == uid
	})
}

// fail names the request and the ConfigMap in err; nil stays nil.
func (m *MemberConfig) fail(op, clusterKey string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("configmap: %s ConfigMap %s/%s of cluster %s: %w", op, m.cfg.Namespace, Name(clusterKey), clusterKey, err)
}
