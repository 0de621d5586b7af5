package kube_test

import (
	"fmt"

	"github.com/tendhq/tend/backends/kube"
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

// The definition Install creates, for applying as a manifest instead.
func ExampleCustomResourceDefinition() {
	crd := kube.CustomResourceDefinition(kube.DefaultGroup, "ApiGateway")
	fmt.Println(crd.GetName())
	// Output:
	// apigateways.store.tend.dev
}
