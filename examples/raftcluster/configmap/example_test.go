package configmap_test

import (
	"fmt"

	"github.com/tendhq/tend/examples/raftcluster/configmap"
)

// The ConfigMap of a cluster has the name of the cluster's custom resource.
func ExampleName() {
	fmt.Println(configmap.Name("demo"))
	// Output: demo-2a97516c354b68848cdbd8f54a226a0a
}
