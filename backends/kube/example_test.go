package kube_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/tendhq/tend/backends/kube"
	"github.com/tendhq/tend/finalizer"
	"github.com/tendhq/tend/statemachine"
)

// Each document is an object whose name is derived from its key; the key
// itself is kept in an annotation.
func ExampleObjectName() {
	fmt.Println(kube.ObjectName("team-a/gw-1"))
	fmt.Println(kube.Plural("ApiGateway"))
	// Output:
	// team-a-gw-1-03d9e52907e12fb333d0f532b4c0127f
	// apigateways
}

// The definition Install creates for a kind, for applying as a manifest
// instead.
func ExampleCustomResourceDefinition() {
	crd := kube.CustomResourceDefinition(schema.GroupVersionKind{Group: kube.DefaultGroup, Version: kube.Version, Kind: "ApiGateway"})
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	fmt.Println(crd.GetName(), versions[0].(map[string]any)["name"])
	// Output:
	// apigateways.store.tend.dev v1
}

// A program that creates cert-manager Certificates installs a minimal
// definition of them where cert-manager is absent, and leaves cert-manager's
// own definition alone where it is installed. It needs a cluster, so it is
// only compiled.
func ExampleClient_InstallDefinitions() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		log.Fatal(err)
	}
	c, err := kube.NewClient(kube.ClientConfig{REST: cfg, FieldManager: "shop-operator"})
	if err != nil {
		log.Fatal(err)
	}
	cert := kube.CustomResourceDefinition(schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"})
	err = c.InstallDefinitions(ctx, []*unstructured.Unstructured{cert}, kube.InstallOptions{KeepExisting: true})
	if errors.Is(err, context.DeadlineExceeded) {
		log.Fatal(err) // the error names the definition and what the API server last said
	}
	if err != nil {
		log.Fatal(err)
	}
	// Certificates of cert-manager.io/v1 are served from here on.
}

// A controller applies what it wants of a Deployment and a Service owned by
// it, and learns from the result whether the Deployment is available. It
// needs a cluster, so it is only compiled.
func ExampleClient_Apply() {
	ctx := context.Background()
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		log.Fatal(err)
	}
	c, err := kube.NewClient(kube.ClientConfig{REST: cfg, FieldManager: "web-operator"})
	if err != nil {
		log.Fatal(err)
	}
	labels := map[string]string{"app": "web"}
	dep, err := c.Apply(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "example.com/web:1.4"}}},
			},
		},
	})
	if errors.Is(err, kube.ErrFieldConflict) {
		log.Fatal(err) // another manager owns a field we set: the error names it
	}
	if err != nil {
		log.Fatal(err)
	}
	svc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": "web", "namespace": "shop"},
		"spec":     map[string]any{"selector": map[string]any{"app": "web"}, "ports": []any{map[string]any{"port": int64(80)}}},
	}}
	if err := kube.SetOwner(svc, dep, true); err != nil { // deleted with the Deployment
		log.Fatal(err)
	}
	if _, err := c.Apply(ctx, svc); err != nil {
		log.Fatal(err)
	}
	ok, why := kube.DeploymentAvailable(dep, 1)
	fmt.Println("available:", ok, why)
}

// Delete is called until the object is gone; meanwhile it reports the object
// Terminating. Only compiled.
func ExampleClient_Delete() {
	ctx := context.Background()
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		log.Fatal(err)
	}
	c, err := kube.NewClient(kube.ClientConfig{REST: cfg})
	if err != nil {
		log.Fatal(err)
	}
	ref := kube.Ref{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"}
	for {
		left, err := c.Delete(ctx, ref, kube.DeleteOptions{Propagation: metav1.DeletePropagationForeground})
		if err != nil {
			log.Fatal(err)
		}
		if left == nil {
			break // gone, pods and ReplicaSets first
		}
		fmt.Println("terminating, finalizers", left.GetFinalizers())
		time.Sleep(time.Second)
	}
}

// The finalizer helper guards a Kubernetes object as it guards a document:
// its cleanup runs before the object goes. Only compiled.
func ExampleNewFinalizerObject() {
	ctx := context.Background()
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		log.Fatal(err)
	}
	c, err := kube.NewClient(kube.ClientConfig{REST: cfg, FieldManager: "bucket-operator"})
	if err != nil {
		log.Fatal(err)
	}
	obj, err := c.Get(ctx, kube.Ref{APIVersion: "example.com/v1", Kind: "Bucket", Namespace: "shop", Name: "photos"})
	if err != nil {
		log.Fatal(err)
	}
	state, err := finalizer.Ensure(ctx, kube.NewFinalizerObject(c, obj), "example.com/empty-bucket",
		func(context.Context) error { return nil }, // create or update the bucket
		func(context.Context) error { return nil }) // empty and remove it
	fmt.Println(state, err)
}

