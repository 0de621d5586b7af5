package main

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/tendhq/tend/backends/kube"
	"github.com/tendhq/tend/internal/servertest"
)

// kubeStore returns a store on the test API server in a namespace of its
// own, and its --store value: kube: and a kubeconfig whose context names
// that namespace.
func kubeStore(t *testing.T) (*kube.Store, string) {
	t.Helper()
	path := servertest.Env(t, "TEND_KUBE_STORE_KUBECONFIG", "kube")
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ns := fmt.Sprintf("tend-cli-%d", time.Now().UnixNano()%1e9)
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	namespaces := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"})
	if _, err := namespaces.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = namespaces.Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	s, err := kube.New(kube.Config{REST: cfg, Kinds: testKinds, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Install(ctx); err != nil {
		t.Fatal(err)
	}

	kc, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	kc.Contexts[kc.CurrentContext].Namespace = ns
	own := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, own); err != nil {
		t.Fatal(err)
	}
	return s, "kube:" + own
}

func TestReadKube(t *testing.T) {
	s, spec := kubeStore(t)
	produce(t, s)
	// The API server stores status with its keys sorted, and says more
	// about a document it does not find: the output has a golden file of
	// its own.
	golden(t, "read-kube", transcript(t, spec, readCommands...))
}
