// Package manager runs the controllers of a process (package controller)
// and coordinates its replicas through a store's leases: one leader, or
// key-space shards each owned by one replica.
//
// # Builders: one statement per controller
//
// [Drive] adds the controller that drives a kind with a machine, and
// [Manager.Cascade] the garbage collector of package cascade, each in one
// statement, with what every controller shares: the manager's logger,
// metrics registerer, tracer provider, history recorder and informer cache
// ([Options] replaces them for one controller). The store is given the
// kinds they need (the driven kind, its history kind, the registry's kind,
// the kinds owned or watched), and the driver's registration follows from
// the machine, so a driven kind is visible to on-call tools with nothing
// else to list. Complete returns every configuration error, matching
// [ErrInvalidConfig]; Run never reports one first.
//
//	servers, err := manager.Drive[ServerSpec, ServerStatus](mgr, machine).
//		Steps(boot, halt).Conditions(running).Complete()
//
// # One watch per kind
//
// A [Manager] runs one informer cache per store ([Manager.Cache], or
// [Config.Informers] when given) for as long as it runs, in every mode, so
// that a standby replica keeps its cache warm. Whatever reads the store
// through a cache is handed it: the watching sources (controller.For and
// the others), drivers (driver.Config.Cache) and the garbage collector of
// package cascade (cascade.Config.Cache). However many controllers follow a
// kind, the store sees one watch of it.
//
// # Replicas
//
// A [Manager] runs several controllers in one of three modes ([Mode]):
// [Single] runs them all; [LeaderElection] runs them on the one replica that
// holds a lease; [Sharded] hashes keys into shards ([ShardOf]), each a lease,
// and spreads the shards evenly over the live replicas, moving them as
// replicas come and go. Leases come from a store.Leaser, usually the store
// the controllers watch. A replica reconciles a key only while it holds the
// key's lease, stops at once (cancelling the reconcile's context) when it
// loses it, and every reconcile's context carries the lease's fence
// (store.WithFence), so the store refuses the writes of a replica that lost
// its lease. A store that cannot check fences atomically (the Kubernetes
// backend) needs [Config.Unfenced], the stated choice to run without
// that last guard. See docs/scale-out.md for the reasoning.
//
// # Health, leadership and endpoints
//
// A [Manager] tells operators whether its replica is healthy and doing its
// share. [Manager.IsLeader] and [Manager.OwnedShards] report the lead and the
// shards it holds, and [Config.OnLeadershipChange] is called, from a
// goroutine of [Manager.Run], each time they change.
// [Manager.CheckReadiness] passes once Run runs, every controller's sources
// have listed ([Controller.HasSynced]) and, in Sharded mode, the replica
// holds its share of the shards; as in Kubernetes, a standby replica waiting
// for the lead is ready, and its leadership is reported apart.
// [Manager.CheckLiveness] fails while a reconcile has run past
// [Config.StuckReconcileAfter], or the lease calls have failed for
// longer than the lease duration. [Manager.Handler] serves them as /readyz
// and /healthz in Kubernetes' format, with /metrics and, when asked,
// net/http/pprof's /debug/pprof/; [Manager.Serve] runs that handler on an
// address until its context ends.
//
// # Why each reconcile ran
//
// A Manager keeps in memory the last reconciles of each key
// ([Config.ReconcilesPerKey] of the [Config.ReconcileKeys] keys reconciled
// most recently), with why each ran (its triggers: see
// controller.TriggersFrom), its result and its duration.
// [Manager.Reconciles] returns them, [Manager.Handler] serves them as GET
// /reconciles?kind=K&key=X, the web console shows them on a document's
// page and the tend command's describe --manager prints them. Recording
// one allocates nothing.
//
// # Fair queues per tenant
//
// [DriveBuilder.Group] (or [Options] Group, GroupWeight and
// MaxInFlightPerGroup) groups a controller's keys, by tenant say, so that
// one group's backlog does not hold up the others: see
// controller.Config.Group.
//
// # Machines recorded for on-call tools
//
// A Manager records, for each driver (package driver) it runs, the
// driver's registration in the store's registry (package registry) — the
// machine as a statemachine.Descriptor, the finalizer the driver owns, the
// prefix of its presence leases, the replica and the time — so that a
// program without the user's Go types (package oncall, the tend command, the
// web console) can read and act on the kind's documents. It is written only
// when the machine, finalizers or prefix changed; a store without the
// registry's kind records nothing (logged once, at debug level). While Run
// runs, in every mode, each replica also holds a presence lease
// "<LeasePrefix>presence/<kind>/<Identity>" (registry.PresencePrefix) in the
// kind's own store, and releases it when Run returns.
//
// # Machines that evolve
//
// Before the controllers of a driven kind run, Run compares the driver's
// machine with the one recorded for the kind (by digest,
// statemachine.Machine.Digest). When they differ and the recorded machine
// does not declare a higher version, it reads the kind's documents and
// checks that the new machine can carry each on (driver.Driver.CheckCarried):
// if some would be stranded, that kind alone does not run — its
// controllers are held, nothing is recorded, no presence lease is taken,
// [Manager.KindError] returns the statemachine.StrandedError listing them,
// and the readiness check "machines" fails saying why — while the other
// kinds run. Otherwise the new machine is recorded, and each driver
// carries its documents at their next reconcile.
//
// During a rolling update, replicas of two versions run at once. The
// newer checks and records its machine and runs without waiting for the
// older. The older one stands down for the kind once it sees a newer
// machine recorded (within a RenewPeriod): its controllers of that kind
// stop, it gives up its presence lease, KindError matches
// registry.ErrSuperseded and its readiness fails. A machine is newer when
// it declares a higher version (statemachine.Definition.Version); of two
// different machines of one version, the one recorded last. A replica
// whose machine declares a lower version than the recorded one never runs
// the kind. A replica that stood down keeps the leader or shard leases
// it holds until it stops: in LeaderElection and Sharded modes the newer
// replica takes the work over as the older ones are stopped, as any
// rollout stops them once their readiness fails.
//
// # Metrics
//
// With [Config.MetricsRegisterer] set, a manager exports
// leader_election_master_status (client-go's gauge),
// tend_manager_owned_shards and tend_manager_lease_renew_failures_total, as
// its mode calls for.
package manager
