// Tend inspects the documents tend controllers drive, and acts on them as an
// operator, without the controllers' Go code: each running controller
// records its machine in the store (documents of kind TendMachine), and
// tend reads every document's State, Phase, operation, failure and history
// through package oncall.
//
// Install it with
//
//	go install github.com/tendhq/tend/cmd/tend@latest
//
// # Connecting
//
// --store, or the environment variable TEND_STORE, names the store:
//
//	memory:PATH                             a snapshot file of the memory store (memory.Store.SnapshotFile);
//	                                        actions rewrite the file atomically
//	postgres://USER@HOST:PORT/DB[?schema=S] PostgreSQL; schema defaults to tend, the other
//	                                        parameters go to the driver
//	etcd://HOST:PORT[,HOST:PORT…][/PREFIX]  etcd; the prefix defaults to /tend/
//	kube, kube:KUBECONFIG                   the Kubernetes API server of the kubeconfig's current context
//	                                        (KUBECONFIG or ~/.kube/config for kube), in its namespace
//
// --server URL connects instead to the on-call API a running program
// serves (oncall.Server), with the bearer token of TEND_TOKEN or of the file
// --token-file names. Acting on a memory snapshot whose program still runs
// (its kind's presence lease is live) is refused unless --force: that
// program overwrites the file.
//
// # Commands
//
//	tend get [KIND [KEY]] [--phase P] [-l SELECTOR] [-o table|json|yaml] [--watch]
//	tend describe KIND KEY
//	tend stuck [KIND] [-o table|json|yaml]
//	tend wait KIND KEY [--timeout D]
//	tend machine KIND [--format mermaid|dot|json]
//	tend machine diff KIND FILE [-o table|json|yaml]
//	tend pause KIND KEY [--reason R]
//	tend resume KIND KEY
//	tend retry KIND KEY [--wait]
//	tend skip KIND KEY STEP [--wait]
//	tend move KIND KEY PHASE [--wait]
//	tend request KIND KEY NAME [--wait]
//	tend pause|resume|retry|skip|move|request KIND [ARG] -l SELECTOR|--phase P|--stuck|--all
//	     [--dry-run] [--rate N/s|N/m] [--parallel N]
//	tend remove-finalizer KIND KEY NAME [--force]
//	tend completion bash|zsh|fish|powershell
//
// tend is read-only unless told otherwise: a command that changes a
// document asks for confirmation (y/N) when its standard input is a
// terminal, and needs --yes when it is not. --actor (or TEND_ACTOR, or the
// user's name) names who acts in the document's status and history.
//
// # Exit codes
//
//	0  success (stuck: nothing is stuck; wait: settled)
//	1  error: the store could not be reached, a write failed… (wait: timed out)
//	2  usage: unknown command or flag, wrong arguments, bad --store
//	3  not found: no such kind (no controller registered it) or document,
//	   no machine drives the kind (an action on a history or the registry),
//	   or no store where --store points (wait: removed)
//	4  refused: the action was not taken: not confirmed, invalid for the
//	   document (nothing to retry, unknown step…), a served kind's
//	   finalizer without --force, a memory snapshot whose program still
//	   runs without --force, refused by the controller (--wait), refused
//	   for any document of a bulk action, or refused by --server (no
//	   token, a wrong one, a read-only API); machine diff: the new machine
//	   would strand documents; wait: the intent is refused
//	5  stuck found: tend stuck listed at least one document; wait: held in
//	   Fault
package main
