package gc_test

import (
	"context"
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/tendhq/tend/examples/workspace/archive"
	"github.com/tendhq/tend/examples/workspace/gc"
	"github.com/tendhq/tend/examples/workspace/objstore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestProtectionRules(t *testing.T) {
	k := archive.Key
	for _, tc := range []struct {
		name string
		ref  gc.Reference
		want map[string]gc.Rule
	}{
		{"healthy workspace: its archive_key", gc.Reference{WorkspaceID: "w", Healthy: true, ArchiveKey: k("w", "a")},
			map[string]gc.Rule{k("w", "a"): gc.RuleReferenced}},
		{"rule 1: deleted_at unprotects everything", gc.Reference{WorkspaceID: "w", Deleted: true, Healthy: false,
			ArchiveKey: k("w", "a"), InFlightOpID: "b", FailedOpID: "c"}, map[string]gc.Rule{}},
		{"rule 1 beats an operation in flight", gc.Reference{WorkspaceID: "w", Deleted: true, Healthy: true, InFlightOpID: "b"},
			map[string]gc.Rule{}},
		{"rule 2: unhealthy protects archive_key and op_id", gc.Reference{WorkspaceID: "w", Healthy: false,
			ArchiveKey: k("w", "a"), FailedOpID: "c"}, map[string]gc.Rule{k("w", "a"): gc.RuleUnhealthy, k("w", "c"): gc.RuleUnhealthy}},
		{"rule 3: op_id of the operation in flight", gc.Reference{WorkspaceID: "w", Healthy: true,
			ArchiveKey: k("w", "a"), InFlightOpID: "b"}, map[string]gc.Rule{k("w", "a"): gc.RuleReferenced, k("w", "b"): gc.RuleInFlight}},
		{"a failed op_id of a healthy workspace is not protected", gc.Reference{WorkspaceID: "w", Healthy: true, FailedOpID: "c"},
			map[string]gc.Rule{}},
		{"nothing referenced", gc.Reference{WorkspaceID: "w", Healthy: true}, map[string]gc.Rule{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, gc.Protected([]gc.Reference{tc.ref})); diff != "" {
				t.Errorf("Protected (-want +got):\n%s", diff)
			}
		})
	}
}

// world is an object store and a store of references with faults.
type world struct {
	objstore.Store
	mu         sync.Mutex // guards the fields below
	refs       []gc.Reference
	failList   bool
	failRefs   bool
	failDelete map[string]bool
}

func (w *world) List(ctx context.Context, prefix string) ([]objstore.Info, error) {
	w.mu.Lock()
	fail := w.failList
	w.mu.Unlock()
	if fail {
		return nil, errors.New("list failed")
	}
	return w.Store.List(ctx, prefix)
}

func (w *world) Delete(ctx context.Context, key string) error {
	w.mu.Lock()
	fail := w.failDelete[key]
	w.mu.Unlock()
	if fail {
		return errors.New("delete failed")
	}
	return w.Store.Delete(ctx, key)
}

func (w *world) references(ctx context.Context) ([]gc.Reference, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failRefs {
		return nil, errors.New("store down")
	}
	return slices.Clone(w.refs), nil
}

