// Package infra is the infrastructure the gateway platform acts on: a
// Kubernetes-shaped [Cluster] that holds the platform's resources (Namespace,
// ConfigMap, Deployment, Service, ApisixRoute, ApisixPluginConfig, ApisixTls,
// Certificate) and a [Databases] server that holds each gateway's database and
// its user.
//
// # Two small interfaces
//
// Both interfaces are small on purpose, so that a real implementation is a thin
// adapter: Cluster is Apply (create or update), Delete (request deletion) and
// Get (observe, with readiness), the three verbs a client-go controller uses;
// Databases is CREATE DATABASE / ROLE, DROP, and a lookup. Every mutating call is
// idempotent: applying what exists updates it, deleting what is gone succeeds.
// That is what lets a controller retry any step after any failure.
//
// # The simulated infrastructure
//
// [Sim] implements both in memory, as the embedded default of the example and
// the world its tests run against. Like a real cluster it is asynchronous: an
// applied resource becomes ready after [SimConfig.ReadyDelay] and a deleted one
// stays Terminating for [SimConfig.DeleteDelay] before it is gone. Every call
// takes [SimConfig.Latency] and fails with [ErrInjected] at
// [SimConfig.FailureRate], half the time before it acts and half the time after
// (the caller cannot tell whether its change happened), drawn from a generator
// seeded by [SimConfig.Seed]. It refuses what a real server refuses: a resource
// in a missing or Terminating namespace, an Apply to a Terminating resource.
//
// Sim records every change it makes, in order, as an [Op]: tests replay the log
// to check the platform's ordering rules (routes gone before the Deployment,
// the Deployment gone before the database). Time is read from the time package,
// so under testing/synctest the delays are fake and instant.
//
// # Kubernetes
//
// [Kube] implements [Cluster] on a Kubernetes cluster: each resource is a
// real object (a Deployment of one replica, a Service, the APISIX and
// cert-manager custom resources…), applied with server-side apply, read
// with its readiness as the cluster reports it, and deleted with foreground
// propagation for a Deployment, so that Terminating lasts until its pods are
// gone. [Kube.AuditOps] reads the API server's audit log into the same [Op]
// log Sim keeps, so the platform's ordering rules are checked on the
// cluster's own records.
//
// # PostgreSQL
//
// [Postgres] implements [Databases] on a real PostgreSQL server: a gateway's
// database is a database owned by a login role, created with CREATE ROLE and
// CREATE DATABASE and dropped with DROP DATABASE … WITH (FORCE), which ends
// the sessions still connected to it, then DROP ROLE. Every call is
// idempotent, concurrent creations of one database included. Names must be
// lower-case PostgreSQL identifiers (letters, digits and underscores, at most
// 63 bytes) and are quoted in the SQL all the same; anything else fails with
// [ErrInvalid] before a statement is sent. Pass it as
// platform.Config.Databases, with [Sim] as the Cluster, to run the gateways'
// databases on a real server.
package infra
