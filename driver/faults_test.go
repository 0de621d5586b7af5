package driver_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tendhq/tend/driver"
	sm "github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// A fault is a defect planted around a driver, never in it: it wraps the
// store the driver reads and writes, and the tests that check the driver
// prove they catch it. Faults see the gateway's status decoded.
type fault func(b store.Backend, coll *store.Collection[gwSpec, gwStatus]) store.Backend

// faultyStore is the store a fault gives the driver: it rewrites the
// status of each document the driver reads (read), rewrites or
// loses each status it writes (write), and drops watch events (unseen).
// A status never written is passed as it is.
type faultyStore struct {
	store.Backend
	coll *store.Collection[gwSpec, gwStatus] // decodes and encodes statuses

	// read rewrites the status of obj, a document the driver reads; nil:
	// none.
	read func(obj *gwObject)
	// write rewrites st, a status the driver writes over the document
	// stored, or reports it lost: acknowledged as written, and never
	// stored. conflict is whether the write is based on a revision no
	// longer stored (it fails, whatever write does). Nil: none.
	write func(stored *gwObject, st *gwStatus, conflict bool) (lost bool)
	// unseen reports whether the driver's watch loses an event of key;
	// wrote is whether the driver wrote the document before. Nil: none.
	unseen func(key string, wrote bool) bool

	mu    sync.Mutex      // guards wrote
	wrote map[string]bool // the keys the driver wrote
}

func (b *faultyStore) Get(ctx context.Context, kind, key string) (store.Document, error) {
	doc, err := b.Backend.Get(ctx, kind, key)
	if err != nil {
		return doc, err
	}
	return b.rewrite(doc)
}

func (b *faultyStore) List(ctx context.Context, kind string, opts store.ListOptions) (store.ListResult, error) {
	res, err := b.Backend.List(ctx, kind, opts)
	for i := range res.Items {
		if err == nil {
			res.Items[i], err = b.rewrite(res.Items[i])
		}
	}
	return res, err
}

// rewrite returns doc as the driver reads it: its status rewritten by read.
func (b *faultyStore) rewrite(doc store.Document) (store.Document, error) {
	if b.read == nil || len(doc.Status) == 0 {
		return doc, nil
	}
	doc = doc.Clone()
	obj, err := b.coll.Decode(doc)
	if err != nil {
		return doc, err
	}
	b.read(obj)
	enc, err := b.coll.EncodeStatus(obj)
	doc.Status = enc.Status
	return doc, err
}

func (b *faultyStore) UpdateStatus(ctx context.Context, doc store.Document) (store.Document, error) {
	b.written(doc.Meta.Key)
	if b.write == nil {
		return b.Backend.UpdateStatus(ctx, doc)
	}
	cur, err := b.Backend.Get(ctx, doc.Meta.Kind, doc.Meta.Key)
	if err != nil {
		return b.Backend.UpdateStatus(ctx, doc)
	}
	stored, err1 := b.coll.Decode(cur)
	next, err2 := b.coll.Decode(doc)
	if err := errors.Join(err1, err2); err != nil {
		return store.Document{}, err
	}
	conflict := cur.Meta.Revision != doc.Meta.Revision
	if b.write(stored, &next.Status, conflict) && !conflict {
		cur.Status = doc.Status
		return cur, nil
	}
	enc, err := b.coll.EncodeStatus(next)
	if err != nil {
		return store.Document{}, err
	}
	doc.Status = enc.Status
	return b.Backend.UpdateStatus(ctx, doc)
}

func (b *faultyStore) UpdateSpec(ctx context.Context, doc store.Document) (store.Document, error) {
	b.written(doc.Meta.Key)
	return b.Backend.UpdateSpec(ctx, doc)
}

// written records that the driver wrote the document under key.
func (b *faultyStore) written(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.wrote == nil {
		b.wrote = map[string]bool{}
	}
	b.wrote[key] = true
}

func (b *faultyStore) Watch(ctx context.Context, kind string, from int64) (store.Watch, error) {
	w, err := b.Backend.Watch(ctx, kind, from)
	if err != nil || b.unseen == nil && b.read == nil {
		return w, err
	}
	return &lossyWatch{Watch: w, b: b}, nil
}