// Readiness is judged from the object as read.
func ExampleDeploymentAvailable() {
	dep := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "generation": int64(2)},
		"status":   map[string]any{"observedGeneration": int64(1), "availableReplicas": int64(1)},
	}}
	fmt.Println(kube.DeploymentAvailable(dep, 1))
	_ = unstructured.SetNestedField(dep.Object, int64(2), "status", "observedGeneration")
	fmt.Println(kube.DeploymentAvailable(dep, 1))
	// Output:
	// false the deployment controller has not observed generation 2 yet (observed 1)
	// true
}

// Most controllers report readiness as a status condition.
func ExampleConditionTrue() {
	cert := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
		"metadata": map[string]any{"name": "shop-tls", "generation": int64(1)},
		"status": map[string]any{"conditions": []any{map[string]any{
			"type": "Ready", "status": "False", "reason": "Issuing", "message": "Issuing certificate as Secret does not exist",
		}}},
	}}
	fmt.Println(kube.ConditionTrue(cert, "Ready"))
	fmt.Println(kube.ConditionTrue(cert, "Issuing"))
	// Output:
	// false condition Ready is False: Issuing: Issuing certificate as Secret does not exist
	// false no condition Issuing
}

// An owner must have been read from the API server: its uid is what the
// garbage collector follows.
func ExampleSetOwner() {
	owner := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "shop", "uid": "6f1c0c1e-3b1a-4c2e-9d51-0d8f3b0c2a11"},
	}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web-config", Namespace: "shop"}}
	if err := kube.SetOwner(cm, owner, true); err != nil {
		fmt.Println(err)
	}
	r := cm.OwnerReferences[0]
	fmt.Println(r.Kind, r.Name, *r.Controller, *r.BlockOwnerDeletion)
	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere", Namespace: "billing"}}
	fmt.Println(kube.SetOwner(other, owner, true))
	// Output:
	// Deployment web true true
	// kube: owner Deployment.apps shop/web of billing/elsewhere: store: invalid: a namespaced owner must be in its dependent's namespace
}

// The schema of a spec type, as the definition of its kind carries it:
// `kubectl explain` shows the description tags, and the API server refuses
// a spec of another shape.
func ExampleSchemaOf() {
	type ServerSpec struct {
		State    string            `json:"state" description:"The intent: Running or Stopped."`
		Replicas int32             `json:"replicas,omitempty" description:"How many replicas run."`
		Labels   map[string]string `json:"labels,omitempty"`
	}
	s, err := kube.SchemaOf[ServerSpec]()
	if err != nil {
		log.Fatal(err)
	}
	b, _ := json.MarshalIndent(s, "", "  ")
	fmt.Println(string(b))
	// Output:
	// {
	//   "properties": {
	//     "labels": {
	//       "additionalProperties": {
	//         "type": "string"
	//       },
	//       "nullable": true,
	//       "type": "object"
	//     },
	//     "replicas": {
	//       "description": "How many replicas run.",
	//       "maximum": 2147483647,
	//       "minimum": -2147483648,
	//       "type": "integer"
	//     },
	//     "state": {
	//       "description": "The intent: Running or Stopped.",
	//       "type": "string"
	//     }
	//   },
	//   "type": "object"
	// }
}

// A driven kind — its status embeds the machine's — gets the columns State,
// Phase, Ready and Age in `kubectl get`, and every kind the category tend.
func ExampleKindOf() {
	type ServerSpec struct {
		State string `json:"state"`
	}
	type ServerStatus struct {
		statemachine.Status[string, string]
		Address string `json:"address,omitempty" description:"Where the server answers."`
	}
	s, err := kube.New(kube.Config{
		REST:  &rest.Config{Host: "https://kube.example.com"},
		Types: []kube.Kind{kube.KindOf[ServerSpec, ServerStatus]("Server")},
	})
	if err != nil {
		log.Fatal(err)
	}
	def := s.Definitions()[0]
	categories, _, _ := unstructured.NestedStringSlice(def.Object, "spec", "names", "categories")
	versions, _, _ := unstructured.NestedSlice(def.Object, "spec", "versions")
	fmt.Println(def.GetName(), categories)
	for _, c := range versions[0].(map[string]any)["additionalPrinterColumns"].([]any) {
		c := c.(map[string]any)
		fmt.Println(c["name"], c["jsonPath"])
	}
	// Output:
	// servers.store.tend.dev [tend]
	// State .status.target
	// Phase .status.phase
	// Ready .status.tendSummary
	// Age .metadata.creationTimestamp
}
