package oncall_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tendhq/tend/oncall"
	sm "github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// TestBulk acts on a selection previewed, then changed: the documents
// changed since the preview are acted on and listed, those no longer
// selected and those selected since are left alone and listed, and a
// document whose action does not apply is refused without stopping the
// others.
func TestBulk(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		if wrong := checkBulk(t, func(b store.Backend) store.Backend { return b }); len(wrong) > 0 {
			t.Fatalf("%q", wrong)
		}
	})
}

// TestBulkPlanted checks that TestBulk catches a store that loses one
// write while reporting it done.
func TestBulkPlanted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		wrong := checkBulk(t, func(b store.Backend) store.Backend { return &losesOneWrite{Backend: b, key: "b3"} })
		if len(wrong) == 0 {
			t.Fatal("a store losing a write went unnoticed")
		}
		t.Logf("caught: %q", wrong)
	})
}

// losesOneWrite is a store that drops the first status write of key and
// answers as if it had written it.
type losesOneWrite struct {
	store.Backend
	key  string
	once sync.Once
}

func (s *losesOneWrite) UpdateStatus(ctx context.Context, d store.Document) (store.Document, error) {
	lost := false
	if d.Meta.Key == s.key {
		s.once.Do(func() { lost = true })
	}
	if lost {
		d.Meta.Revision++
		return d, nil
	}
	return s.Backend.UpdateStatus(ctx, d)
}

// checkBulk runs a bulk action through wrap's store and returns what it
// got wrong.
func checkBulk(t *testing.T, wrap func(store.Backend) store.Backend) []string {
	f := newFixture(t)
	ctx := t.Context()
	for i := range 6 {
		st := failing()
		if i == 5 {
			st = sm.Status[string, string]{Phase: "Ready", Target: "Present"}
		}
		f.create(t, fmt.Sprintf("b%d", i), st)
	}
	c, err := oncall.New(wrap(f.b), oncall.Config{Actor: "carol"})
	if err != nil {
		t.Fatal(err)
	}
	var wrong []string
	errorf := func(format string, args ...any) { wrong = append(wrong, fmt.Sprintf(format, args...)) }
	sel := oncall.Selection{Kind: kind, Phases: []string{"Creating", "Ready"}}
	views, err := c.Select(ctx, sel)
	if err != nil || len(views) != 6 {
		t.Fatalf("Select = %d documents, %v", len(views), err)
	}
	preview := oncall.PreviewOf(views)
	// Between the preview and the run: b1 changes, b2 leaves the
	// selection, b9 joins it.
	if err := f.client.Pause(ctx, kind, "b1", "by hand"); err != nil {
		t.Fatal(err)
	}
	d, _ := f.b.Get(ctx, kind, "b2")
	d.Status = []byte(`{"phase":"Failed","target":"Present"}`)
	if _, err := f.b.UpdateStatus(ctx, d); err != nil {
		t.Fatal(err)
	}
	f.create(t, "b9", failing())

	res, err := c.Bulk(ctx, oncall.Bulk{Selection: sel, Action: oncall.Action{Name: oncall.ActionRetry}, Preview: preview, Parallel: 2})
	if err != nil {
		t.Fatalf("Bulk: %v", err)
	}
	var keys []string
	for _, o := range res.Outcomes {
		keys = append(keys, o.Key)
	}
	if want := []string{"b0", "b1", "b3", "b4", "b5"}; !slices.Equal(keys, want) {
		errorf("acted on %q, want %q", keys, want)
	}
	if !slices.Equal(res.Changed, []string{"b1"}) || !slices.Equal(res.Gone, []string{"b2"}) || !slices.Equal(res.Added, []string{"b9"}) {
		errorf("changed %q gone %q added %q, want [b1] [b2] [b9]", res.Changed, res.Gone, res.Added)
	}
	if res.Refused() != 1 || !errors.Is(res.Outcomes[4].Err, oncall.ErrInvalidAction) {
		errorf("refused %d (b5: %v), want 1: b5 has nothing to retry", res.Refused(), res.Outcomes[4].Err)
	}
	// Every document acted on holds its command, as the outcome says.
	for _, o := range res.Outcomes[:4] {
		v, err := f.client.Get(ctx, kind, o.Key)
		if err != nil {
			t.Fatal(err)
		}
		if o.Err != nil || len(v.Commands) != 1 || v.Commands[0].ID != o.Command || v.Commands[0].By != "carol" {
			errorf("%s: outcome %+v, commands in the store %+v", o.Key, o, v.Commands)
		}
	}
	for _, key := range []string{"b2", "b9"} {
		if v, _ := f.client.Get(ctx, kind, key); len(v.Commands) > 0 {
			errorf("%s was acted on: %+v", key, v.Commands)
		}
	}
	return wrong
}