func (w *world) put(t *testing.T, keys ...string) {
	for _, k := range keys {
		for _, o := range []string{k, archive.MetaKey(k)} {
			if err := w.Store.Put(context.Background(), o, strings.NewReader("x")); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func (w *world) keys(t *testing.T) []string {
	l, err := w.Store.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range l {
		out = append(out, o.Key)
	}
	return out
}

func newWorld(t *testing.T) *world {
	d, err := objstore.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &world{Store: d, failDelete: map[string]bool{}}
}

// TestCycle walks the safety delay, skipped cycles, retried deletes and
// timers that survive a restart, on a fake clock.
func TestCycle(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	old, cur, other := archive.Key("w1", "aaa"), archive.Key("w1", "bbb"), archive.Key("w2", "ccc")
	w.put(t, old, cur, other)
	_ = w.Store.Put(ctx, "unrelated/file", strings.NewReader("x"))
	w.refs = []gc.Reference{{WorkspaceID: "w1", Healthy: true, ArchiveKey: cur}, {WorkspaceID: "w2", Healthy: true, ArchiveKey: other}}

	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	timers := gc.FileTimers{Path: filepath.Join(t.TempDir(), "timers.json")}
	newRunner := func() *gc.Runner {
		r, err := gc.New(gc.Config{Objects: w, References: w.references, Timers: timers, Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := newRunner()
	rep, err := r.Cycle(ctx)
	if err != nil || !slices.Equal(rep.Waiting, []string{old}) || len(rep.Deleted) != 0 {
		t.Fatalf("first cycle: %+v, %v", rep, err)
	}

	// A restart keeps the timer: the delay counts from the first sighting.
	now = now.Add(time.Hour)
	r = newRunner()
	if rep, _ := r.Cycle(ctx); len(rep.Deleted) != 0 {
		t.Fatalf("deleted before the delay: %+v", rep)
	}

	// Listing or store failures skip the whole cycle, deleting nothing.
	now = now.Add(90 * time.Minute)
	w.failList = true
	if _, err := r.Cycle(ctx); err == nil {
		t.Fatal("cycle with a failing listing succeeded")
	}
	w.failList, w.failRefs = false, true
	if _, err := r.Cycle(ctx); err == nil {
		t.Fatal("cycle with a failing store succeeded")
	}
	if got := len(w.keys(t)); got != 7 {
		t.Fatalf("a skipped cycle deleted objects: %v", w.keys(t))
	}
	w.failRefs = false

	// A failed delete is retried next cycle.
	w.failDelete[old] = true
	rep, _ = r.Cycle(ctx)
	if !slices.Equal(rep.Failed, []string{old}) {
		t.Fatalf("failed delete not reported: %+v", rep)
	}
	delete(w.failDelete, old)
	rep, _ = r.Cycle(ctx)
	if !slices.Equal(rep.Deleted, []string{old}) {
		t.Fatalf("retry: %+v", rep)
	}
	want := []string{archive.Key("w1", "bbb"), archive.MetaKey(cur), other, archive.MetaKey(other), "unrelated/file"}
	slices.Sort(want)
	if got := w.keys(t); !slices.Equal(got, want) {
		t.Fatalf("objects left %v, want %v", got, want)
	}

	// The user deletes w2: its archive waits out the delay, then goes.
	w.refs[1].Deleted = true
	rep, _ = r.Cycle(ctx)
	if !slices.Equal(rep.Waiting, []string{other}) {
		t.Fatalf("deleted workspace: %+v", rep)
	}
	// Protected again before the delay (say, an operator undid it): timer dropped.
	w.refs[1].Deleted = false
	rep, _ = r.Cycle(ctx)
	if _, ok := rep.Protected[other]; !ok {
		t.Fatalf("re-protected archive: %+v", rep)
	}
	saved, _ := timers.Load(ctx)
	if len(saved) != 0 {
		t.Fatalf("timers kept for protected archives: %v", maps.Collect(maps.All(saved)))
	}
}

// TestRunDeletesAfterDelay runs the runner on synctest's fake clock.
func TestRunDeletesAfterDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		orphan := archive.Key("w1", "aaa")
		w.put(t, orphan)
		r, err := gc.New(gc.Config{Objects: w, References: w.references, Delay: 2 * time.Hour, Interval: 10 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- r.Run(ctx) }()
		time.Sleep(2*time.Hour - time.Minute)
		synctest.Wait()
		if len(w.keys(t)) != 2 {
			t.Fatal("orphan deleted before the safety delay")
		}
		time.Sleep(11 * time.Minute)
		synctest.Wait()
		if got := w.keys(t); len(got) != 0 {
			t.Fatalf("orphan not deleted after the delay: %v", got)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}
