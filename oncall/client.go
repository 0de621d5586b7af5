package oncall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/tendhq/tend/history"
	"github.com/tendhq/tend/internal/wait"
	"github.com/tendhq/tend/registry"
	"github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// Errors of the [Client]. Errors of the store (store.ErrNotFound for a
// document that does not exist, store.ErrUnknownKind for a kind the store
// does not hold…) are returned wrapped as they are.
var (
	// ErrInvalidConfig is returned by [New] for a bad configuration, and by
	// an action of a Client that has no Config.Actor.
	ErrInvalidConfig = errors.New("oncall: invalid config")
	// ErrInvalidAction is returned, wrapped with the reason, for an action
	// that does not apply to the document: a step that is not the one that
	// failed, a phase the machine does not declare, nothing to retry…
	ErrInvalidAction = errors.New("oncall: action does not apply")
	// ErrServed is returned by [Client.RemoveFinalizer] while a controller
	// serves the document's kind, unless forced.
	ErrServed = errors.New("oncall: a running controller serves the kind")
	// ErrNotDriven is returned, wrapped, by every action on a document of a
	// kind no machine is registered for (registry.Kind itself, the history
	// kinds, a kind no Manager ran), before anything is written: no
	// controller would carry the action out. The error also matches
	// registry.ErrUnregistered.
	ErrNotDriven = errors.New("oncall: no machine drives the kind")
)

// Outcomes of a command, in the Outcome of its history entries.
const (
	// OutcomeIssued: an operator issued the command.
	OutcomeIssued = "issued"
	// OutcomeApplied: the controller carried the command out.
	OutcomeApplied = "applied"
	// OutcomeRefused: the controller refused the command (Reason says why).
	OutcomeRefused = "refused"
)

// Names of the actions, in the Name of their history entries; a command's
// entries are named by its verb.
const (
	ActionPause           = "pause"
	ActionResume          = "resume"
	ActionRemoveFinalizer = "remove-finalizer"
)

// An action whose write conflicts with another writer's (usually the
// controller) is tried again after a pause drawn around a backoff that
// starts at firstBackoff and doubles up to maxBackoff, for as long as its
// context lasts.
const (
	firstBackoff = 10 * time.Millisecond
	maxBackoff   = time.Second
)

// historyWait bounds how long [Client.Wait] waits, once its command left
// the document's status, for the controller's history entry about it: the
// controller writes its history behind its status, about a second later.
const historyWait = 10 * time.Second

// Config configures a [Client].
type Config struct {
	// Actor names the person or program that acts, recorded in the
	// document's status (Pause.By, Command.By) and in history
	// (Entry.Actor). A Client without one only reads: every action
	// fails with ErrInvalidConfig.
	Actor string
	// History configures the history entries the client records (their
	// retention should match the controllers'). Its metrics registerer,
	// if any, receives the history write metrics.
	History history.RecorderConfig
}

// Client reads documents and registrations and acts on documents, through
// a store: see the package documentation. It is safe for concurrent use.
type Client struct {
	b       store.Backend
	actor   string
	history *history.Recorder
	reader  *history.Reader
	now     func() time.Time
}

// New returns a client of the documents b holds.
func New(b store.Backend, cfg Config) (*Client, error) {
	if b == nil {
		return nil, fmt.Errorf("%w: New needs a store", ErrInvalidConfig)
	}
	rec, err := history.NewRecorder(b, cfg.History)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return &Client{b: b, actor: cfg.Actor, history: rec, reader: history.NewReader(b), now: time.Now}, nil
}

// Registrations returns the registry entries of every kind a Manager
// recorded, by kind. A store not configured with registry.Kind holds none.
func (c *Client) Registrations(ctx context.Context) ([]registry.Entry, error) {
	return registry.List(ctx, c.b)
}

// Registration returns the registry entry of kind, or an error matching
// registry.ErrUnregistered.
func (c *Client) Registration(ctx context.Context, kind string) (registry.Entry, error) {
	return registry.Get(ctx, c.b, kind)
}

