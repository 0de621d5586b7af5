package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/tendhq/tend/examples/internal/servertest"
	"github.com/tendhq/tend/examples/workspace/kube"
)

// TestScenarioCluster runs the demo's scenario with -kubeconfig on the
// cluster scripts/test.sh starts: Pods, claims and storage Jobs (their Pods
// run in the test process) in a namespace of the run's own, which it
// deletes, with no volume left behind; the archives in a directory, and in
// a bucket of the S3 server scripts/test.sh starts, whose keys the Jobs take
// from a Secret.
func TestScenarioCluster(t *testing.T) {
	path := servertest.Env(t, "TEND_KUBECONFIG", "kube")
	for _, tc := range []struct {
		name     string
		archives func(t *testing.T) archives
	}{
		{"Dir", func(*testing.T) archives { return archives{} }},
		{"S3", s3Archives},
	} {
		t.Run(tc.name, func(t *testing.T) { scenarioCluster(t, path, tc.archives(t)) })
	}
}

func scenarioCluster(t *testing.T, path string, a archives) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := runCluster(ctx, clusterOptions{kubeconfig: path, image: "workspace:latest", jobImage: "storage-job:latest", jobsHere: true},
		t.TempDir(), a, ops{}, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"survived the archive and the restore", "alice    removed from the store", "deleted [alice/"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	m := regexp.MustCompile(`namespace (\S+) deleted`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("output names no deleted namespace:\n%s", out.String())
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	var conns connections
	cfg.Dial = conns.dial
	defer conns.close()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range workspaces {
		if _, err := cs.CoreV1().PersistentVolumes().Get(ctx, kube.PersistentVolumeName(m[1], id), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("volume of %s after the run: %v, want NotFound", id, err)
		}
	}
}
