// Package operator is a declarative database controller on real
// etcd members: a Cluster document says how many members it wants
// (ClusterSpec.Replicas), and two controllers turn that into a running Raft
// cluster.
//
// # Documents
//
// A Cluster owns one Member document per member (an intermediate resource
// per member), with a controlling owner reference. A Member names the
// member's id, its loopback URLs, its data directory and the initial cluster
// it first joins; it owns its process and its data directory, through the
// finalizer [MemberFinalizer]. The Cluster's status holds the membership
// record (an operator's initial-cluster ConfigMap), the next id, and the plan in
// progress.
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
//   - A plan recorded: its actions run, each idempotent. Join (Add) is
//     MemberAdd, then the Member document with the new initial cluster and
//     cluster state "existing". Leave (Remove) is deleting the Member
//     document (its finalizer stops the process), then MemberRemove. A member
//     already added, a document already created, a member already removed are
//     all success, so a crash anywhere resumes the same step.
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
// resync. A deleted Member's process is stopped and its data directory removed
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
