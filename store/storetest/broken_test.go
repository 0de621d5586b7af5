package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/store"
	"github.com/tendhq/tend/store/backend"
)

// dropsEvent loses the third event of every watch.
type dropsEvent struct{ *memory.Store }

func (b dropsEvent) Watch(ctx context.Context, kind string, from int64) (store.Watch, error) {
	w, err := b.Store.Watch(ctx, kind, from)
	if err != nil {
		return nil, err
	}
	return &droppingWatch{Watch: w}, nil
}

type droppingWatch struct {
	store.Watch
	n int
}

func (w *droppingWatch) Next(ctx context.Context) (store.Event, error) {
	for {
		e, err := w.Watch.Next(ctx)
		if err != nil {
			return e, err
		}
		if w.n++; w.n != 3 {
			return e, nil
		}
	}
}

// aheadWatch treats a watch from a revision the store has not reached: it
// refuses it, or, if refuse is false, watches from the current revision
// instead, delivering the changes up to the one asked for.
type aheadWatch struct {
	*memory.Store
	refuse bool
}

func (b aheadWatch) Watch(ctx context.Context, kind string, from int64) (store.Watch, error) {
	res, err := b.List(ctx, kind, store.ListOptions{})
	if err != nil {
		return nil, err
	}
	if from > res.Revision {
		if b.refuse {
			return nil, &store.Error{Op: "watch", Kind: kind, Err: fmt.Errorf("%w: revision %d is ahead of the store", store.ErrInvalid, from)}
		}
		from = res.Revision
	}
	return b.Store.Watch(ctx, kind, from)
}

// ignoresRevision writes over whatever is stored, as a backend that forgets
// the revision precondition would: it retries at the stored revision until
// its write lands, so it never reports a conflict.
type ignoresRevision struct{ *memory.Store }

func (b ignoresRevision) UpdateSpec(ctx context.Context, d store.Document) (store.Document, error) {
	return b.overwrite(ctx, d, b.Store.UpdateSpec)
}

func (b ignoresRevision) UpdateStatus(ctx context.Context, d store.Document) (store.Document, error) {
	return b.overwrite(ctx, d, b.Store.UpdateStatus)
}

func (b ignoresRevision) overwrite(ctx context.Context, d store.Document,
	write func(context.Context, store.Document) (store.Document, error)) (store.Document, error) {
	for {
		cur, err := b.Get(ctx, d.Meta.Kind, d.Meta.Key)
		if err != nil {
			return write(ctx, d)
		}
		d.Meta.Revision = cur.Meta.Revision
		out, err := write(ctx, d)
		if !errors.Is(err, store.ErrConflict) {
			return out, err
		}
	}
}

// sharesCache hands out the memory of a cache of documents it read, as a
// caching backend that forgets to copy would: Get returns the same document
// while its revision is unchanged.
type sharesCache struct {
	*memory.Store
	mu    sync.Mutex // guards cache
	cache map[[2]string]store.Document
}

