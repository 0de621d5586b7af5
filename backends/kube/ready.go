package kube

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Terminating reports whether deletion of obj was requested: it has a
// deletionTimestamp and stays until its finalizers are removed.
func Terminating(obj metav1.Object) bool { return obj.GetDeletionTimestamp() != nil }

// DeploymentAvailable reports whether the Deployment obj has at least want
// available replicas (pods ready for the Deployment's minReadySeconds), as
// the deployment controller reported them after it saw the current spec
// (status.observedGeneration is the object's generation); otherwise it says
// why not. It judges the object as given: read it again to see progress.
func DeploymentAvailable(obj *unstructured.Unstructured, want int64) (bool, string) {
	if obj.GetKind() != "Deployment" {
		return false, fmt.Sprintf("%s %s is not a Deployment", obj.GetKind(), obj.GetName())
	}
	observed, _, _ := unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
	if observed < obj.GetGeneration() {
		return false, fmt.Sprintf("the deployment controller has not observed generation %d yet (observed %d)", obj.GetGeneration(), observed)
	}
	available, _, _ := unstructured.NestedInt64(obj.Object, "status", "availableReplicas")
	if available < want {
		return false, fmt.Sprintf("%d of %d replicas available", available, want)
	}
	return true, ""
}

// ConditionTrue reports whether obj's status.conditions hold a condition of
// type typ with status "True" that describes the current spec: its
// observedGeneration (or, without one, status.observedGeneration), when
// set, is the object's generation. Otherwise it says why not, with the
// condition's reason and message. This is the readiness of most
// controllers' objects ("Ready" of a cert-manager Certificate, "Available"
// of a Deployment, "Established" of a CustomResourceDefinition).
func ConditionTrue(obj *unstructured.Unstructured, typ string) (bool, string) {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] != typ {
			continue
		}
		observed, ok, _ := unstructured.NestedInt64(m, "observedGeneration")
		if !ok {
			observed, ok, _ = unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
		}
		switch {
		case ok && observed < obj.GetGeneration():
			return false, fmt.Sprintf("condition %s is for generation %d, not %d", typ, observed, obj.GetGeneration())
		case m["status"] != string(metav1.ConditionTrue):
			return false, fmt.Sprintf("condition %s is %v: %v: %v", typ, m["status"], m["reason"], m["message"])
		}
		return true, ""
	}
	return false, "no condition " + typ
}