// Machine returns the machine registered for kind, built from its
// registry entry's descriptor.
func (c *Client) Machine(ctx context.Context, kind string) (*statemachine.Machine[string, string], error) {
	r, err := c.Registration(ctx, kind)
	if err != nil {
		return nil, err
	}
	return r.Build()
}

// driven returns the registry entry of kind, or an error matching
// [ErrNotDriven] and registry.ErrUnregistered when it has none.
func (c *Client) driven(ctx context.Context, kind string) (registry.Entry, error) {
	r, err := c.Registration(ctx, kind)
	if errors.Is(err, registry.ErrUnregistered) {
		return r, fmt.Errorf("%w: %w", ErrNotDriven, err)
	}
	return r, err
}

// Get returns the document of kind and key.
func (c *Client) Get(ctx context.Context, kind, key string) (View, error) {
	d, err := c.b.Get(ctx, kind, key)
	if err != nil {
		return View{}, fmt.Errorf("oncall: %s %q: %w", kind, key, err)
	}
	return Decode(d)
}

// List returns the documents of kind that opts selects, every page of
// them when opts.Limit is set, in key order.
func (c *Client) List(ctx context.Context, kind string, opts store.ListOptions) ([]View, error) {
	docs, err := c.list(ctx, kind, opts)
	if err != nil {
		return nil, err
	}
	out := make([]View, len(docs))
	for i, d := range docs {
		if out[i], err = Decode(d); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// list returns every document of kind opts selects, following continue
// tokens.
func (c *Client) list(ctx context.Context, kind string, opts store.ListOptions) ([]store.Document, error) {
	docs, _, err := c.listAt(ctx, kind, opts)
	return docs, err
}

// History returns the history of the document of kind and key, oldest
// first; none when the store keeps no histories of kind.
func (c *Client) History(ctx context.Context, kind, key string) ([]history.Entry, error) {
	entries, err := c.reader.History(ctx, kind, key)
	if errors.Is(err, store.ErrUnknownKind) {
		return nil, nil
	}
	return entries, err
}

// Served reports whether a controller serves kind now: whether one of its
// replicas holds an unexpired presence lease (see [Registration.Presence]).
func (c *Client) Served(ctx context.Context, kind string) (bool, error) {
	r, err := c.Registration(ctx, kind)
	if err != nil {
		return false, err
	}
	return c.served(ctx, r)
}

func (c *Client) served(ctx context.Context, r registry.Entry) (bool, error) {
	if r.Presence == "" {
		return false, nil
	}
	leases, err := c.b.ListLeases(ctx, r.Presence)
	if err != nil {
		return false, fmt.Errorf("oncall: reading the leases of %s: %w", r.Kind, err)
	}
	now := c.now()
	return slices.ContainsFunc(leases, func(l store.Lease) bool { return l.Holder != "" && l.Expires.After(now) }), nil
}

// Pause holds the document of kind and key: its controller runs no step
// and makes no decision for it until [Client.Resume]. A step running when
// the hold is written finishes. Pausing a paused document changes nothing.
func (c *Client) Pause(ctx context.Context, kind, key, reason string) error {
	return c.act(ctx, kind, key, history.Entry{Name: ActionPause, Reason: reason}, func(o *View, st map[string]json.RawMessage) (bool, error) {
		if o.Paused != nil {
			return false, nil
		}
		return true, setField(st, "paused", statemachine.Pause{By: c.actor, Reason: reason, At: c.now()})
	})
}

// Resume lifts the hold [Client.Pause] put on the document of kind and
// key; its controller reconciles it at once. Resuming a document that is
// not paused changes nothing.
func (c *Client) Resume(ctx context.Context, kind, key string) error {
	return c.act(ctx, kind, key, history.Entry{Name: ActionResume}, func(o *View, st map[string]json.RawMessage) (bool, error) {
		if o.Paused == nil {
			return false, nil
		}
		delete(st, "paused")
		return true, nil
	})
}

// Retry asks the controller of the document of kind and key to run its
// failed step again now, forgetting its failed attempts, or, in the Fault
// phase, to begin its failed operation again from its checkpoint (see
// statemachine.VerbRetry).
func (c *Client) Retry(ctx context.Context, kind, key string) (statemachine.Command, error) {
	return c.command(ctx, kind, key, statemachine.Command{Verb: statemachine.VerbRetry}, func(m *statemachine.Machine[string, string], o View) error {
		if _, failed := o.FailedStep(m); !failed && !o.InFault(m) {
			return errors.New("nothing to retry: no step is failing and the document is not in Fault")
		}
		return nil
	})
}

// Skip asks the controller of the document of kind and key to count step,
// the step that failed, as done and go on (see statemachine.VerbSkip).
func (c *Client) Skip(ctx context.Context, kind, key, step string) (statemachine.Command, error) {
	return c.command(ctx, kind, key, statemachine.Command{Verb: statemachine.VerbSkip, Step: step}, func(m *statemachine.Machine[string, string], o View) error {
		failed, ok := o.FailedStep(m)
		switch {
		case !slices.Contains(m.Steps(), step):
			return fmt.Errorf("the machine has no step %q", step)
		case !ok:
			return errors.New("no step has failed")
		case failed != step:
			return fmt.Errorf("step %q did not fail: %q did", step, failed)
		}
		return nil
	})
}

// Move asks the controller of the document of kind and key, in the Fault
// phase, to move it to phase, a phase of its machine that is not
// transitional (see statemachine.VerbMove).
func (c *Client) Move(ctx context.Context, kind, key, phase string) (statemachine.Command, error) {
	return c.command(ctx, kind, key, statemachine.Command{Verb: statemachine.VerbMove, Phase: phase}, func(m *statemachine.Machine[string, string], o View) error {
		ps, ok := m.Spec(phase)
		switch {
		case !ok:
			return fmt.Errorf("the machine has no phase %q", phase)
		case ps.Type == statemachine.Transitional || ps.Type == statemachine.Fault:
			return fmt.Errorf("phase %q is %v: a move goes to a resting or terminal phase", phase, ps.Type)
		case !o.InFault(m):
			return fmt.Errorf("the document is in %s, not in Fault", o.Phase)
		}
		return nil
	})
}

// Request asks the controller of the document of kind and key to serve
// the machine's one-shot request name once (see statemachine.VerbRequest).
func (c *Client) Request(ctx context.Context, kind, key, name string) (statemachine.Command, error) {
	return c.command(ctx, kind, key, statemachine.Command{Verb: statemachine.VerbRequest, Request: name}, func(m *statemachine.Machine[string, string], _ View) error {
		if !slices.Contains(m.Requests(), name) {
			return fmt.Errorf("the machine declares no request %q", name)
		}
		return nil
	})
}

// RemoveFinalizer removes finalizer from the document of kind and key, for
// a document whose controller is gone: a finalizer of a kind a controller
// serves (see [Client.Served]) is refused with ErrServed unless force is
// set, as that controller removes it itself once it has cleaned up. A
// document whose deletion was requested is deleted with its last
// finalizer: what the finalizer guarded is then left behind.
func (c *Client) RemoveFinalizer(ctx context.Context, kind, key, finalizer string, force bool) error {
	if err := c.canAct(); err != nil {
		return err
	}
	r, err := c.driven(ctx, kind)
	if err != nil {
		return err
	}
	if !force {
		served, err := c.served(ctx, r)
		if err != nil {
			return err
		}
		if served {
			return fmt.Errorf("%w: %s (its controller removes %s itself; force to remove it anyway)", ErrServed, kind, finalizer)
		}
	}
	var doc store.Document
	err = c.retry(ctx, func() error {
		var err error
		if doc, err = c.b.Get(ctx, kind, key); err != nil {
			return err
		}
		if !doc.Meta.HasFinalizer(finalizer) {
			return fmt.Errorf("%w: %s %q has no finalizer %q", ErrInvalidAction, kind, key, finalizer)
		}
		next := doc
		next.Meta.Finalizers = slices.DeleteFunc(slices.Clone(doc.Meta.Finalizers), func(f string) bool { return f == finalizer })
		_, err = c.b.UpdateSpec(ctx, next)
		return err
	})
	if err != nil {
		return fmt.Errorf("oncall: removing finalizer %s of %s %q: %w", finalizer, kind, key, err)
	}
	reason := ""
	if force {
		reason = "forced"
	}
	return c.record(ctx, kind, key, doc.Meta.UID, history.Entry{Name: ActionRemoveFinalizer, Step: finalizer, Reason: reason})
}

// Wait waits until the controller of the document of kind and key carried
// out or refused the command id, and returns the history entry recording
// it (Outcome [OutcomeApplied] or [OutcomeRefused]). When the store keeps
// no history of kind, the entry has only Command and Outcome "" set.
func (c *Client) Wait(ctx context.Context, kind, key, id string) (history.Entry, error) {
	err := c.watch(ctx, kind, key, func(d store.Document) (bool, error) {
		o, err := Decode(d)
		return !slices.ContainsFunc(o.Commands, func(cmd statemachine.Command) bool { return cmd.ID == id }), err
	})
	if err != nil {
		return history.Entry{}, err
	}
	hctx, cancel := context.WithTimeout(ctx, historyWait)
	defer cancel()
	var found history.Entry
	err = c.watch(hctx, history.KindFor(kind), key, func(d store.Document) (bool, error) {
		entries, err := c.History(ctx, kind, key)
		i := slices.IndexFunc(entries, func(e history.Entry) bool {
			return e.Command == id && (e.Outcome == OutcomeApplied || e.Outcome == OutcomeRefused)
		})
		if i >= 0 {
			found = entries[i]
		}
		return i >= 0, err
	})
	switch {
	case err == nil:
		return found, nil
	case ctx.Err() == nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrUnknownKind)):
		return history.Entry{Type: history.Operator, Command: id}, nil
	}
	return history.Entry{}, err
}

