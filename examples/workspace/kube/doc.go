// Package kube holds the Kubernetes backends of the workspace data plane: a
// container is a Pod, a volume a PersistentVolumeClaim bound to a
// PersistentVolume. It talks to the API server through client-go, writes
// with server-side apply under a field manager ([DefaultFieldManager]) and
// keeps no state of its own: a restarted controller reads everything back
// from the API.
//
// # Containers
//
// [Instances] runs workspace {id} as Pod ws-{id} in its namespace: one
// container of the workspace image, which serves its home (claim
// ws-{id}-home mounted at [HomeDir]) over HTTP on [Port], as the program of
// the Docker backend's image does, with that server's health check as its
// readiness probe. The workspace is running when the Pod is Running and
// Ready. Delete removes the Pod with a grace period of zero: the kubelet
// kills its container at once (SIGKILL), as the data plane's immediate stop asks.
//
// Under kwok, which the test command runs in place of kubelets, no
// container runs: the scheduler binds the Pod to a fake node and kwok marks
// it Running and Ready. Everything the backend does and observes is then
// real API traffic (scheduling, readiness, deletion), but nothing answers on
// [Port]; the tests read and write a workspace's home on its volume's
// directory instead.
//
// # Volumes and archives
//
// [Storage] provisions volumes statically: for workspace {id} it creates the
// directory {BaseDir}/{namespace}/ws-{id}-home on this host, a
// PersistentVolume of that host path ([PersistentVolumeName]) reserved for
// the claim, and claim ws-{id}-home naming that volume, and Provision
// returns only once kube-controller-manager's volume binder has bound the
// two. The volume's reclaim policy is Retain: DeleteVolume removes the
// claim, the volume and then the directory itself.
//
// Archive and restore are storage jobs (package storagejob), each a Job of
// one Pod ([Jobs]) that mounts the claim and an emptyDir, takes the
// archive's URL and a Secret of object storage keys as its environment,
// mounts no service account token and is never retried by Kubernetes: the
// data plane judges its exit code and runs it again if need be. A job starts
// only on a claim no Pod mounts, and a workspace's Pod only on a claim no
// job mounts ([ErrVolumeInUse]). Under kwok no container runs, so the tests
// and the demo run the Jobs' Pods on this host with a [JobHost], which
// plays the kubelet's part for them and reports each exit in the Pod's
// status, from which the Job controller judges the Job. The restore marker
// is the claim's annotation
// [AnnotationRestoredFrom], written by a field manager of its own so that
// removing it never touches the claim's spec.
//
// # Errors
//
// Every error names the object it concerns. Those a caller can fix say
// how: an API server that does not answer, a namespace that does not exist,
// a request RBAC forbids (grant the kubeconfig's identity the verb on the
// resource), a field another manager owns, or a wait that timed out naming
// the controller that did not act. Every method is idempotent (contract 3):
// creating what exists, deleting what is missing are no errors.
package kube