// lossyWatch is a watch that loses the events its store's unseen picks, and
// rewrites the others as its store's reads.
type lossyWatch struct {
	store.Watch
	b *faultyStore
}

func (w *lossyWatch) Next(ctx context.Context) (store.Event, error) {
	for {
		ev, err := w.Watch.Next(ctx)
		if err != nil {
			return ev, err
		}
		key := ev.Document.Meta.Key
		w.b.mu.Lock()
		wrote := w.b.wrote[key]
		w.b.mu.Unlock()
		if w.b.unseen == nil || !w.b.unseen(key, wrote) {
			if ev.Type != store.Deleted {
				ev.Document, err = w.b.rewrite(ev.Document)
			}
			return ev, err
		}
	}
}

// driverWith returns a driver configured by cfg over the fixture's store
// with fault planted around it (none when fault is nil). The fixture's own
// collection still reads and writes the store as it is.
func (f *gwFixture) driverWith(t testing.TB, cfg driver.Config[gwSpec, gwStatus], plant fault) *driver.Driver[gwSpec, gwStatus] {
	t.Helper()
	if plant == nil {
		return f.driver(t, cfg)
	}
	coll, err := store.NewCollection[gwSpec, gwStatus](plant(f.coll.Backend(), f.coll), "ApiGateway", store.CollectionConfig{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := driver.New(coll, f.m, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// The faults the driver's tests plant, each named after what it makes the
// driver do.

// pauseIgnored hides an operator's pause from the driver's reads, and keeps
// the pause stored in its writes: the driver drives a paused document as if
// it were not.
func pauseIgnored(b store.Backend, coll *store.Collection[gwSpec, gwStatus]) store.Backend {
	return &faultyStore{Backend: b, coll: coll,
		read: func(obj *gwObject) { obj.Status.Paused = nil },
		write: func(stored *gwObject, st *gwStatus, _ bool) bool {
			st.Paused = stored.Status.Paused
			return false
		}}
}

// commandLost hides the operator's commands from the driver's reads: the
// driver's next write removes them without carrying them out.
func commandLost(b store.Backend, coll *store.Collection[gwSpec, gwStatus]) store.Backend {
	return &faultyStore{Backend: b, coll: coll, read: func(obj *gwObject) { obj.Status.Commands = nil }}
}

// operatorEcho loses every watch event of a document the driver wrote
// before, as if each were the driver's own: an operator's write does not
// queue it.
func operatorEcho(b store.Backend, coll *store.Collection[gwSpec, gwStatus]) store.Backend {
	return &faultyStore{Backend: b, coll: coll, unseen: func(_ string, wrote bool) bool { return wrote }}
}

// checkpointDropped loses each status write that leaves an operation in
// flight: a step runs before the checkpoint of the step before it is
// stored, and checkpoints ride on the write that settles the document.
func checkpointDropped(b store.Backend, coll *store.Collection[gwSpec, gwStatus]) store.Backend {
	return &faultyStore{Backend: b, coll: coll, write: func(_ *gwObject, st *gwStatus, _ bool) bool { return st.Operation != nil }}
}

// idUnstored loses each status write that stores a new operation's id
// other than the document's UID (which is stored with the document): the
// operation's first step runs before its id is stored.
func idUnstored(b store.Backend, coll *store.Collection[gwSpec, gwStatus]) store.Backend {
	return &faultyStore{Backend: b, coll: coll, write: func(stored *gwObject, st *gwStatus, _ bool) bool {
		return st.Operation != nil && st.Operation.ID != stored.UID &&
			(stored.Status.Operation == nil || stored.Status.Operation.ID != st.Operation.ID)
	}}
}

// retryTimeLost hides the retry time of a failed step from the driver's
// reads, and writes the document's labels after each status write that
// stores one, as another tool might: the write queues the document again at
// once, and the driver retries the step before its backoff allows.
func retryTimeLost(b store.Backend, coll *store.Collection[gwSpec, gwStatus]) store.Backend {
	fs := &faultyStore{Backend: b, coll: coll, read: func(obj *gwObject) {
		if op := obj.Status.Operation; op != nil {
			retry := *op
			retry.RetryAt = time.Time{}
			obj.Status.Operation = &retry
		}
	}}
	return &touchedStore{faultyStore: fs, after: func(st *gwStatus) bool {
		return st.Operation != nil && !st.Operation.RetryAt.IsZero()
	}}
}

// touchedStore is a faulty store that writes the labels of a document
// after each status write of the driver that after picks, as another tool
// might: the document changes under the driver, which queues it again.
type touchedStore struct {
	*faultyStore
	after func(st *gwStatus) bool
}

func (b *touchedStore) UpdateStatus(ctx context.Context, doc store.Document) (store.Document, error) {
	written, err := b.faultyStore.UpdateStatus(ctx, doc)
	if err != nil {
		return written, err
	}
	obj, err := b.coll.Decode(written)
	if err != nil || !b.after(&obj.Status) {
		return written, err
	}
	touched := written.Clone()
	if touched.Meta.Labels == nil {
		touched.Meta.Labels = map[string]string{}
	}
	touched.Meta.Labels["touched"] = fmt.Sprint(written.Meta.Revision)
	_, _ = b.Backend.UpdateSpec(ctx, touched) // a conflict: someone else wrote it already
	return written, nil
}

// requestsServedUnseen shows the driver each request token the document
// carries (in its spec, or an operator's request command) as served
// already: the driver's next write records it served without an operation
// carrying it.
func requestsServedUnseen(b store.Backend, coll *store.Collection[gwSpec, gwStatus]) store.Backend {
	return &faultyStore{Backend: b, coll: coll, read: func(obj *gwObject) {
		st, spec := &obj.Status.Status, obj.Spec.Requests()
		names := slices.Collect(maps.Keys(spec))
		for _, c := range st.Commands {
			if c.Verb == sm.VerbRequest {
				names = append(names, c.Request)
			}
		}
		for _, name := range names {
			*st = st.Request(name, slices.Concat(spec[name], st.RequestCommands(name))...)
		}
		for i := range st.Requests {
			st.Requests[i].Served = slices.Clone(st.Requests[i].Tokens)
		}
	}}
}

// outcomeLost loses the first status write of a document after one that
// conflicted: the outcome of a step, recorded over a write made while the
// step ran, is acknowledged and never stored, and the driver, deciding
// again on what is stored, runs the step again before its backoff allows;
// or, when the lost write began the next operation, runs that operation's
// first step under an id never stored.
func outcomeLost(b store.Backend, coll *store.Collection[gwSpec, gwStatus]) store.Backend {
	var mu sync.Mutex // guards conflicted
	conflicted := map[string]bool{}
	return &faultyStore{Backend: b, coll: coll, write: func(stored *gwObject, _ *gwStatus, conflict bool) bool {
		mu.Lock()
		defer mu.Unlock()
		lost := !conflict && conflicted[stored.Key]
		conflicted[stored.Key] = conflict
		return lost
	}}
}

// operatorOverwritten makes the driver's first status write after one that
// conflicted carry the operator's fields (pause, commands) of the status the
// driver last read or wrote before the conflict: a step's outcome is
// written over a status an operator changed while the step ran, with the
// operator's fields as they were when it started.
func operatorOverwritten(b store.Backend, coll *store.Collection[gwSpec, gwStatus]) store.Backend {
	type fields struct {
		paused   *sm.Pause
		commands []sm.Command
	}
	var mu sync.Mutex // guards last and frozen
	last, frozen := map[string]fields{}, map[string]fields{}
	seen := func(key string, st *gwStatus) {
		mu.Lock()
		defer mu.Unlock()
		last[key] = fields{st.Paused, slices.Clone(st.Commands)}
	}
	return &faultyStore{Backend: b, coll: coll, read: func(obj *gwObject) { seen(obj.Key, &obj.Status) },
		write: func(stored *gwObject, st *gwStatus, conflict bool) bool {
			key := stored.Key
			mu.Lock()
			if conflict {
				frozen[key] = last[key]
			} else if was, ok := frozen[key]; ok {
				delete(frozen, key)
				st.Paused, st.Commands = was.paused, was.commands
			}
			mu.Unlock()
			if !conflict {
				seen(key, st)
			}
			return false
		}}
}
