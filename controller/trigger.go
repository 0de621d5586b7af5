package controller

import (
	"context"
	"slices"
	"strconv"

	"github.com/tendhq/tend/store"
	"github.com/tendhq/tend/workqueue"
)

// Trigger says why a key was queued: what happened, to which object, at
// which generation. A reconcile's triggers are every distinct trigger of the
// adds it coalesces ([TriggersFrom]). It is the work queue's trigger; the
// kinds this package and the driver use are the Trigger* constants.
type Trigger = workqueue.Trigger

// The kinds of trigger the package's sources, the runner and the driver
// (package driver) give. A [Source] of the user's may use its own.
const (
	// TriggerSpec: the document was created or its spec changed;
	// Generation is its new generation.
	TriggerSpec = "spec"
	// TriggerDelete: the document's deletion was requested, or it is gone.
	TriggerDelete = "delete"
	// TriggerChange: the document changed without a new generation nor a
	// deletion request (its status or metadata, written by someone else).
	TriggerChange = "change"
	// TriggerCommand: an operator's command (pause, resume, retry ...)
	// reached the document; the driver's source gives it for another
	// writer's status write.
	TriggerCommand = "command"
	// TriggerOwned: a document the key owns changed ([Owns]); ObjectKind
	// and ObjectKey name it.
	TriggerOwned = "owned"
	// TriggerWatched: a watched document mapped to the key changed
	// ([Watches]); ObjectKind and ObjectKey name it.
	TriggerWatched = "watched"
	// TriggerListed: the document was in a list a source made when it
	// started, when its watch started over, or when the replica gained
	// keys.
	TriggerListed = "listed"
	// TriggerResync: a periodic check of every document ([Resync]).
	TriggerResync = "resync"
	// TriggerRetry: the retry of a failed reconcile, after its backoff.
	TriggerRetry = "retry"
	// TriggerTimer: a timer the reconciler set came due (a wait, a
	// time-based rule).
	TriggerTimer = "timer"
	// TriggerDrift: a periodic check of a settled document's health.
	TriggerDrift = "drift"
	// TriggerRequeue: the reconcile asked to run again
	// ([Result.RequeueAfter]) without saying why ([Result.Trigger]).
	TriggerRequeue = "requeue"
	// TriggerChannel: a key received by a [Channel] source.
	TriggerChannel = "channel"
)

// reconcileInfo is what a reconcile's context carries of it: its id and
// its triggers. The turn's triggers are taken into buf, so that a reconcile
// costs one allocation for both, with or without triggers.
type reconcileInfo struct {
	id       string
	triggers []Trigger // buf[:n]
	dropped  int
	buf      [workqueue.DefaultMaxTriggers]Trigger
}

type reconcileInfoKey struct{}

// withReconcile returns ctx carrying info.
func withReconcile(ctx context.Context, info *reconcileInfo) context.Context {
	return context.WithValue(ctx, reconcileInfoKey{}, info)
}

func reconcileFrom(ctx context.Context) *reconcileInfo {
	info, _ := ctx.Value(reconcileInfoKey{}).(*reconcileInfo)
	return info
}

// TriggersFrom returns the triggers of the reconcile that ctx was handed to:
// a copy of the distinct triggers of every add its turn coalesced, in the
// order they first came, and how many more distinct ones were dropped
// beyond the bound (workqueue.DefaultMaxTriggers). It returns nil and zero
// when ctx does not come from a reconcile.
func TriggersFrom(ctx context.Context) (triggers []Trigger, dropped int) {
	info := reconcileFrom(ctx)
	if info == nil {
		return nil, 0
	}
	return slices.Clone(info.triggers), info.dropped
}

// TriggerStrings returns the triggers as strings (see [Trigger.String]),
// with "+N more" last when dropped is positive: the tend.reconcile.triggers
// attribute of a reconcile's span and the triggers field of its debug log.
func TriggerStrings(triggers []Trigger, dropped int) []string {
	out := make([]string, 0, len(triggers)+1)
	for _, t := range triggers {
		out = append(out, t.String())
	}
	if dropped > 0 {
		out = append(out, "+"+strconv.Itoa(dropped)+" more")
	}
	return out
}

// eventTrigger returns the trigger of a change of a document of the
// source's own kind: listed, a new generation (spec), a deletion requested
// or done (delete), or any other change.
func eventTrigger(typ store.EventType, doc, old *store.Document, listed bool) Trigger {
	switch {
	case listed:
		return Trigger{Kind: TriggerListed}
	case typ == store.Deleted:
		return Trigger{Kind: TriggerDelete}
	case doc.Meta.Terminating() && (old == nil || !old.Meta.Terminating()):
		return Trigger{Kind: TriggerDelete}
	case old == nil || doc.Meta.Generation != old.Meta.Generation:
		return Trigger{Kind: TriggerSpec, Generation: doc.Meta.Generation}
	}
	return Trigger{Kind: TriggerChange}
}
