// Package console is a web console for the documents a tend store holds: an
// [http.Handler] a program mounts in its own process, beside its
// controllers or on its own, to see every driven kind, its documents by
// phase, and one document's machine, history, spec and status, and to act
// on them.
//
// # What it shows
//
// The console reads what controllers record (see package oncall): the
// machine of each driven kind, and the machine's part of every document's
// status at its fixed JSON paths. It links none of the user's types. Its
// pages are rendered on the server; a small script, served with them,
// follows the store's changes through server-sent events and updates the
// page in place, so a document that changes phase shows it at once.
//
// # Acting
//
// Actions (pause, resume, retry, skip, move, request, remove-finalizer)
// are POST forms carried out through an oncall.Client, so they are
// validated against the kind's machine and recorded in the document's
// history with the operator's name ([Config.Actor]). Every action needs
// [Config.Authorize]: without it the console is read-only and refuses each
// one. Each POST must also carry a token bound to the browser's session
// cookie, and pass [http.CrossOriginProtection], so that another site
// cannot make an operator's browser act.
//
// A kind's page also acts on all matching documents: its "All matching"
// form (labels, phase, stuck) previews how many documents match and the
// first of them, and the preview's form runs the action on the documents
// previewed that still match (an oncall.Client's Bulk), then lists each
// one's outcome and the documents that changed since the preview or
// matched since; [Config.Authorize] is asked about it as an [Action] with
// Bulk set.
//
// # Goroutines
//
// [New] starts nothing. The event streams run in the requests that ask for
// them and end with them: serve the console from a server whose request
// contexts end when it shuts down (BaseContext), or they hold the shutdown
// up until its grace period ends.
package console