// watch returns when done holds for the document of kind and key, checked
// on each of its changes.
func (c *Client) watch(ctx context.Context, kind, key string, done func(store.Document) (bool, error)) error {
	for {
		d, err := c.b.Get(ctx, kind, key)
		if err != nil {
			return fmt.Errorf("oncall: %s %q: %w", kind, key, err)
		}
		if ok, err := done(d); ok || err != nil {
			return err
		}
		w, err := c.b.Watch(ctx, kind, d.Meta.Revision)
		if err != nil {
			return fmt.Errorf("oncall: watching %s: %w", kind, err)
		}
		err = c.next(ctx, w, key)
		w.Close()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil && !errors.Is(err, store.ErrCompacted) {
			return fmt.Errorf("oncall: watching %s: %w", kind, err)
		}
	}
}

// next returns at the next event of key on w.
func (c *Client) next(ctx context.Context, w store.Watch, key string) error {
	for {
		ev, err := w.Next(ctx)
		if err != nil || ev.Document.Meta.Key == key {
			return err
		}
	}
}

// command checks cmd against the document's machine with check and
// appends it to the document's pending commands.
func (c *Client) command(ctx context.Context, kind, key string, cmd statemachine.Command, check func(*statemachine.Machine[string, string], View) error) (statemachine.Command, error) {
	if err := c.canAct(); err != nil {
		return statemachine.Command{}, err
	}
	r, err := c.driven(ctx, kind)
	if err != nil {
		return statemachine.Command{}, err
	}
	m, err := r.Build()
	if err != nil {
		return statemachine.Command{}, err
	}
	cmd.By, cmd.At = c.actor, c.now()
	entry := history.Entry{Name: string(cmd.Verb), Outcome: OutcomeIssued, Step: cmd.Step, To: cmd.Phase}
	if cmd.Request != "" {
		entry.Reason = "request " + cmd.Request
	}
	err = c.act(ctx, kind, key, entry, func(o *View, st map[string]json.RawMessage) (bool, error) {
		if err := check(m, *o); err != nil {
			return false, fmt.Errorf("%w: %s %q: %w", ErrInvalidAction, kind, key, err)
		}
		cmd.ID = commandID(o, cmd.At)
		return true, setField(st, "commands", append(slices.Clone(o.Commands), cmd))
	}, func(e *history.Entry) { e.ID, e.Command = history.IssuedID(cmd.ID), cmd.ID })
	if err != nil {
		return statemachine.Command{}, err
	}
	return cmd, nil
}

