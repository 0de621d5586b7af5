// Package managertest tests and measures controllers running over a real
// store backend, as package storetest tests the backend itself.
//
// # Failover
//
// [Failover] runs three controller replicas, each its own process, sharding
// one kind through a [manager.Sharded] [manager.Manager] over the
// backend under test, while the documents' specs keep changing. It kills
// one replica with SIGKILL in the middle of its work and checks that:
//
//   - the killed replica's shards move to the survivors within one lease
//     period: the manager's bound of [FailoverLease] + [FailoverRenew], plus
//     the backend's [FailoverConfig].ExpiryLag and [LoadAllowance];
//   - every document converges: its status records its latest generation;
//   - no key was reconciled by two replicas at once, judged from a journal
//     the replicas append to as each reconcile starts and ends;
//   - each key's statuses were written under non-decreasing fences
//     ([store.FenceFrom]), judged from the backend's watch history.
//
// A backend that cannot fence (see [FailoverConfig].Unfenced) is checked
// for everything but the fences.
//
// # Replica processes
//
// The replicas are the test binary itself, started again by [Failover]. The
// backend's TestMain calls [ReplicaMain] first: in a replica process it runs
// the replica and exits, in the test process it returns at once.
//
// Both processes open the backend with [FailoverConfig].Open. The replicas
// inherit the test process's environment, so a test passes the backend's
// address to them by setting environment variables (with
// [testing.T.Setenv]) before it calls [Failover], and Open reads them.
//
// # Convergence benchmark
//
// [Converge] measures how long a controller running a State/Phase driver
// takes to bring many gateway-like documents from Creating to Started over
// a backend, with steps that return at once, and sets the time against the
// store writes it made and the backend's single-write latency. A backend
// calls it from a benchmark with a factory for fresh backends.
package managertest
