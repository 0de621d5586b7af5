package kube_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/tendhq/tend/store"
)

// The tests of this file check that the cluster scripts/servers/kube.sh
// starts works end to end, as the tests of the examples rely on it: its
// controllers act, kwok's nodes run pods, and the audit log records every
// change in order.

// auditEvent is the part of an audit.k8s.io/v1 Event the tests read.
type auditEvent struct {
	Stage     string `json:"stage"`
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	ObjectRef struct {
		Resource  string    `json:"resource"`
		Namespace string    `json:"namespace"`
		Name      string    `json:"name"`
		UID       types.UID `json:"uid"`
	} `json:"objectRef"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// auditLog returns the events of the API server's audit log
// (TEND_KUBE_AUDIT_LOG) about objects of resource in namespace, in the
// order the server wrote them.
func auditLog(t *testing.T, resource, namespace string) []auditEvent {
	t.Helper()
	f, err := os.Open(os.Getenv("TEND_KUBE_AUDIT_LOG"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var events []auditEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e auditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("audit log line %q: %v", sc.Text(), err)
		}
		if e.ObjectRef.Resource == resource && e.ObjectRef.Namespace == namespace {
			events = append(events, e)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return events
}

// clusterNamespace returns a clientset of the full test cluster and a
// namespace of the test's own there.
func clusterNamespace(t *testing.T) (*kubernetes.Clientset, string) {
	t.Helper()
	fullCluster(t)
	cfg := restConfig(t)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs, storeNamespace(t, cfg)
}

// TestClusterAuditLog: the audit log holds one line per change, in the
// order the changes were made, with the writer's identity, and no reads;
// a delete by the garbage collector is recorded after the changes that
// caused it.
func TestClusterAuditLog(t *testing.T) {
	cs, ns := clusterNamespace(t)
	ctx := t.Context()
	cms := cs.CoreV1().ConfigMaps(ns)
	owner, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owner.Data = map[string]string{"a": "1"}
	if _, err := cms.Update(ctx, owner, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Patch(ctx, "owner", types.MergePatchType, []byte(`{"data":{"b":"2"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Get(ctx, "owner", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	dep := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dependent", OwnerReferences: []metav1.OwnerReference{
		{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: owner.UID},
	}}}
	if _, err := cms.Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "owner", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the garbage collector to delete the dependent", func() (bool, string) {
		_, err := cms.Get(ctx, "dependent", metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})

	want := []string{"create owner", "update owner", "patch owner", "create dependent", "delete owner", "delete dependent"}
	var got []string
	waitFor(t, "the changes in the audit log", func() (bool, string) {
		got = got[:0]
		for _, e := range auditLog(t, "configmaps", ns) {
			got = append(got, e.Verb+" "+e.ObjectRef.Name)
		}
		return slices.Equal(got, want), fmt.Sprint(got)
	})
	for _, e := range auditLog(t, "configmaps", ns) {
		if e.Stage != "ResponseComplete" || e.ResponseStatus.Code >= 300 {
			t.Errorf("%s %s: stage %s, code %d; want ResponseComplete, success", e.Verb, e.ObjectRef.Name, e.Stage, e.ResponseStatus.Code)
		}
		if gc := strings.Contains(e.UserAgent, "garbage-collector"); gc != (e.Verb+" "+e.ObjectRef.Name == "delete dependent") {
			t.Errorf("%s %s by %q: only the dependent's delete is the garbage collector's", e.Verb, e.ObjectRef.Name, e.UserAgent)
		}
	}
}

// TestClusterCollectsCustomResources: the garbage collector collects the
// documents of a kind whose definition was installed after it started (it
// rediscovers resources every 30 s): a document whose owner is deleted goes
// too.
func TestClusterCollectsCustomResources(t *testing.T) {
	fullCluster(t)
	kind := fmt.Sprintf("Collected%d", time.Now().UnixNano())
	s := newStoreOn(t, restConfig(t), kind)
	ctx := t.Context()
	owner, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: kind, Key: "owner"}, Spec: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	dep, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: kind, Key: "dependent", Owners: []store.OwnerRef{
		{Kind: kind, Key: "owner", UID: owner.Meta.UID},
	}}, Spec: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, kind, "owner", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the garbage collector to delete "+dep.Meta.Key, func() (bool, string) {
		_, err := s.Get(ctx, kind, "dependent")
		return errors.Is(err, store.ErrNotFound), fmt.Sprint(err)
	})
}

// TestClusterNamespaceDeletion: a Deployment's pods are scheduled on kwok's
// nodes and become Running and Ready, so the Deployment is available; the
// namespace's deletion then completes: Terminating, its objects deleted
// (the pods by kwok, as a kubelet would), gone.
func TestClusterNamespaceDeletion(t *testing.T) {
	cs, ns := clusterNamespace(t)
	ctx := t.Context()
	labels := map[string]string{"app": "web"}
	replicas := int32(3)
	_, err := cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "example.com/web:1"}}},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the Deployment available", func() (bool, string) {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return d.Status.AvailableReplicas == replicas, fmt.Sprintf("%+v", d.Status)
	})
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) != int(replicas) {
		t.Fatalf("pods: %d, %v; want %d", len(pods.Items), err, replicas)
	}
	for _, p := range pods.Items {
		ready := slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
			return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
		})
		if !strings.HasPrefix(p.Spec.NodeName, "kwok-node-") || p.Status.Phase != corev1.PodRunning || !ready || p.Status.PodIP == "" {
			t.Errorf("pod %s on node %q: phase %s, ready %v, IP %q; want Running and Ready on a kwok node", p.Name, p.Spec.NodeName, p.Status.Phase, ready, p.Status.PodIP)
		}
	}

	if err := cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "namespace "+ns+" gone", func() (bool, string) {
		n, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			return apierrors.IsNotFound(err), err.Error()
		}
		return false, fmt.Sprintf("phase %s, conditions %+v", n.Status.Phase, n.Status.Conditions)
	})
	for _, e := range auditLog(t, "pods", ns) {
		if e.Verb == "delete" && strings.HasPrefix(e.UserAgent, "kwok") {
			return // kwok deleted a pod, as a kubelet confirms a pod's end
		}
	}
	t.Error("no pod deletion by kwok in the audit log")
}