// commandID returns an id for a new command of o, unique among its
// commands: its revision and time, so that ids grow.
func commandID(o *View, at time.Time) string {
	return strconv.FormatInt(o.Meta.Revision, 10) + "-" + strconv.FormatInt(at.UnixNano(), 36)
}

// act applies edit to the status of the document of kind and key and
// writes it, conditional on the revision read, trying again when another
// writer came first; when edit changed something it records e, completed
// by each of fix, in the document's history.
func (c *Client) act(ctx context.Context, kind, key string, e history.Entry, edit func(*View, map[string]json.RawMessage) (bool, error), fix ...func(*history.Entry)) error {
	if err := c.canAct(); err != nil {
		return err
	}
	if _, err := c.driven(ctx, kind); err != nil {
		return err
	}
	var (
		doc     store.Document
		changed bool
	)
	err := c.retry(ctx, func() error {
		var err error
		if doc, err = c.b.Get(ctx, kind, key); err != nil {
			return err
		}
		o, err := Decode(doc)
		if err != nil {
			return err
		}
		st := map[string]json.RawMessage{}
		if len(doc.Status) > 0 && string(doc.Status) != "null" {
			if err := json.Unmarshal(doc.Status, &st); err != nil {
				return fmt.Errorf("the status is not a JSON object: %w", err)
			}
		}
		if changed, err = edit(&o, st); err != nil || !changed {
			return err
		}
		if doc.Status, err = json.Marshal(st); err != nil {
			return err
		}
		e.Phase = o.Phase
		_, err = c.b.UpdateStatus(ctx, doc)
		return err
	})
	if err != nil {
		return fmt.Errorf("oncall: %s of %s %q: %w", e.Name, kind, key, err)
	}
	if !changed {
		return nil
	}
	for _, f := range fix {
		f(&e)
	}
	return c.record(ctx, kind, key, doc.Meta.UID, e)
}

