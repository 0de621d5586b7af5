package oncall

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/tendhq/tend/internal/wait"
)

// Bulk is an action asked of every document a selection selects, as
// [Client.Bulk] carries it out.
type Bulk struct {
	Selection Selection `json:"selection"`
	Action    Action    `json:"action"`
	// Rate bounds how fast documents are acted on. The zero Rate is as
	// fast as the store takes the writes.
	Rate Rate `json:"rate,omitzero"`
	// Parallel is how many documents are acted on at a time. Zero means
	// one.
	Parallel int `json:"parallel,omitempty"`
	// Preview, when set, is the selection as the operator saw and
	// confirmed it (see [PreviewOf]): only documents in it that the
	// selection still selects are acted on; those changed since are
	// listed in [BulkResult.Changed], those no longer selected in
	// [BulkResult.Gone] and those selected since in [BulkResult.Added],
	// which are left alone. Without one, every document the selection
	// selects when the bulk begins is acted on.
	Preview *Preview `json:"preview,omitempty"`
}

// Rate is N documents per Per. A Rate with N or Per zero is unlimited.
type Rate struct {
	N   int           `json:"n"`
	Per time.Duration `json:"per"`
}

// interval returns the time between two documents, or zero for no limit.
func (r Rate) interval() time.Duration {
	if r.N <= 0 || r.Per <= 0 {
		return 0
	}
	return r.Per / time.Duration(r.N)
}

// String returns r as N/s, N/m or N/DURATION, or "unlimited".
func (r Rate) String() string {
	switch {
	case r.interval() == 0:
		return "unlimited"
	case r.Per == time.Second:
		return fmt.Sprintf("%d/s", r.N)
	case r.Per == time.Minute:
		return fmt.Sprintf("%d/m", r.N)
	}
	return fmt.Sprintf("%d/%v", r.N, r.Per)
}

// Preview is a selection as it was seen: the revision of each selected
// document, by key.
type Preview struct {
	Revisions map[string]int64 `json:"revisions"`
}

// PreviewOf returns the preview of the documents a selection selected.
func PreviewOf(views []View) *Preview {
	p := &Preview{Revisions: make(map[string]int64, len(views))}
	for _, v := range views {
		p.Revisions[v.Meta.Key] = v.Meta.Revision
	}
	return p
}

// BulkResult is what [Client.Bulk] did.
type BulkResult struct {
	// Outcomes are the documents acted on, in key order, each with its
	// outcome.
	Outcomes []Outcome `json:"outcomes"`
	// Changed are the keys of documents acted on that changed since the
	// preview; Gone those of the preview the selection no longer selected;
	// Added those it selected that the preview did not hold, left alone.
	Changed []string `json:"changed,omitempty"`
	Gone    []string `json:"gone,omitempty"`
	Added   []string `json:"added,omitempty"`
}

// Refused returns how many documents' actions failed.
func (r BulkResult) Refused() int {
	n := 0
	for _, o := range r.Outcomes {
		if o.Err != nil {
			n++
		}
	}
	return n
}

// Outcome is what became of one document of a bulk action.
type Outcome struct {
	Key string
	// Command is the id of the command issued (retry, skip, move,
	// request).
	Command string
	// Err is why the action was not taken, or nil.
	Err error
}

// wireOutcome is an Outcome on the wire.
type wireOutcome struct {
	Key     string     `json:"key"`
	Command string     `json:"command,omitempty"`
	Error   *wireError `json:"error,omitempty"`
}

// MarshalJSON writes o with its error's code, so that the error read back
// matches the same sentinel.
func (o Outcome) MarshalJSON() ([]byte, error) {
	w := wireOutcome{Key: o.Key, Command: o.Command}
	if o.Err != nil {
		_, body, _ := encodeError(o.Err)
		w.Error = &body
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (o *Outcome) UnmarshalJSON(b []byte) error {
	var w wireOutcome
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*o = Outcome{Key: w.Key, Command: w.Command}
	if w.Error != nil {
		o.Err = decodeError(*w.Error)
	}
	return nil
}

// Bulk carries out b.Action on every document b.Selection selects (see
// [Bulk.Preview] for which), at most b.Rate, b.Parallel at a time, and
// returns each one's outcome. A document's action that fails does not
// stop the others. It returns an error when the selection cannot be read,
// or ctx.Err() with the outcomes so far when ctx ends.
func (c *Client) Bulk(ctx context.Context, b Bulk) (BulkResult, error) {
	if err := c.canAct(); err != nil {
		return BulkResult{}, err
	}
	if err := b.Action.Check(); err != nil {
		return BulkResult{}, err
	}
	views, err := c.Select(ctx, b.Selection)
	if err != nil {
		return BulkResult{}, err
	}
	var res BulkResult
	keys := make([]string, 0, len(views))
	for _, v := range views {
		if b.Preview == nil {
			keys = append(keys, v.Meta.Key)
			continue
		}
		rev, ok := b.Preview.Revisions[v.Meta.Key]
		switch {
		case !ok:
			res.Added = append(res.Added, v.Meta.Key)
			continue
		case rev != v.Meta.Revision:
			res.Changed = append(res.Changed, v.Meta.Key)
		}
		keys = append(keys, v.Meta.Key)
	}
	if b.Preview != nil {
		for _, k := range slices.Sorted(maps.Keys(b.Preview.Revisions)) {
			if _, found := slices.BinarySearch(keys, k); !found {
				res.Gone = append(res.Gone, k)
			}
		}
	}
	res.Outcomes = make([]Outcome, len(keys))
	err = c.each(ctx, keys, b, func(i int, key string) {
		cmd, err := c.Apply(ctx, b.Selection.Kind, key, b.Action)
		res.Outcomes[i] = Outcome{Key: key, Command: cmd.ID, Err: err}
	})
	if err != nil {
		// Keep the outcomes of the documents reached.
		res.Outcomes = slices.DeleteFunc(res.Outcomes, func(o Outcome) bool { return o.Key == "" })
	}
	return res, err
}

// each calls act for every key, b.Parallel at a time, starting the i-th no
// sooner than i intervals of b.Rate after the first. It returns ctx.Err()
// when ctx ended before every key was started.
func (c *Client) each(ctx context.Context, keys []string, b Bulk, act func(i int, key string)) error {
	workers := max(b.Parallel, 1)
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, len(keys)) {
		wg.Go(func() {
			for i := range jobs {
				act(i, keys[i])
			}
		})
	}
	defer wg.Wait()
	defer close(jobs)
	interval := b.Rate.interval()
	start := time.Now()
	for i := range keys {
		if interval > 0 && i > 0 {
			if err := wait.Sleep(ctx, time.Until(start.Add(time.Duration(i)*interval))); err != nil {
				return err
			}
		}
		select {
		case jobs <- i:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
