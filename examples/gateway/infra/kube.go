package infra

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/tendhq/tend/backends/kube"
	"github.com/tendhq/tend/store"
)

// DefaultFieldManager is the field manager of [Kube]'s writes unless
// [KubeConfig.FieldManager] names another.
const DefaultFieldManager = "gateway-platform"

// dataAnnotation keeps a resource's Data as applied, so that Get returns
// it exactly; the objects' real fields are derived from it.
const dataAnnotation = "gateway.tend.dev/data"

// KubeConfig configures a [Kube].
type KubeConfig struct {
	// REST reaches the cluster, for example from
	// clientcmd.BuildConfigFromFlags. Required. The platform polls the
	// resources it waits for, so give it a QPS and Burst above client-go's
	// defaults (5 and 10).
	REST *rest.Config
	// FieldManager names the platform's writes in the objects'
	// managedFields and in the API server's audit log. Default
	// [DefaultFieldManager].
	FieldManager string
}

// Kube is [Cluster] on a Kubernetes cluster, through
// github.com/tendhq/tend/backends/kube. Each [Resource] is one object:
//
//	Namespace           v1 Namespace
//	ConfigMap           v1 ConfigMap, data = Data
//	Deployment          apps/v1 Deployment of one replica: a container "runtime"
//	                    of image Data["image"], its environment from the
//	                    ConfigMap Data["configMap"]; pods labelled app=<name>
//	Service             v1 Service selecting app=<name>, port Data["port"]
//	ApisixRoute         apisix.apache.org/v2: host Data["host"] to Service Data["backend"]
//	ApisixPluginConfig  apisix.apache.org/v2: the plugins in Data["plugins"] (comma-separated)
//	ApisixTls           apisix.apache.org/v2: the Secret of the resource's name
//	Certificate         cert-manager.io/v1: Data["host"], into the Secret of its name
//
// Labels are the object's labels; Data is also kept as applied in the
// annotation gateway.tend.dev/data, so [Kube.Get] returns it exactly.
// Applies are server-side applies under [KubeConfig.FieldManager], forced:
// the platform is the one writer of what it applies and takes a field back
// from anyone who changed it.
//
// # Readiness
//
// Ready means serving, as the cluster itself reports it, and never
// Terminating: a Namespace is Active; a ConfigMap exists; a Deployment has an
// available replica of its current generation (the deployment controller,
// the scheduler and a kubelet make it so); a Service has its cluster IP. The
// custom resources are judged by their controllers, APISIX's ingress
// controller (condition ResourcesAvailable) and cert-manager (condition
// Ready), when those have written a condition; a cluster without those
// controllers never writes one, and there a custom resource is ready once
// the API server has accepted it. That is all such a cluster can tell, and
// the platform's ordering rules do not depend on more.
//
// # Deletion
//
// A Deployment is deleted with foreground propagation: it stays Terminating
// until the garbage collector has deleted its ReplicaSets and their pods, so
// the platform only drops the database after the last pod is gone. A
// Namespace stays Terminating until the namespace controller has emptied
// it. Everything else goes at once, in the background.
//
// The custom resources' definitions must be installed: [Kube.Install]
// installs minimal ones ([CustomResourceDefinitions]) where the real
// controllers' are absent.
type Kube struct {
	c *kube.Client
}

var _ Cluster = (*Kube)(nil)

// NewKube returns a Kube on the cluster cfg.REST reaches. It makes no
// request.
func NewKube(cfg KubeConfig) (*Kube, error) {
	if cfg.REST == nil {
		return nil, fmt.Errorf("%w: KubeConfig.REST is required", ErrInvalid)
	}
	c, err := kube.NewClient(kube.ClientConfig{REST: cfg.REST, FieldManager: cmp.Or(cfg.FieldManager, DefaultFieldManager), Force: true})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return &Kube{c: c}, nil
}

// kubeKind is how one [Kind] is stored.
type kubeKind struct {
	apiVersion string
	resource   string // as the API server names it
	// readyCondition is the condition the kind's controller reports
	// readiness with; set for the custom resources only.
	readyCondition string
	// propagation is how its deletion treats its dependents.
	propagation metav1.DeletionPropagation
}

var kubeKinds = map[Kind]kubeKind{
	Namespace:          {apiVersion: "v1", resource: "namespaces"},
	ConfigMap:          {apiVersion: "v1", resource: "configmaps"},
	Deployment:         {apiVersion: "apps/v1", resource: "deployments", propagation: metav1.DeletePropagationForeground},
	Service:            {apiVersion: "v1", resource: "services"},
	ApisixRoute:        {apiVersion: "apisix.apache.org/v2", resource: "apisixroutes", readyCondition: "ResourcesAvailable"},
	ApisixPluginConfig: {apiVersion: "apisix.apache.org/v2", resource: "apisixpluginconfigs", readyCondition: "ResourcesAvailable"},
	ApisixTls:          {apiVersion: "apisix.apache.org/v2", resource: "apisixtlses", readyCondition: "ResourcesAvailable"},
	Certificate:        {apiVersion: "cert-manager.io/v1", resource: "certificates", readyCondition: "Ready"},
}

