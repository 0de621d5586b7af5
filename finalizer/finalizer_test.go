package finalizer_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/finalizer"
	"github.com/tendhq/tend/store"
)

const name = "example.com/cleanup"

// tb is what the helpers need from *testing.T and *rapid.T.
type tb interface {
	Helper()
	Fatal(args ...any)
}

func newStore(t tb) *memory.Store {
	t.Helper()
	s, err := memory.New(memory.Config{Kinds: []string{"Bucket"}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// create stores a Bucket with the given finalizers and, if terminating,
// requests its deletion.
func create(t tb, s *memory.Store, key string, finalizers []string, terminating bool) store.Document {
	t.Helper()
	ctx := context.Background()
	doc, err := s.Create(ctx, store.Document{
		Meta: store.Meta{Kind: "Bucket", Key: key, Finalizers: finalizers},
		Spec: []byte(`{"size":1}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	if terminating {
		if err := s.Delete(ctx, "Bucket", key, store.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if doc, err = s.Get(ctx, "Bucket", key); err != nil {
			t.Fatal(err)
		}
	}
	return doc
}

func TestStageOf(t *testing.T) {
	tests := []struct {
		finalizers  []string
		terminating bool
		want        finalizer.Stage
	}{
		{nil, false, finalizer.Absent},
		{[]string{"other.io/x"}, false, finalizer.Absent},
		{[]string{"other.io/x", name}, false, finalizer.Present},
		{[]string{name}, true, finalizer.Finalizing},
		{[]string{"other.io/x"}, true, finalizer.Finalized},
	}
	s := newStore(t)
	for i, tt := range tests {
		doc := create(t, s, "b"+string(rune('0'+i)), tt.finalizers, tt.terminating)
		if got := finalizer.StageOf(finalizer.NewDocument(s, doc), name); got != tt.want {
			t.Errorf("StageOf(%v, terminating=%v) = %v, want %v", tt.finalizers, tt.terminating, got, tt.want)
		}
	}
	if got := finalizer.Stage(9).String(); got != "Stage(9)" {
		t.Errorf("Stage(9).String() = %q", got)
	}
}

func TestEnsure(t *testing.T) {
	boom := errors.New("bucket not empty")
	tests := []struct {
		name        string
		finalizers  []string
		terminating bool
		cleanupErr  error
		wantState   finalizer.Stage
		wantApply   bool
		wantCleanup bool
		wantErr     error
		// stored finalizers afterwards; nil with wantGone
		wantStored []string
		wantGone   bool
	}{
		{name: "absent: adds and applies", wantState: finalizer.Present, wantApply: true,
			wantStored: []string{name}},
		{name: "absent keeps others", finalizers: []string{"other.io/x"}, wantState: finalizer.Present,
			wantApply: true, wantStored: []string{"other.io/x", name}},
		{name: "present: applies", finalizers: []string{name}, wantState: finalizer.Present, wantApply: true,
			wantStored: []string{name}},
		{name: "finalizing: cleans up and the document goes", finalizers: []string{name}, terminating: true,
			wantState: finalizer.Finalizing, wantCleanup: true, wantGone: true},
		{name: "finalizing: removes only its own", finalizers: []string{"other.io/x", name, "other.io/y"},
			terminating: true, wantState: finalizer.Finalizing, wantCleanup: true,
			wantStored: []string{"other.io/x", "other.io/y"}},
		{name: "finalizing: cleanup fails", finalizers: []string{name}, terminating: true, cleanupErr: boom,
			wantState: finalizer.Finalizing, wantCleanup: true, wantErr: boom, wantStored: []string{name}},
		{name: "finalized: nothing", finalizers: []string{"other.io/x"}, terminating: true,
			wantState: finalizer.Finalized, wantStored: []string{"other.io/x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			s := newStore(t)
			doc := create(t, s, "b", tt.finalizers, tt.terminating)
			obj := finalizer.NewDocument(s, doc)
			var applied, cleaned bool
			st, err := finalizer.Ensure(ctx, obj, name,
				func(context.Context) error {
					applied = true
					// apply sees the document with its finalizer.
					if d := obj.Document(); !d.Meta.HasFinalizer(name) {
						t.Error("apply ran before the finalizer was stored")
					}
					return nil
				},
				func(context.Context) error { cleaned = true; return tt.cleanupErr })
			if st != tt.wantState {
				t.Errorf("state = %v, want %v", st, tt.wantState)
			}
			if applied != tt.wantApply || cleaned != tt.wantCleanup {
				t.Errorf("applied, cleaned = %v, %v; want %v, %v", applied, cleaned, tt.wantApply, tt.wantCleanup)
			}
			if tt.wantErr == nil && err != nil {
				t.Fatalf("Ensure: %v", err)
			}
			if tt.wantErr != nil {
				var ce *finalizer.CleanupError
				if !errors.Is(err, tt.wantErr) || !errors.Is(err, finalizer.ErrCleanup) || !errors.As(err, &ce) || ce.Finalizer != name {
					t.Fatalf("Ensure error = %v, want a CleanupError of %s wrapping %v", err, name, tt.wantErr)
				}
			}
			got, err := s.Get(ctx, "Bucket", "b")
			if tt.wantGone {
				if !errors.Is(err, store.ErrNotFound) {
					t.Fatalf("Get after Ensure: %v, want not found", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Meta.Finalizers, tt.wantStored) {
				t.Errorf("stored finalizers = %v, want %v", got.Meta.Finalizers, tt.wantStored)
			}
			if got.Meta.Revision != obj.Document().Meta.Revision {
				t.Errorf("adapter holds revision %d, store %d", obj.Document().Meta.Revision, got.Meta.Revision)
			}
			if got.Meta.Generation != 1 {
				t.Errorf("generation = %d: a finalizer write changed the spec", got.Meta.Generation)
			}
		})
	}
}

func TestEnsureInvalidName(t *testing.T) {
	s := newStore(t)
	obj := finalizer.NewDocument(s, create(t, s, "b", nil, false))
	for _, bad := range []string{"", "cleanup", "nodot/cleanup", "example.com/", "Example.com/x"} {
		if _, err := finalizer.Ensure(context.Background(), obj, bad, nil, nil); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("Ensure(%q) = %v, want ErrInvalid", bad, err)
		}
		if err := finalizer.Add(context.Background(), obj, bad); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("Add(%q) = %v, want ErrInvalid", bad, err)
		}
		if err := finalizer.Remove(context.Background(), obj, bad); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("Remove(%q) = %v, want ErrInvalid", bad, err)
		}
	}
	if got, _ := s.Get(context.Background(), "Bucket", "b"); got.Meta.Revision != obj.Document().Meta.Revision || len(got.Meta.Finalizers) != 0 {
		t.Errorf("an invalid name wrote the document: %+v", got.Meta)
	}
}

// interfering is a store whose UpdateSpec first lets another writer change
// the stored document, so the helper's write is based on a stale read.
type interfering struct {
	*memory.Store
	writes    int
	interfere func(ctx context.Context, s *memory.Store, write int)
}

func (i *interfering) UpdateSpec(ctx context.Context, doc store.Document) (store.Document, error) {
	i.writes++
	if i.interfere != nil {
		i.interfere(ctx, i.Store, i.writes)
	}
	return i.Store.UpdateSpec(ctx, doc)
}

// setFinalizers changes the stored Bucket b's finalizers as another
// controller would.
func setFinalizers(ctx context.Context, t tb, s *memory.Store, change func([]string) []string) {
	doc, err := s.Get(ctx, "Bucket", "b")
	if err != nil {
		t.Fatal(err)
	}
	doc.Meta.Finalizers = change(doc.Meta.Finalizers)
	if _, err := s.UpdateSpec(ctx, doc); err != nil {
		t.Fatal(err)
	}
}

func TestRemoveKeepsConcurrentChanges(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	doc := create(t, s, "b", []string{"other.io/x", name, "other.io/y"}, true)
	rw := &interfering{Store: s, interfere: func(ctx context.Context, s *memory.Store, write int) {
		if write == 1 {
			// Another controller finishes its cleanup meanwhile.
			setFinalizers(ctx, t, s, func(fs []string) []string {
				return slices.DeleteFunc(fs, func(f string) bool { return f == "other.io/x" })
			})
		}
	}}
	if err := finalizer.Remove(ctx, finalizer.NewDocument(rw, doc), name); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "Bucket", "b")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"other.io/y"}; !slices.Equal(got.Meta.Finalizers, want) {
		t.Errorf("finalizers = %v, want %v (the other controller's removal restored?)", got.Meta.Finalizers, want)
	}
	if rw.writes != 2 {
		t.Errorf("writes = %d, want 2 (one conflict, one retry)", rw.writes)
	}
}

func TestAddRetriesConflict(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	doc := create(t, s, "b", nil, false)
	rw := &interfering{Store: s, interfere: func(ctx context.Context, s *memory.Store, write int) {
		if write == 1 {
			setFinalizers(ctx, t, s, func(fs []string) []string { return append(fs, "other.io/x") })
		}
	}}
	obj := finalizer.NewDocument(rw, doc)
	if err := finalizer.Add(ctx, obj, name); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Get(ctx, "Bucket", "b")
	if want := []string{"other.io/x", name}; !slices.Equal(got.Meta.Finalizers, want) {
		t.Errorf("finalizers = %v, want %v", got.Meta.Finalizers, want)
	}
}

func TestAddToTerminating(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	obj := finalizer.NewDocument(s, create(t, s, "b", []string{"other.io/x"}, true))
	if err := finalizer.Add(ctx, obj, name); !errors.Is(err, finalizer.ErrTerminating) {
		t.Errorf("Add on a terminating document = %v, want ErrTerminating", err)
	}
}

// A document deleted while Ensure adds its finalizer is Finalized, not an
// error: there is nothing left to manage.
func TestEnsureDeletedMeanwhile(t *testing.T) {
	for _, tt := range []struct {
		name  string
		fs    []string
		final func(context.Context, testing.TB, *memory.Store)
	}{
		{"removed", nil, func(ctx context.Context, t testing.TB, s *memory.Store) {
			if err := s.Delete(ctx, "Bucket", "b", store.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}},
		{"terminating", []string{"other.io/x"}, func(ctx context.Context, t testing.TB, s *memory.Store) {
			if err := s.Delete(ctx, "Bucket", "b", store.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			s := newStore(t)
			doc := create(t, s, "b", tt.fs, false)
			rw := &interfering{Store: s, interfere: func(ctx context.Context, s *memory.Store, write int) {
				if write == 1 {
					tt.final(ctx, t, s)
				}
			}}
			applied := false
			st, err := finalizer.Ensure(ctx, finalizer.NewDocument(rw, doc), name,
				func(context.Context) error { applied = true; return nil }, nil)
			if err != nil || st != finalizer.Finalized || applied {
				t.Errorf("Ensure = %v, %v, applied %v; want Finalized, nil, not applied", st, err, applied)
			}
		})
	}
}

func TestRemoveGivesUpAfterMaxAttempts(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	doc := create(t, s, "b", []string{name, "other.io/x"}, false)
	n := 0
	rw := &interfering{Store: s, interfere: func(ctx context.Context, s *memory.Store, write int) {
		// Another writer changes the labels before every write.
		d, _ := s.Get(ctx, "Bucket", "b")
		n++
		d.Meta.Labels = map[string]string{"n": string(rune('a' + n))}
		if _, err := s.UpdateSpec(ctx, d); err != nil {
			t.Fatal(err)
		}
	}}
	err := finalizer.Remove(ctx, finalizer.NewDocument(rw, doc), name)
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("Remove = %v, want ErrConflict", err)
	}
	if rw.writes != finalizer.MaxAttempts {
		t.Errorf("writes = %d, want %d", rw.writes, finalizer.MaxAttempts)
	}
}

// A document replaced under the same key is another document: Remove must not
// take the finalizer off the new one.
func TestRemoveIgnoresReplacedDocument(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	old := create(t, s, "b", []string{name}, false)
	setFinalizers(ctx, t, s, func([]string) []string { return nil })
	if err := s.Delete(ctx, "Bucket", "b", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	replacement := create(t, s, "b", []string{name}, false)
	if err := finalizer.Remove(ctx, finalizer.NewDocument(s, old), name); err != nil {
		t.Fatalf("Remove = %v, want nil (the document is gone)", err)
	}
	got, _ := s.Get(ctx, "Bucket", "b")
	if got.Meta.UID != replacement.Meta.UID || !got.Meta.HasFinalizer(name) {
		t.Errorf("the replacement lost its finalizer: %+v", got.Meta)
	}
}

// The cleanup of a stuck document runs on every Ensure until it succeeds, and
// the finalizer stays until then.
func TestCleanupRetriedUntilSuccess(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	doc := create(t, s, "b", []string{name}, true)
	failures := 3
	calls := 0
	cleanup := func(context.Context) error {
		calls++
		if calls <= failures {
			return errors.New("still attached")
		}
		return nil
	}
	for i := 1; ; i++ {
		obj := finalizer.NewDocument(s, doc)
		_, err := finalizer.Ensure(ctx, obj, name, nil, cleanup)
		if err == nil {
			break
		}
		if !errors.Is(err, finalizer.ErrCleanup) {
			t.Fatal(err)
		}
		if doc, err = s.Get(ctx, "Bucket", "b"); err != nil || !doc.Meta.Terminating() || !doc.Meta.HasFinalizer(name) {
			t.Fatalf("after failure %d the document is %+v, %v; want Terminating with the finalizer", i, doc.Meta, err)
		}
	}
	if calls != failures+1 {
		t.Errorf("cleanup ran %d times, want %d", calls, failures+1)
	}
	if _, err := s.Get(ctx, "Bucket", "b"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get after successful cleanup: %v, want not found", err)
	}
}
