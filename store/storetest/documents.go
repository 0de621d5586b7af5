package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/tendhq/tend/store"
)

// checkCreateGet: Create sets the backend's fields, Get returns what Create
// returned, a second Create fails with ErrAlreadyExists, and a missing
// document is ErrNotFound naming it.
func checkCreateGet(ctx context.Context, b store.Backend) error {
	in := newDoc(widget, "team-a/gw-1", 1)
	in.Meta.Labels = map[string]string{"app": "gw", "example.com/tier": "edge"}
	in.Meta.Finalizers = []string{"example.com/cleanup"}
	in.Meta.Owners = []store.OwnerRef{{Kind: gadget, Key: "g", UID: "owner-uid", Controller: true, BlockOwnerDeletion: true}}
	got, err := b.Create(ctx, in)
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	m := got.Meta
	switch {
	case m.UID == "":
		return errors.New("create: no UID assigned")
	case m.Revision <= 0:
		return fmt.Errorf("create: revision %d, want > 0", m.Revision)
	case m.Generation != 1:
		return fmt.Errorf("create: generation %d, want 1", m.Generation)
	case m.CreatedAt.IsZero() || m.UpdatedAt.IsZero():
		return errors.New("create: times not set")
	case m.Terminating():
		return errors.New("create: new document is terminating")
	}
	want := in
	want.Meta.UID, want.Meta.Revision, want.Meta.Generation = m.UID, m.Revision, 1
	want.Meta.CreatedAt, want.Meta.UpdatedAt = m.CreatedAt, m.UpdatedAt
	if diff := sameDoc(got, want); diff != "" {
		return fmt.Errorf("create returned a document with %s", diff)
	}
	if err := expectStored(ctx, b, "after create", want); err != nil {
		return err
	}
	other, err := b.Create(ctx, newDoc(widget, "team-a/gw-2", 2))
	if err != nil {
		return fmt.Errorf("create second: %w", err)
	}
	if other.Meta.UID == m.UID {
		return fmt.Errorf("two documents share UID %q", m.UID)
	}
	if other.Meta.Revision <= m.Revision {
		return fmt.Errorf("revisions do not grow: %d then %d", m.Revision, other.Meta.Revision)
	}
	_, err = b.Create(ctx, newDoc(widget, "team-a/gw-1", 9))
	if err := wantErr("create existing", err, store.ErrAlreadyExists, widget, "team-a/gw-1"); err != nil {
		return err
	}
	if err := expectStored(ctx, b, "after refused create", want); err != nil {
		return err
	}
	// The same key in another kind is another document.
	if _, err := b.Create(ctx, newDoc(gadget, "team-a/gw-1", 3)); err != nil {
		return fmt.Errorf("create same key in another kind: %w", err)
	}
	if err := expectAbsent(ctx, b, "missing", widget, "team-a/none"); err != nil {
		return err
	}
	long := strings.Repeat("k", store.MaxKeyLen)
	d, err := b.Create(ctx, newDoc(widget, long, 4))
	if err != nil {
		return fmt.Errorf("create with a %d-byte key: %w", len(long), err)
	}
	return expectStored(ctx, b, "longest key", d)
}

