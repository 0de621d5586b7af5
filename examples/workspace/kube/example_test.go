package kube_test

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"

	"github.com/tendhq/tend/examples/workspace/kube"
	"github.com/tendhq/tend/examples/workspace/objstore"
)

// Workspace w1 in namespace team-a is Pod ws-w1 mounting claim ws-w1-home,
// bound to the volume team-a.ws-w1-home.
func ExamplePersistentVolumeName() {
	fmt.Println(kube.PodName("w1"), kube.ClaimName("w1"), kube.PersistentVolumeName("team-a", "w1"))
	// Output: ws-w1 ws-w1-home team-a.ws-w1-home
}

// The backends of one namespace; nothing is contacted before the first
// call.
func ExampleNewStorage() {
	cfg := &rest.Config{Host: "https://127.0.0.1:6443"} // or clientcmd.BuildConfigFromFlags("", kubeconfig)
	dir, err := os.MkdirTemp("", "workspaces")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	objects, err := objstore.NewDir(filepath.Join(dir, "objects"))
	if err != nil {
		fmt.Println(err)
		return
	}
	st, err := kube.NewStorage(kube.StorageConfig{
		REST: cfg, Namespace: "team-a", BaseDir: filepath.Join(dir, "volumes"), Objects: objects,
		JobImage: "registry.example.com/storage-job:v1", // a build of cmd/storage-job
	})
	fmt.Println(st != nil, err)
	in, err := kube.NewInstances(kube.InstancesConfig{REST: cfg, Namespace: "team-a"})
	fmt.Println(in != nil, err)
	// Output:
	// true <nil>
	// true <nil>
}