func (b *sharesCache) Get(ctx context.Context, kind, key string) (store.Document, error) {
	d, err := b.Store.Get(ctx, kind, key)
	if err != nil {
		return d, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if c, ok := b.cache[[2]string{kind, key}]; ok && c.Meta.Revision == d.Meta.Revision {
		return c, nil
	}
	b.cache[[2]string{kind, key}] = d
	return d, nil
}

// returnsGiven answers a status update with the document it was given and
// the stored metadata, as a backend that does not read back what it did not
// write would.
type returnsGiven struct{ *memory.Store }

func (b returnsGiven) UpdateStatus(ctx context.Context, d store.Document) (store.Document, error) {
	out, err := b.Store.UpdateStatus(ctx, d)
	if err != nil {
		return out, err
	}
	out.Meta.Labels, out.Meta.Finalizers, out.Meta.Owners = d.Meta.Labels, d.Meta.Finalizers, d.Meta.Owners
	out.Spec, out.Status = d.Spec, d.Status
	return out, nil
}

// claimsUnfenced says it refuses fenced writes but performs them.
type claimsUnfenced struct{ *memory.Store }

var errNoFences = fmt.Errorf("no fences here: %w", store.ErrInvalid)

func (claimsUnfenced) FencingUnsupported() error { return errNoFences }

// refusesFences is an honest Unfenced backend: it refuses every fenced
// write before touching the store.
type refusesFences struct{ *memory.Store }

func (refusesFences) FencingUnsupported() error { return errNoFences }

func (b refusesFences) refuse(ctx context.Context, kind, key string) error {
	if _, ok := store.FenceFrom(ctx); ok {
		return &store.Error{Op: "write", Kind: kind, Key: key, Err: errNoFences}
	}
	return nil
}

func (b refusesFences) Create(ctx context.Context, d store.Document) (store.Document, error) {
	if err := b.refuse(ctx, d.Meta.Kind, d.Meta.Key); err != nil {
		return store.Document{}, err
	}
	return b.Store.Create(ctx, d)
}

func (b refusesFences) UpdateSpec(ctx context.Context, d store.Document) (store.Document, error) {
	if err := b.refuse(ctx, d.Meta.Kind, d.Meta.Key); err != nil {
		return store.Document{}, err
	}
	return b.Store.UpdateSpec(ctx, d)
}

func (b refusesFences) UpdateStatus(ctx context.Context, d store.Document) (store.Document, error) {
	if err := b.refuse(ctx, d.Meta.Kind, d.Meta.Key); err != nil {
		return store.Document{}, err
	}
	return b.Store.UpdateStatus(ctx, d)
}

func (b refusesFences) Delete(ctx context.Context, kind, key string, opts store.DeleteOptions) error {
	if err := b.refuse(ctx, kind, key); err != nil {
		return err
	}
	return b.Store.Delete(ctx, kind, key, opts)
}

// dropsAcrossPages loses the first document of every page after the
// first, as a backend whose continue token points at the first document of
// the next page, not the last of this one, would.
type dropsAcrossPages struct{ *memory.Store }

func (b dropsAcrossPages) List(ctx context.Context, kind string, opts store.ListOptions) (store.ListResult, error) {
	if opts.Limit == 0 {
		return b.Store.List(ctx, kind, opts)
	}
	opts.Limit++
	res, err := b.Store.List(ctx, kind, opts)
	if err != nil || len(res.Items) < opts.Limit {
		return res, err
	}
	c, err := backend.DecodeContinue(res.Continue)
	if err != nil {
		c = backend.Cursor{Revision: res.Revision}
	}
	c.After = res.Items[len(res.Items)-1].Meta.Key
	res.Items, res.Continue = res.Items[:opts.Limit-1], backend.EncodeContinue(c)
	return res, nil
}

// repeatsAcrossPages lists the last document of every page again at the
// start of the next, as a backend whose token points before it would.
type repeatsAcrossPages struct{ *memory.Store }

func (b repeatsAcrossPages) List(ctx context.Context, kind string, opts store.ListOptions) (store.ListResult, error) {
	res, err := b.Store.List(ctx, kind, opts)
	if err != nil || res.Continue == "" || len(res.Items) < 2 {
		return res, err
	}
	c, err := backend.DecodeContinue(res.Continue)
	if err != nil {
		return res, err
	}
	c.After = res.Items[len(res.Items)-2].Meta.Key
	res.Continue = backend.EncodeContinue(c)
	return res, nil
}

// acceptsBadTokens starts again from the first page when a continue token
// is malformed, instead of failing.
type acceptsBadTokens struct{ *memory.Store }

func (b acceptsBadTokens) List(ctx context.Context, kind string, opts store.ListOptions) (store.ListResult, error) {
	if _, err := backend.DecodeContinue(opts.Continue); err != nil {
		opts.Continue = ""
	}
	return b.Store.List(ctx, kind, opts)
}

// TestUnfencedRefusing: the Fencing check of an Unfenced backend passes
// when it refuses fenced writes.
func TestUnfencedRefusing(t *testing.T) {
	if err := runCheck(t, checkNamed(t, "Fencing"), func(s *memory.Store) store.Backend { return refusesFences{s} }); err != nil {
		t.Fatal(err)
	}
}

// TestBrokenBackendsFail runs the suite's checks on deliberately broken
// wrappers of the memory backend and on the memory backend itself: each
// break must fail the checks named for it, which the unbroken backend
// passes.
func TestBrokenBackendsFail(t *testing.T) {
	tests := []struct {
		name     string
		wrap     func(*memory.Store) store.Backend
		mustFail []string
	}{
		{"drops a watch event", func(s *memory.Store) store.Backend { return dropsEvent{s} },
			[]string{"Generation", "WatchOrder", "WatchResume"}},
		{"delivers the changes up to a revision it was ahead of", func(s *memory.Store) store.Backend { return aheadWatch{Store: s} },
			[]string{"WatchAhead"}},
		{"refuses a watch from a revision ahead of it", func(s *memory.Store) store.Backend { return aheadWatch{Store: s, refuse: true} },
			[]string{"WatchAhead"}},
		{"ignores the revision precondition", func(s *memory.Store) store.Backend { return ignoresRevision{s} },
			[]string{"Conflicts", "NoLostUpdate"}},
		{"claims to refuse fenced writes but performs them", func(s *memory.Store) store.Backend { return claimsUnfenced{s} },
			[]string{"Fencing"}},
		{"returns documents that share its memory", func(s *memory.Store) store.Backend {
			return &sharesCache{Store: s, cache: map[[2]string]store.Document{}}
		}, []string{"Copies"}},
		{"drops a document between pages", func(s *memory.Store) store.Backend { return dropsAcrossPages{s} },
			[]string{"ListPages"}},
		{"repeats a document between pages", func(s *memory.Store) store.Backend { return repeatsAcrossPages{s} },
			[]string{"ListPages"}},
		{"ignores a malformed continue token", func(s *memory.Store) store.Backend { return acceptsBadTokens{s} },
			[]string{"ListPages"}},
		{"returns the given document from a status update", func(s *memory.Store) store.Backend { return returnsGiven{s} },
			[]string{"Copies"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			failed := map[string]error{}
			for _, c := range checks {
				if err := runCheck(t, c, tt.wrap); err != nil {
					failed[c.name] = err
					t.Logf("%s fails as it should: %v", c.name, err)
				}
			}
			for _, name := range tt.mustFail {
				if failed[name] == nil {
					t.Errorf("check %s passed on a backend that %s", name, tt.name)
				}
				// The same check passes without the break.
				c := checkNamed(t, name)
				if err := runCheck(t, c, func(s *memory.Store) store.Backend { return s }); err != nil {
					t.Errorf("check %s fails on the unbroken backend: %v", name, err)
				}
			}
		})
	}
}

func runCheck(t *testing.T, c check, wrap func(*memory.Store) store.Backend) error {
	s, err := memory.New(memory.Config{Kinds: kinds})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	return c.run(ctx, wrap(s))
}

func checkNamed(t *testing.T, name string) check {
	for _, c := range checks {
		if c.name == name {
			return c
		}
	}
	t.Fatalf("no check named %s", name)
	return check{}
}