// checkCopies: changing a document returned by the backend, or one passed
// to it, never changes what is stored.
func checkCopies(ctx context.Context, b store.Backend) error {
	in := newDoc(widget, "copy", 1)
	in.Meta.Labels = map[string]string{"a": "1"}
	in.Meta.Finalizers = []string{"example.com/f"}
	in.Meta.Owners = []store.OwnerRef{{Kind: gadget, Key: "o", UID: "u1"}}
	got, err := b.Create(ctx, in)
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	want := got
	want.Spec = spec(1)
	want.Meta.Labels = map[string]string{"a": "1"}
	want.Meta.Finalizers = []string{"example.com/f"}
	want.Meta.Owners = []store.OwnerRef{{Kind: gadget, Key: "o", UID: "u1"}}
	mutate := func(d store.Document) {
		if len(d.Spec) > 0 {
			d.Spec[0] = 'X'
		}
		if len(d.Status) > 0 {
			d.Status[0] = 'X'
		}
		if d.Meta.Labels != nil {
			d.Meta.Labels["a"] = "changed"
			d.Meta.Labels["new"] = "x"
		}
		if len(d.Meta.Finalizers) > 0 {
			d.Meta.Finalizers[0] = "example.com/changed"
		}
		if len(d.Meta.Owners) > 0 {
			d.Meta.Owners[0].UID = "changed"
		}
	}
	mutate(in)
	mutate(got)
	if err := expectStored(ctx, b, "after changing the created and returned documents", want); err != nil {
		return err
	}
	g, err := b.Get(ctx, widget, "copy")
	if err != nil {
		return fmt.Errorf("get: %w", err)
	}
	mutate(g)
	if err := expectStored(ctx, b, "after changing a document from Get", want); err != nil {
		return err
	}
	res, err := b.List(ctx, widget, store.ListOptions{})
	if err != nil {
		return fmt.Errorf("list: %w", err)
	}
	for _, d := range res.Items {
		mutate(d)
	}
	if err := expectStored(ctx, b, "after changing documents from List", want); err != nil {
		return err
	}
	up := want
	up.Spec, up.Meta.Labels = spec(2), map[string]string{"a": "2"}
	up.Meta.Finalizers = []string{"example.com/f"}
	up.Meta.Owners = []store.OwnerRef{{Kind: gadget, Key: "o", UID: "u1"}}
	st, err := b.UpdateSpec(ctx, up)
	if err != nil {
		return fmt.Errorf("update spec: %w", err)
	}
	stored := st
	stored.Spec, stored.Meta.Labels = spec(2), map[string]string{"a": "2"}
	stored.Meta.Finalizers = []string{"example.com/f"}
	stored.Meta.Owners = []store.OwnerRef{{Kind: gadget, Key: "o", UID: "u1"}}
	mutate(up)
	mutate(st)
	if err := expectStored(ctx, b, "after changing an updated document", stored); err != nil {
		return err
	}
	status := cloneDoc(stored)
	status.Status = spec(7)
	st, err = b.UpdateStatus(ctx, status)
	if err != nil {
		return fmt.Errorf("update status: %w", err)
	}
	stored.Meta, stored.Status = st.Meta, spec(7)
	stored.Meta.Labels = map[string]string{"a": "2"}
	stored.Meta.Finalizers = []string{"example.com/f"}
	stored.Meta.Owners = []store.OwnerRef{{Kind: gadget, Key: "o", UID: "u1"}}
	mutate(status)
	mutate(st)
	if err := expectStored(ctx, b, "after changing a status update", stored); err != nil {
		return err
	}
	// A write that changes nothing returns the stored document, which may
	// share memory with the document given but never with the store. The
	// last write is given only what UpdateStatus reads: it must not return
	// the given document's empty spec, labels, finalizers or owners.
	bare := store.Document{Meta: store.Meta{Kind: widget, Key: "copy", Revision: stored.Meta.Revision}, Status: spec(7)}
	for _, w := range []struct {
		what  string
		write func(context.Context, store.Document) (store.Document, error)
		given store.Document
	}{
		{"status update that changes nothing", b.UpdateStatus, cloneDoc(stored)},
		{"spec update that changes nothing", b.UpdateSpec, cloneDoc(stored)},
		{"status update that changes nothing, given only the status", b.UpdateStatus, bare},
	} {
		got, err := w.write(ctx, w.given)
		if err != nil {
			return fmt.Errorf("%s: %w", w.what, err)
		}
		if diff := sameDoc(got, stored); diff != "" {
			return fmt.Errorf("%s: returned a document with %s", w.what, diff)
		}
		mutate(w.given)
		mutate(got)
		if err := expectStored(ctx, b, "after changing a "+w.what+" and its result", stored); err != nil {
			return err
		}
	}
	return nil
}