// retry runs write until it does not fail with store.ErrConflict, or ctx
// ends, backing off between attempts (jittered, from firstBackoff doubling
// up to maxBackoff) so that a busy controller's writes get through.
func (c *Client) retry(ctx context.Context, write func() error) error {
	backoff := firstBackoff
	for {
		err := write()
		if !errors.Is(err, store.ErrConflict) {
			return err
		}
		if werr := wait.Sleep(ctx, backoff/2+rand.N(backoff)); werr != nil {
			return errors.Join(err, werr)
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// record appends an operator entry to the document's history: a store that
// keeps no history of the kind records nothing.
func (c *Client) record(ctx context.Context, kind, key, uid string, e history.Entry) error {
	e.Type, e.Actor = history.Operator, c.actor
	err := c.history.Append(ctx, kind, key, uid, e)
	if err != nil && !errors.Is(err, store.ErrUnknownKind) {
		return fmt.Errorf("oncall: %s of %s %q is done but not recorded in its history: %w", e.Name, kind, key, err)
	}
	return nil
}

func (c *Client) canAct() error {
	if c.actor == "" {
		return fmt.Errorf("%w: the client has no Actor: it only reads", ErrInvalidConfig)
	}
	return nil
}

func setField(st map[string]json.RawMessage, name string, v any) error {
	b, err := json.Marshal(v)
	st[name] = b
	return err
}