// kinds returns the kinds in a fixed order.
func kinds() []Kind {
	out := make([]Kind, 0, len(kubeKinds))
	for k := range kubeKinds {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// CustomResourceDefinitions returns minimal definitions of the custom
// resources the platform uses (ApisixRoute, ApisixPluginConfig, ApisixTls of
// apisix.apache.org/v2, Certificate of cert-manager.io/v1), as
// [Kube.Install] applies them: namespaced, any spec and status, the status
// subresource. A cluster that runs APISIX's ingress controller and
// cert-manager has their full definitions instead. Marshal them to YAML to
// apply them as a manifest.
func CustomResourceDefinitions() []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, k := range kinds() {
		kk := kubeKinds[k]
		if kk.readyCondition == "" {
			continue // built in
		}
		gv, _ := schema.ParseGroupVersion(kk.apiVersion)
		out = append(out, kube.CustomResourceDefinition(gv.WithKind(string(k))))
	}
	return out
}

// Install creates those of [CustomResourceDefinitions] the cluster lacks and
// waits until the API server serves every kind at the version the platform
// uses. Definitions that exist, such as the full ones of APISIX's ingress
// controller and cert-manager, are left as they are. It needs the right to
// read and create customresourcedefinitions.
func (k *Kube) Install(ctx context.Context) error {
	if err := k.c.InstallDefinitions(ctx, CustomResourceDefinitions(), kube.InstallOptions{KeepExisting: true}); err != nil {
		return fmt.Errorf("infra: install: %w", err)
	}
	return nil
}

// object returns the object r describes, or an error matching [ErrInvalid].
func object(r Resource) (*unstructured.Unstructured, error) {
	if err := r.validate(); err != nil {
		return nil, err
	}
	kk, ok := kubeKinds[r.Kind]
	if !ok {
		return nil, fmt.Errorf("%w: %v: unknown kind", ErrInvalid, r.Ref)
	}
	data, err := json.Marshal(r.Data)
	if err != nil {
		return nil, err
	}
	md := map[string]any{"name": r.Name, "annotations": map[string]any{dataAnnotation: string(data)}}
	if r.Namespace != "" {
		md["namespace"] = r.Namespace
	}
	if len(r.Labels) > 0 {
		md["labels"] = stringMap(r.Labels)
	}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": kk.apiVersion, "kind": string(r.Kind), "metadata": md}}
	d := r.Data
	switch r.Kind {
	case ConfigMap:
		if len(d) > 0 {
			u.Object["data"] = stringMap(d)
		}
	case Deployment:
		if d["image"] == "" {
			return nil, fmt.Errorf("%w: %v: a Deployment needs Data[\"image\"]", ErrInvalid, r.Ref)
		}
		container := map[string]any{"name": "runtime", "image": d["image"]}
		if d["configMap"] != "" {
			container["envFrom"] = []any{map[string]any{"configMapRef": map[string]any{"name": d["configMap"]}}}
		}
		pod := map[string]string{"app": r.Name}
		for k, v := range r.Labels {
			pod[k] = v
		}
		u.Object["spec"] = map[string]any{
			"replicas": int64(1),
			"selector": map[string]any{"matchLabels": map[string]any{"app": r.Name}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": stringMap(pod)},
				"spec":     map[string]any{"containers": []any{container}},
			},
		}
	case Service:
		port, err := strconv.ParseInt(cmp.Or(d["port"], "80"), 10, 32)
		if err != nil || port < 1 || port > 65535 {
			return nil, fmt.Errorf("%w: %v: port %q", ErrInvalid, r.Ref, d["port"])
		}
		u.Object["spec"] = map[string]any{
			"selector": map[string]any{"app": r.Name},
			"ports":    []any{map[string]any{"name": "http", "port": port, "targetPort": port}},
		}
	case ApisixRoute:
		u.Object["spec"] = map[string]any{"http": []any{map[string]any{
			"name":     "default",
			"match":    map[string]any{"hosts": []any{d["host"]}, "paths": []any{"/*"}},
			"backends": []any{map[string]any{"serviceName": d["backend"], "servicePort": int64(80)}},
		}}}
	case ApisixPluginConfig:
		var plugins []any
		for p := range strings.SplitSeq(d["plugins"], ",") {
			if p = strings.TrimSpace(p); p != "" {
				plugins = append(plugins, map[string]any{"name": p, "enable": true})
			}
		}
		u.Object["spec"] = map[string]any{"plugins": plugins}
	case ApisixTls:
		u.Object["spec"] = map[string]any{"secret": map[string]any{"name": r.Name, "namespace": r.Namespace}}
	case Certificate:
		u.Object["spec"] = map[string]any{
			"secretName": r.Name,
			"dnsNames":   []any{d["host"]},
			"issuerRef":  map[string]any{"kind": "ClusterIssuer", "name": "letsencrypt"},
		}
	}
	return u, nil
}

func stringMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// kube returns the reference of r in package kube.
func (r Ref) kube() kube.Ref {
	return kube.Ref{APIVersion: kubeKinds[r.Kind].apiVersion, Kind: string(r.Kind), Namespace: r.Namespace, Name: r.Name}
}

// translate maps the errors of package kube onto this package's sentinels,
// keeping the cause.
func translate(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	case errors.Is(err, kube.ErrNamespaceTerminating):
		return fmt.Errorf("%w: %w", ErrTerminating, err)
	case errors.Is(err, store.ErrInvalid):
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return fmt.Errorf("infra: %w", err)
}

// Apply implements [Cluster]. A resource that is Terminating is not
// written: Apply fails with [ErrTerminating].
func (k *Kube) Apply(ctx context.Context, r Resource) error {
	u, err := object(r)
	if err != nil {
		return err
	}
	cur, err := k.c.Get(ctx, r.Ref.kube())
	switch {
	case err == nil && kube.Terminating(cur):
		return fmt.Errorf("%w: apply %v", ErrTerminating, r.Ref)
	case err != nil && !errors.Is(err, store.ErrNotFound):
		return translate(err)
	}
	_, err = k.c.Apply(ctx, u)
	return translate(err)
}

// Delete implements [Cluster].
func (k *Kube) Delete(ctx context.Context, ref Ref) error {
	if err := ref.validate(); err != nil {
		return err
	}
	kk, ok := kubeKinds[ref.Kind]
	if !ok {
		return fmt.Errorf("%w: %v: unknown kind", ErrInvalid, ref)
	}
	_, err := k.c.Delete(ctx, ref.kube(), kube.DeleteOptions{Propagation: kk.propagation})
	return translate(err)
}

// Get implements [Cluster].
func (k *Kube) Get(ctx context.Context, ref Ref) (Observed, error) {
	if err := ref.validate(); err != nil {
		return Observed{}, err
	}
	if _, ok := kubeKinds[ref.Kind]; !ok {
		return Observed{}, fmt.Errorf("%w: %v: unknown kind", ErrInvalid, ref)
	}
	u, err := k.c.Get(ctx, ref.kube())
	if err != nil {
		return Observed{}, translate(err)
	}
	return observe(ref, u), nil
}

// observe returns what u says of the resource ref.
func observe(ref Ref, u *unstructured.Unstructured) Observed {
	o := Observed{Resource: Resource{Ref: ref, Labels: u.GetLabels()}, Terminating: kube.Terminating(u)}
	if s, ok := u.GetAnnotations()[dataAnnotation]; ok {
		_ = json.Unmarshal([]byte(s), &o.Data)
	}
	if o.Terminating {
		return o
	}
	switch ref.Kind {
	case Namespace:
		phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
		o.Ready = phase == "Active"
	case ConfigMap:
		o.Ready = true
	case Deployment:
		o.Ready, _ = kube.DeploymentAvailable(u, 1)
	case Service:
		ip, _, _ := unstructured.NestedString(u.Object, "spec", "clusterIP")
		o.Ready = ip != ""
	default:
		if conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions"); len(conds) == 0 {
			o.Ready = true // accepted, and no controller has said otherwise
		} else {
			o.Ready, _ = kube.ConditionTrue(u, kubeKinds[ref.Kind].readyCondition)
		}
	}
	return o
}

// Resources returns every resource of the platform's kinds, in every
// namespace, whose labels match selector (a label selector such as
// "gateway" or "gateway=gw-01"), ordered by ref.
func (k *Kube) Resources(ctx context.Context, selector string) ([]Observed, error) {
	var out []Observed
	for _, kind := range kinds() {
		objs, err := k.c.List(ctx, kubeKinds[kind].apiVersion, string(kind), kube.ListOptions{Selector: selector})
		if err != nil {
			return nil, translate(err)
		}
		for _, u := range objs {
			out = append(out, observe(Ref{Kind: kind, Namespace: u.GetNamespace(), Name: u.GetName()}, u))
		}
	}
	slices.SortFunc(out, func(a, b Observed) int { return cmp.Compare(a.Ref.String(), b.Ref.String()) })
	return out, nil
}
