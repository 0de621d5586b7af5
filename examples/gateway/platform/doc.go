// Package platform is the control plane of the API gateway platform of the
// reference example: its documents, its two State/Phase machines, the steps
// and probes that drive them, the controllers that run them, and the API a
// user calls.
//
// # Documents
//
// An ApiGateway owns a RuntimeDomain, a Database, three Stages and three
// Environments (each with its ClientApps), and the CloudFunctions and
// CronTriggers its users add ([Kinds]). Each document has an owner reference
// and the label [LabelGateway]. Users write a gateway's State
// ([Platform.SetGatewayState]); its controller writes its Phase.
//
// # Machines
//
// [GatewayDefinition] declares the ApiGateway machine: Creating → Created →
// Starting → Started → Stopping → Stopped, Restarting as a one-shot restart
// request served by one stop-then-start cycle, drift repair of a Started
// gateway's instance, and Deleting, the ordered cascade of [CascadeSteps], past a point
// of no return. [DomainDefinition] declares the RuntimeDomain machine, with
// its sanctioned Deleted → Creating cycle. [New] builds both; a definition
// with an uncovered (State, Phase) pair (a gateway that would sit for ever,
// its stages and database never cleaned up) does not
// build.
//
// # Steps
//
// Every step is an idempotent function of the document that reports Done,
// Progressed (work left: run again) or Failed, and acts on the infrastructure
// through [infra.Cluster] and [infra.Databases]. The gateway never reaches
// into its runtime domain's cleanup: it sets the domain's State and waits
// (driver.Driver.Settle and Retire). Instance and Database have no machine:
// the gateway's phases create and remove them directly.
//
// # Running
//
// [Platform.Run] runs the two controllers under a manager.Manager: alone,
// or as one of several replicas sharing a store ([Config.Manager]).
// [CheckOrder] and [Platform.Leftovers] check the example's invariants.
package platform