// TestBulkRate checks that a bulk action at 2/s starts the n-th document
// (n-1)/2 seconds after the first, and no sooner, on a fake clock.
func TestBulkRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		if late := bulkRate(t, func(b store.Backend) store.Backend { return b }); len(late) > 0 {
			t.Fatalf("writes off the rate: %v", late)
		}
	})
}

// TestBulkRatePlanted checks that TestBulkRate catches writes that reach
// the store in a burst: a store that holds writes and commits them
// together.
func TestBulkRatePlanted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		late := bulkRate(t, func(b store.Backend) store.Backend { return &burst{Backend: b, hold: 3 * time.Second} })
		if len(late) == 0 {
			t.Fatal("writes in a burst went unnoticed")
		}
		t.Logf("caught: %q", late)
	})
}

// burst is a store whose writes wait until a multiple of hold since the
// epoch: writes spaced less than hold apart land together.
type burst struct {
	store.Backend
	hold time.Duration
}

func (s *burst) UpdateStatus(ctx context.Context, d store.Document) (store.Document, error) {
	now := time.Now()
	time.Sleep(now.Truncate(s.hold).Add(s.hold).Sub(now))
	return s.Backend.UpdateStatus(ctx, d)
}

// timed records when each status write reached the store.
type timed struct {
	store.Backend
	mu sync.Mutex // guards at
	at []time.Time
}

func (s *timed) UpdateStatus(ctx context.Context, d store.Document) (store.Document, error) {
	s.mu.Lock()
	s.at = append(s.at, time.Now())
	s.mu.Unlock()
	return s.Backend.UpdateStatus(ctx, d)
}

// bulkRate pauses 10 documents at 2/s, 4 at a time, and returns the
// writes that reached the store off the rate.
func bulkRate(t *testing.T, wrap func(store.Backend) store.Backend) []string {
	f := newFixture(t)
	for i := range 10 {
		f.create(t, fmt.Sprintf("b%d", i), failing())
	}
	rec := &timed{Backend: f.b}
	c, _ := oncall.New(wrap(rec), oncall.Config{Actor: "carol"})
	start := time.Now()
	res, err := c.Bulk(t.Context(), oncall.Bulk{Selection: oncall.Selection{Kind: kind, All: true}, Action: oncall.Action{Name: oncall.ActionPause}, Rate: oncall.Rate{N: 2, Per: time.Second}, Parallel: 4})
	if err != nil || len(res.Outcomes) != 10 || res.Refused() > 0 {
		t.Fatalf("Bulk = %+v, %v", res, err)
	}
	var off []string
	if len(rec.at) != 10 {
		off = append(off, fmt.Sprintf("%d writes, want 10", len(rec.at)))
	}
	slices.SortFunc(rec.at, func(a, b time.Time) int { return a.Compare(b) })
	for i, at := range rec.at {
		if want := time.Duration(i) * 500 * time.Millisecond; at.Sub(start) != want {
			off = append(off, fmt.Sprintf("write %d at %v, want %v", i, at.Sub(start), want))
		}
	}
	return off
}