// checkConflicts: every write with a stale revision or UID fails with
// ErrConflict and writes nothing; updates of missing documents fail with
// ErrNotFound.
func checkConflicts(ctx context.Context, b store.Backend) error {
	v1, err := b.Create(ctx, newDoc(widget, "c", 1))
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	up := v1
	up.Spec = spec(2)
	v2, err := b.UpdateSpec(ctx, up)
	if err != nil {
		return fmt.Errorf("update spec: %w", err)
	}
	stale := v1
	stale.Spec = spec(3)
	_, err = b.UpdateSpec(ctx, stale)
	if err := wantErr("update spec at a stale revision", err, store.ErrConflict, widget, "c"); err != nil {
		return err
	}
	stale.Status = spec(3)
	_, err = b.UpdateStatus(ctx, stale)
	if err := wantErr("update status at a stale revision", err, store.ErrConflict, widget, "c"); err != nil {
		return err
	}
	err = b.Delete(ctx, widget, "c", store.DeleteOptions{Revision: v1.Meta.Revision})
	if err := wantErr("delete at a stale revision", err, store.ErrConflict, widget, "c"); err != nil {
		return err
	}
	err = b.Delete(ctx, widget, "c", store.DeleteOptions{UID: "another-uid"})
	if err := wantErr("delete with another UID", err, store.ErrConflict, widget, "c"); err != nil {
		return err
	}
	if err := expectStored(ctx, b, "after refused writes", v2); err != nil {
		return err
	}
	future := v2
	future.Meta.Revision += 1000
	_, err = b.UpdateStatus(ctx, future)
	if err := wantErr("update status at a future revision", err, store.ErrConflict, widget, "c"); err != nil {
		return err
	}
	missing := newDoc(widget, "missing", 1)
	missing.Meta.Revision = v2.Meta.Revision
	_, err = b.UpdateSpec(ctx, missing)
	if err := wantErr("update spec of a missing document", err, store.ErrNotFound, widget, "missing"); err != nil {
		return err
	}
	_, err = b.UpdateStatus(ctx, missing)
	if err := wantErr("update status of a missing document", err, store.ErrNotFound, widget, "missing"); err != nil {
		return err
	}
	err = b.Delete(ctx, widget, "missing", store.DeleteOptions{})
	if err := wantErr("delete of a missing document", err, store.ErrNotFound, widget, "missing"); err != nil {
		return err
	}
	// A document deleted and created again is another document: writes
	// based on the old one conflict.
	if err := b.Delete(ctx, widget, "c", store.DeleteOptions{Revision: v2.Meta.Revision, UID: v2.Meta.UID}); err != nil {
		return fmt.Errorf("delete with matching preconditions: %w", err)
	}
	v3, err := b.Create(ctx, newDoc(widget, "c", 5))
	if err != nil {
		return fmt.Errorf("create again: %w", err)
	}
	if v3.Meta.UID == v2.Meta.UID {
		return fmt.Errorf("a re-created document reuses UID %q", v3.Meta.UID)
	}
	old := v2
	old.Spec = spec(6)
	_, err = b.UpdateSpec(ctx, old)
	if err := wantErr("update spec of a re-created document", err, store.ErrConflict, widget, "c"); err != nil {
		return err
	}
	err = b.Delete(ctx, widget, "c", store.DeleteOptions{UID: v2.Meta.UID})
	if err := wantErr("delete of a re-created document by old UID", err, store.ErrConflict, widget, "c"); err != nil {
		return err
	}
	return expectStored(ctx, b, "re-created document", v3)
}

// Concurrent writers of checkNoLostUpdate.
const (
	writers   = 8
	increment = 10
)

// checkNoLostUpdate: writers increment a counter in the spec by
// read-modify-write, retrying on ErrConflict; no increment is lost. All
// writers read the same revision before their first write, so a backend
// that ignores the precondition loses updates every time.
func checkNoLostUpdate(ctx context.Context, b store.Backend) error {
	if _, err := b.Create(ctx, newDoc(widget, "counter", 0)); err != nil {
		return fmt.Errorf("create: %w", err)
	}
	var (
		read  sync.WaitGroup
		wg    sync.WaitGroup
		start = make(chan struct{})
		errs  = make(chan error, writers)
	)
	read.Add(writers)
	for range writers {
		wg.Go(func() {
			first := true
			for done := 0; done < increment; {
				d, err := b.Get(ctx, widget, "counter")
				if err != nil {
					errs <- fmt.Errorf("get: %w", err)
					break
				}
				n, err := parse(d.Spec)
				if err != nil {
					errs <- err
					break
				}
				if first {
					first = false
					read.Done()
					<-start
				}
				d.Spec = spec(n + 1)
				_, err = b.UpdateSpec(ctx, d)
				switch {
				case err == nil:
					done++
				case errors.Is(err, store.ErrConflict):
				default:
					errs <- fmt.Errorf("update spec: %w", err)
					return
				}
			}
		})
	}
	read.Wait()
	close(start)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	d, err := b.Get(ctx, widget, "counter")
	if err != nil {
		return fmt.Errorf("get: %w", err)
	}
	n, err := parse(d.Spec)
	if err != nil {
		return err
	}
	if want := writers * increment; n != want {
		return fmt.Errorf("lost updates: counter is %d after %d successful increments", n, want)
	}
	if want := int64(writers*increment + 1); d.Meta.Generation != want {
		return fmt.Errorf("generation %d after %d spec changes, want %d", d.Meta.Generation, writers*increment, want)
	}
	return nil
}

