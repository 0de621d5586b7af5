package infra_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/tendhq/tend/examples/gateway/infra"
)

// Resources live in namespaces, deleting is idempotent, and every change is
// logged in order.
func ExampleSim() {
	ctx := context.Background()
	sim, err := infra.NewSim(infra.SimConfig{})
	if err != nil {
		fmt.Println(err)
		return
	}
	dep := infra.Resource{Ref: infra.Ref{Kind: infra.Deployment, Namespace: "acme", Name: "acme"}}
	fmt.Println(errors.Is(sim.Apply(ctx, dep), infra.ErrNotFound)) // no namespace yet
	_ = sim.Apply(ctx, infra.Resource{Ref: infra.Ref{Kind: infra.Namespace, Name: "acme"}})
	_ = sim.Apply(ctx, dep)
	o, _ := sim.Get(ctx, dep.Ref)
	fmt.Println(o.Ref, "ready:", o.Ready)
	_ = sim.Delete(ctx, dep.Ref)
	fmt.Println(sim.Delete(ctx, dep.Ref)) // already gone: still a success
	for _, op := range sim.Ops() {
		fmt.Println(op)
	}
	// Output:
	// true
	// Deployment acme/acme ready: true
	// <nil>
	// #1 apply Namespace acme
	// #2 apply Deployment acme/acme
	// #3 delete Deployment acme/acme
	// #4 gone Deployment acme/acme
}

// The platform's resources on a Kubernetes cluster: the custom resources'
// definitions first, then the same calls as on the simulation. It needs a
// cluster, so it is only compiled.
func ExampleKube() {
	ctx := context.Background()
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		log.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 100, 200
	k, err := infra.NewKube(infra.KubeConfig{REST: cfg})
	if err != nil {
		log.Fatal(err)
	}
	if err := k.Install(ctx); err != nil {
		log.Fatal(err)
	}
	_ = k.Apply(ctx, infra.Resource{Ref: infra.Ref{Kind: infra.Namespace, Name: "acme"}})
	dep := infra.Resource{Ref: infra.Ref{Kind: infra.Deployment, Namespace: "acme", Name: "acme"},
		Data: map[string]string{"image": "example.com/runtime:1.4"}}
	if err := k.Apply(ctx, dep); err != nil {
		log.Fatal(err)
	}
	o, err := k.Get(ctx, dep.Ref)
	fmt.Println(o.Ready, o.Terminating, err)
}

// The definitions Install creates where a cluster lacks them, each at the
// version the platform uses.
func ExampleCustomResourceDefinitions() {
	for _, crd := range infra.CustomResourceDefinitions() {
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		fmt.Println(crd.GetName(), versions[0].(map[string]any)["name"])
	}
	// Output:
	// apisixpluginconfigs.apisix.apache.org v2
	// apisixroutes.apisix.apache.org v2
	// apisixtlses.apisix.apache.org v2
	// certificates.cert-manager.io v1
}
