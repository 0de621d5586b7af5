// Package operator is a declarative database controller on real
// etcd members: a Cluster document says how many members it wants
// (ClusterSpec.Replicas), and two controllers turn that into a running Raft
// cluster.
//
// # Documents
//
// A Cluster owns one Member document per member (an intermediate resource
// per member), with a controlling owner reference. A Member names the
// member's id, its loopback URLs, its data directory and whether it starts a
// new cluster or joins an existing one; it owns its process and its data
// directory, through the finalizer [MemberFinalizer]. The Cluster's status
// holds the membership record, the next id, and the plan in progress.
//
// The documents live in any store: the memory store, PostgreSQL, or the
// Kubernetes API, where Cluster and Member are custom resources (package
// github.com/tendhq/tend/backends/kube) and the garbage collector follows
// the owner references.
//
// # The member configuration
//
// A member is started with an initial cluster (etcd's --initial-cluster,
// the name=peerURL pairs of the membership), which etcd reads whenever the
// member's data directory is empty. A Kubernetes operator for a Raft store
// keeps it in a ConfigMap the members' Pods read; here it sits behind the
// [MemberConfig] interface, so the operator does not depend on client-go:
// [DocumentMemberConfig] keeps it in a document of the same store, and
// package github.com/tendhq/tend/examples/raftcluster/configmap in a
// ConfigMap named after the cluster. The cluster controller writes it
// before the membership changes; the member controller reads it each time
// it starts a process.
//
// # The cluster controller
//
// Each reconcile does one of three things, reading the newest Cluster from
// the store and its Members from a cache fed by a watch:
//
//   - No plan recorded: [Next] decides the next step from the intent, the
//     record and the documents, and the step is written to the status
//     ([ClusterStatus.Plan], with its ids and URLs and the advanced
//     [ClusterStatus.NextID]) before anything acts on it.
//   - A plan recorded: its actions run, each idempotent. Bootstrap creates
//     the member configuration (one that exists is success), then every
//     Member document with cluster state "new". Join (Add) updates the
//     member configuration to the membership that includes the new member,
//     then calls MemberAdd, then creates the Member document with cluster
//     state "existing". Leave (Remove) updates the member configuration to
//     the membership without the leaving member, then deletes its Member
//     document (its finalizer stops the process), then calls MemberRemove. A
//     configuration already written, a member already added, a document
//     already created, a member already removed are all success, so a crash
//     anywhere resumes the same step.
//   - The world shows the plan done (etcd lists the new member started, or
//     no longer lists the old one): the plan is cleared, which queues the
//     cluster again for the next step.
//
// Members change one at a time, so each membership's quorum is reachable
// from the previous one, and ids are never reused. Before acting, a reconcile
// checks its expectations ([expectations.Names], one name per member id): a
// Member it created or deleted that the cache does not show yet holds it
// back, so a stale view never creates a member twice. It also waits until the
// cache has listed once: an empty cache would look like every member gone.
//
// # The member controller
//
// It keeps each Member's process running on its data directory (an operator's
// one-replica ReplicaSet and volume): a killed process is started again, as
// the same etcd member, when the [Runtime] reports its exit or at the next
// resync. Each start reads the initial cluster from the cluster's
// [MemberConfig], as a restarting Pod reads its ConfigMap. A deleted Member's process is stopped and its data directory removed
// before its finalizer is. A Member deleted by hand is therefore seen by the
// cluster controller as a member without a document: it leaves the Raft
// membership first, and a new member with a new id joins in the next step.
//
// # Crashes
//
// [Operator.Run] starts with no memory: new expectations, a new cache. All a
// new run knows of a cluster's progress is what its status records, which is
// enough, because the plan was recorded before it acted.
package operator