// checkGeneration: generation starts at 1 and grows only when the spec
// bytes change; a write that changes nothing keeps the revision and
// produces no event.
func checkGeneration(ctx context.Context, b store.Backend) error {
	d, err := b.Create(ctx, newDoc(widget, "g", 1))
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	w, err := b.Watch(ctx, widget, d.Meta.Revision)
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	defer w.Close()
	var revs []int64 // revisions of the real changes, in order
	step := func(what string, write func(store.Document) (store.Document, error), gen int64, changes bool) error {
		before := d
		got, err := write(before)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		switch {
		case got.Meta.Generation != gen:
			return fmt.Errorf("%s: generation %d, want %d", what, got.Meta.Generation, gen)
		case changes && got.Meta.Revision <= before.Meta.Revision:
			return fmt.Errorf("%s: revision %d did not grow from %d", what, got.Meta.Revision, before.Meta.Revision)
		case !changes && got.Meta.Revision != before.Meta.Revision:
			return fmt.Errorf("%s changed nothing but moved the revision from %d to %d", what, before.Meta.Revision, got.Meta.Revision)
		}
		if changes {
			revs = append(revs, got.Meta.Revision)
		}
		d = got
		return expectStored(ctx, b, what, d)
	}
	writeSpec := func(n int, labels map[string]string) func(store.Document) (store.Document, error) {
		return func(d store.Document) (store.Document, error) {
			d.Spec, d.Meta.Labels = spec(n), labels
			return b.UpdateSpec(ctx, d)
		}
	}
	writeStatus := func(n int) func(store.Document) (store.Document, error) {
		return func(d store.Document) (store.Document, error) {
			d.Status = spec(n)
			return b.UpdateStatus(ctx, d)
		}
	}
	labels := map[string]string{"a": "b"}
	for _, st := range []struct {
		what    string
		write   func(store.Document) (store.Document, error)
		gen     int64
		changes bool
	}{
		{"status write", writeStatus(1), 1, true},
		{"same status again", writeStatus(1), 1, false},
		{"label change", writeSpec(1, labels), 1, true},
		{"same spec and labels again", writeSpec(1, labels), 1, false},
		{"spec change", writeSpec(2, labels), 2, true},
		{"second spec change", writeSpec(3, nil), 3, true},
		{"status change", writeStatus(2), 3, true},
		{"spec back to an earlier value", writeSpec(1, nil), 4, true},
	} {
		if err := step(st.what, st.write, st.gen, st.changes); err != nil {
			return err
		}
	}
	for _, rev := range revs {
		e, err := w.Next(ctx)
		if err != nil {
			return fmt.Errorf("watch: %w", err)
		}
		if e.Type != store.Modified || e.Revision != rev {
			return fmt.Errorf("watch: got %v at %d, want Modified at %d (writes that change nothing must not be events)", e.Type, e.Revision, rev)
		}
	}
	return nil
}

