// Package registry records which machine drives each kind of document, in the
// store beside the documents, so that a program which does not link the
// user's Go types (the tend command, the web console, package oncall) can
// read and act on them.
//
// A Manager of package manager writes one [Entry] per driven kind, in a
// document of kind [Kind] keyed by the driven kind, when it starts and
// whenever the machine, the finalizers or the presence prefix changed; it is
// never rewritten just because another replica started. Readers use [Get]
// and [List]. A store must be configured with the kinds [Kinds] returns
// (a Manager asks for them itself when its store can add kinds).
//
// While a Manager runs a driver of a kind, each of its replicas also holds a
// presence lease whose name begins with [PresencePrefix]: while one is
// unexpired, a controller serves the kind.
package registry
