// Package configmap keeps a raftcluster's member configuration in a
// Kubernetes ConfigMap, as an operator for a Raft store does: the
// [operator.MemberConfig] of clusters whose documents live in the Kubernetes
// API (package github.com/tendhq/tend/backends/kube).
//
// # The ConfigMap
//
// Each cluster has one ConfigMap in the store's namespace, named after the
// cluster: [Name] of its key, which is the name of its Cluster custom
// resource. Its data key [DataKey] holds the initial cluster (the
// name=peerURL pairs of the membership), the annotation [KeyAnnotation] the
// cluster's key, and a controlling owner reference names the Cluster custom
// resource, so Kubernetes' garbage collector deletes the ConfigMap with its
// cluster. A ConfigMap owned by another uid was left by an earlier cluster
// of the same key: reads ignore it and writes take it over.
//
// # Writes
//
// Create is one create request; AlreadyExists is success when the ConfigMap
// is the cluster's. Update reads the ConfigMap and, when it differs, writes
// it with the resourceVersion read as a precondition (a Conflict is
// returned, for the caller to retry), creating it when it is missing. The
// identity needs get, create and update on configmaps in the namespace.
//
// The operator package itself does not import client-go: it sees only the
// [operator.MemberConfig] interface.
package configmap