// checkSeparation: UpdateStatus writes the status alone and UpdateSpec
// never writes the status; Create refuses a status.
func checkSeparation(ctx context.Context, b store.Backend) error {
	in := newDoc(widget, "s", 1)
	in.Status = spec(9)
	_, err := b.Create(ctx, in)
	if err := wantErr("create with a status", err, store.ErrInvalid, widget, "s"); err != nil {
		return err
	}
	if err := expectAbsent(ctx, b, "after refused create", widget, "s"); err != nil {
		return err
	}
	in = newDoc(widget, "s", 1)
	in.Meta.Labels = map[string]string{"l": "1"}
	d, err := b.Create(ctx, in)
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	if len(d.Status) != 0 {
		return fmt.Errorf("create: status %q, want empty", d.Status)
	}
	// A status write carrying another spec, labels and finalizers writes
	// only the status.
	st := d
	st.Spec, st.Status = spec(50), spec(7)
	st.Meta.Labels = map[string]string{"l": "2"}
	st.Meta.Finalizers = []string{"example.com/sneaky"}
	got, err := b.UpdateStatus(ctx, st)
	if err != nil {
		return fmt.Errorf("update status: %w", err)
	}
	want := d
	want.Status = spec(7)
	want.Meta.Revision, want.Meta.UpdatedAt = got.Meta.Revision, got.Meta.UpdatedAt
	if diff := sameDoc(got, want); diff != "" {
		return fmt.Errorf("update status wrote more than the status: %s", diff)
	}
	if err := expectStored(ctx, b, "after update status", want); err != nil {
		return err
	}
	// A spec write carrying another status leaves the status alone.
	sp := got
	sp.Spec, sp.Status = spec(2), spec(99)
	got, err = b.UpdateSpec(ctx, sp)
	if err != nil {
		return fmt.Errorf("update spec: %w", err)
	}
	want.Spec, want.Meta.Generation = spec(2), 2
	want.Meta.Revision, want.Meta.UpdatedAt = got.Meta.Revision, got.Meta.UpdatedAt
	if diff := sameDoc(got, want); diff != "" {
		return fmt.Errorf("update spec: %s", diff)
	}
	return expectStored(ctx, b, "after update spec", want)
}

// checkDelete: Delete of a document without finalizers removes it; its key
// is free again.
func checkDelete(ctx context.Context, b store.Backend) error {
	d, err := b.Create(ctx, newDoc(widget, "d", 1))
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	if err := b.Delete(ctx, widget, "d", store.DeleteOptions{}); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	if err := expectAbsent(ctx, b, "after delete", widget, "d"); err != nil {
		return err
	}
	err = b.Delete(ctx, widget, "d", store.DeleteOptions{})
	if err := wantErr("second delete", err, store.ErrNotFound, widget, "d"); err != nil {
		return err
	}
	up := d
	up.Status = spec(1)
	_, err = b.UpdateStatus(ctx, up)
	if err := wantErr("update status after delete", err, store.ErrNotFound, widget, "d"); err != nil {
		return err
	}
	again, err := b.Create(ctx, newDoc(widget, "d", 2))
	if err != nil {
		return fmt.Errorf("create after delete: %w", err)
	}
	if again.Meta.Generation != 1 || again.Meta.UID == d.Meta.UID {
		return fmt.Errorf("re-created document has generation %d and UID %q (old %q)", again.Meta.Generation, again.Meta.UID, d.Meta.UID)
	}
	return nil
}

