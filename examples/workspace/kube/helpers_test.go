package kube_test

import (
	"context"
	"path/filepath"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/tendhq/tend/examples/workspace/dataplane/dataplanetest"
	"github.com/tendhq/tend/examples/workspace/kube"
	"github.com/tendhq/tend/examples/workspace/objstore"
)

// testImage and testJobImage are the images of the tests' Pods and storage
// Jobs; under kwok nothing pulls them.
const (
	testImage    = "tend-workspace:test"
	testJobImage = "tend-storage-job:test"
)

// newBackends returns Kubernetes backends in namespace ns, with volumes
// under a directory of the test's own, that remove what workspace id left
// behind when the test ends. The namespace's storage Jobs run on this host
// (kube.JobHost) until then.
func newBackends(t *testing.T, cfg *rest.Config, ns, id string) (*kube.Storage, *kube.Instances) {
	t.Helper()
	dir := t.TempDir()
	objects, err := objstore.NewDir(filepath.Join(dir, "objects"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := kube.NewStorage(kube.StorageConfig{
		REST: cfg, Namespace: ns, BaseDir: filepath.Join(dir, "volumes"), Objects: objects, JobImage: testJobImage,
	})
	if err != nil {
		t.Fatal(err)
	}
	runJobHost(t, cfg, ns)
	in, err := kube.NewInstances(kube.InstancesConfig{REST: cfg, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	dataplanetest.Cleanup(t, id, in, st)
	return st, in
}

// runJobHost runs the storage Jobs of namespace ns on this host until the
// test ends.
func runJobHost(t *testing.T, cfg *rest.Config, ns string) {
	t.Helper()
	host, err := kube.NewJobHost(kube.JobHostConfig{REST: cfg, Namespace: ns, Scratch: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- host.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
}

// volumeFile returns the path of name in workspace id's volume on this
// host.
func volumeFile(t *testing.T, st *kube.Storage, id, name string) string {
	t.Helper()
	dir, err := st.Dir(context.Background(), id)
	if err != nil || dir == "" {
		t.Fatalf("directory of %s: %q %v", kube.ClaimName(id), dir, err)
	}
	return filepath.Join(dir, name)
}