// checkFinalizers: Delete of a document with finalizers makes it
// Terminating; no finalizer can be added then; status and spec can still be
// written; removing the last finalizer removes the document; malformed
// finalizer names are refused.
func checkFinalizers(ctx context.Context, b store.Backend) error {
	in := newDoc(widget, "f", 1)
	in.Meta.Finalizers = []string{"example.com/a", "example.com/b"}
	d, err := b.Create(ctx, in)
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	if err := b.Delete(ctx, widget, "f", store.DeleteOptions{Revision: d.Meta.Revision}); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	t, err := b.Get(ctx, widget, "f")
	if err != nil {
		return fmt.Errorf("get after delete of a document with finalizers: %w", err)
	}
	if !t.Meta.Terminating() {
		return errors.New("delete of a document with finalizers did not make it terminating")
	}
	if t.Meta.Revision <= d.Meta.Revision || t.Meta.Generation != d.Meta.Generation {
		return fmt.Errorf("terminating document has revision %d (was %d) and generation %d (was %d)",
			t.Meta.Revision, d.Meta.Revision, t.Meta.Generation, d.Meta.Generation)
	}
	if err := b.Delete(ctx, widget, "f", store.DeleteOptions{}); err != nil {
		return fmt.Errorf("second delete of a terminating document: %w", err)
	}
	if err := expectStored(ctx, b, "after second delete", t); err != nil {
		return err
	}
	_, err = b.Create(ctx, newDoc(widget, "f", 2))
	if err := wantErr("create over a terminating document", err, store.ErrAlreadyExists, widget, "f"); err != nil {
		return err
	}
	add := t
	add.Meta.Finalizers = []string{"example.com/a", "example.com/b", "example.com/c"}
	_, err = b.UpdateSpec(ctx, add)
	if err := wantErr("adding a finalizer while terminating", err, store.ErrInvalid, widget, "f"); err != nil {
		return err
	}
	swap := t
	swap.Meta.Finalizers = []string{"example.com/a", "example.com/c"}
	_, err = b.UpdateSpec(ctx, swap)
	if err := wantErr("swapping a finalizer while terminating", err, store.ErrInvalid, widget, "f"); err != nil {
		return err
	}
	if err := expectStored(ctx, b, "after refused finalizer additions", t); err != nil {
		return err
	}
	st := t
	st.Status = spec(5)
	t, err = b.UpdateStatus(ctx, st)
	if err != nil {
		return fmt.Errorf("update status while terminating: %w", err)
	}
	rm := t
	rm.Meta.Finalizers = []string{"example.com/b"}
	t, err = b.UpdateSpec(ctx, rm)
	if err != nil {
		return fmt.Errorf("removing one finalizer: %w", err)
	}
	if !t.Meta.Terminating() || !slices.Equal(t.Meta.Finalizers, []string{"example.com/b"}) {
		return fmt.Errorf("after removing one finalizer: terminating %v, finalizers %q", t.Meta.Terminating(), t.Meta.Finalizers)
	}
	if err := expectStored(ctx, b, "after removing one finalizer", t); err != nil {
		return err
	}
	last := t
	last.Meta.Finalizers = nil
	gone, err := b.UpdateSpec(ctx, last)
	if err != nil {
		return fmt.Errorf("removing the last finalizer: %w", err)
	}
	if gone.Meta.UID != t.Meta.UID || len(gone.Meta.Finalizers) != 0 {
		return fmt.Errorf("removing the last finalizer returned UID %q with finalizers %q", gone.Meta.UID, gone.Meta.Finalizers)
	}
	if err := expectAbsent(ctx, b, "after removing the last finalizer", widget, "f"); err != nil {
		return err
	}
	// Finalizers can be added and removed freely before deletion.
	d, err = b.Create(ctx, newDoc(widget, "f2", 1))
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	d.Meta.Finalizers = []string{"example.com/x"}
	if d, err = b.UpdateSpec(ctx, d); err != nil {
		return fmt.Errorf("adding a finalizer: %w", err)
	}
	if d.Meta.Generation != 1 {
		return fmt.Errorf("adding a finalizer changed the generation to %d", d.Meta.Generation)
	}
	d.Meta.Finalizers = nil
	if d, err = b.UpdateSpec(ctx, d); err != nil {
		return fmt.Errorf("removing a finalizer before deletion: %w", err)
	}
	if err := expectStored(ctx, b, "after removing a finalizer before deletion", d); err != nil {
		return err
	}
	for _, bad := range [][]string{
		{"cleanup"}, {"example/cleanup"}, {"Example.com/cleanup"}, {"example.com/"},
		{"example.com/-x"}, {"example.com/a b"}, {"example.com/a", "example.com/a"},
	} {
		in := newDoc(widget, "badf", 1)
		in.Meta.Finalizers = bad
		_, err := b.Create(ctx, in)
		if err := wantErr(fmt.Sprintf("create with finalizers %q", bad), err, store.ErrInvalid, widget, "badf"); err != nil {
			return err
		}
		up := d
		up.Meta.Finalizers = bad
		_, err = b.UpdateSpec(ctx, up)
		if err := wantErr(fmt.Sprintf("update spec with finalizers %q", bad), err, store.ErrInvalid, widget, "f2"); err != nil {
			return err
		}
	}
	if err := expectAbsent(ctx, b, "after refused creates", widget, "badf"); err != nil {
		return err
	}
	return expectStored(ctx, b, "after refused updates", d)
}
