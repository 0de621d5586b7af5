package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/tendhq/tend/store"
)

// pageKeys are the keys the paging check stores: their byte order differs
// from a dictionary order that folds case and skips punctuation, so a
// backend whose pages follow another order than List's loses or repeats
// documents.
var pageKeys = []string{
	"Z", "a", "a-1", "a.1", "a/1", "a:1", "a_1", "a~1", "b",
	"doc-00", "doc-01", "doc-02", "doc-03", "doc-04", "doc-05", "doc-06", "doc-07",
}

// readPages lists kind with opts in pages of limit until the last, and
// checks each page: at most limit documents, all pages at the first
// page's revision, keys in increasing order within and across pages.
func readPages(ctx context.Context, b store.Backend, kind string, opts store.ListOptions, limit int) ([]store.Document, error) {
	opts.Limit, opts.Continue = limit, ""
	var all []store.Document
	var rev int64
	for page := 0; ; page++ {
		if page > 4*len(pageKeys)+4 {
			return nil, fmt.Errorf("list %s by %d: more than %d pages: the continue tokens do not move on", kind, limit, page)
		}
		res, err := b.List(ctx, kind, opts)
		if err != nil {
			return nil, fmt.Errorf("list %s by %d, page %d: %w", kind, limit, page, err)
		}
		if len(res.Items) > limit {
			return nil, fmt.Errorf("list %s by %d, page %d: %d documents", kind, limit, page, len(res.Items))
		}
		if page == 0 {
			rev = res.Revision
		} else if res.Revision != rev {
			return nil, fmt.Errorf("list %s by %d, page %d: revision %d, the first page's was %d", kind, limit, page, res.Revision, rev)
		}
		for _, d := range res.Items {
			if n := len(all); n > 0 && all[n-1].Meta.Key >= d.Meta.Key {
				return nil, fmt.Errorf("list %s by %d, page %d: key %q follows %q: pages repeat or leave key order", kind, limit, page, d.Meta.Key, all[n-1].Meta.Key)
			}
			all = append(all, d)
		}
		if res.Continue == "" {
			return all, nil
		}
		opts.Continue = res.Continue
	}
}

func docKeys(docs []store.Document) []string {
	keys := make([]string, len(docs))
	for i, d := range docs {
		keys[i] = d.Meta.Key
	}
	return keys
}

// checkListPages: paged lists of every size, alone and with selectors,
// together equal one full List, in key order; a write between pages
// neither repeats nor loses a document it did not touch; a malformed
// continue token fails with ErrInvalidContinue; Limit 0 lists everything.
func checkListPages(ctx context.Context, b store.Backend) error {
	for i, key := range pageKeys {
		// Create in an order that is neither key order nor its reverse.
		key = pageKeys[(i*7)%len(pageKeys)]
		d := newDoc(widget, key, i)
		d.Meta.Labels = map[string]string{"env": []string{"prod", "dev", "test"}[i%3]}
		if _, err := b.Create(ctx, d); err != nil {
			return fmt.Errorf("create %q: %w", key, err)
		}
	}
	if _, err := b.Create(ctx, newDoc(gadget, "a", 0)); err != nil {
		return fmt.Errorf("create gadget: %w", err)
	}
	for _, sel := range []string{"", "env=prod", "env!=prod", "env in (dev,test)"} {
		opts := store.ListOptions{Selector: store.MustParseSelector(sel)}
		full, err := b.List(ctx, widget, opts)
		if err != nil {
			return fmt.Errorf("list %q: %w", sel, err)
		}
		if full.Continue != "" {
			return fmt.Errorf("list %q without a limit: continue token %q, want none", sel, full.Continue)
		}
		if sel == "" && !slices.Equal(docKeys(full.Items), slices.Sorted(slices.Values(pageKeys))) {
			return fmt.Errorf("list: keys %q, want %q", docKeys(full.Items), slices.Sorted(slices.Values(pageKeys)))
		}
		for _, limit := range []int{1, 2, 3, 5, len(pageKeys), 100} {
			pages, err := readPages(ctx, b, widget, opts, limit)
			if err != nil {
				return fmt.Errorf("selector %q: %w", sel, err)
			}
			if !slices.Equal(docKeys(pages), docKeys(full.Items)) {
				return fmt.Errorf("selector %q, pages of %d: keys %q, one list has %q", sel, limit, docKeys(pages), docKeys(full.Items))
			}
			for i := range pages {
				if diff := sameDoc(pages[i], full.Items[i]); diff != "" {
					return fmt.Errorf("selector %q, pages of %d: %q %s", sel, limit, pages[i].Meta.Key, diff)
				}
			}
		}
	}
	if err := checkPagesWithWrites(ctx, b); err != nil {
		return err
	}
	return checkBadContinue(ctx, b)
}

// checkPagesWithWrites: writes between two pages neither repeat nor lose
// the documents they did not touch.
func checkPagesWithWrites(ctx context.Context, b store.Backend) error {
	first, err := b.List(ctx, widget, store.ListOptions{Limit: 4})
	if err != nil {
		return fmt.Errorf("first page: %w", err)
	}
	if len(first.Items) == 0 || first.Continue == "" {
		return fmt.Errorf("first page of 4 of %d documents: %d documents, continue %q", len(pageKeys), len(first.Items), first.Continue)
	}
	seen := first.Items
	last := seen[len(seen)-1].Meta.Key
	// Change a document already listed and one not yet listed, remove
	// one not yet listed, and create one on each side of the cursor.
	touched := map[string]bool{}
	for _, key := range []string{seen[0].Meta.Key, "doc-03"} {
		d, err := b.Get(ctx, widget, key)
		if err != nil {
			return fmt.Errorf("get %q: %w", key, err)
		}
		d.Spec = spec(1000)
		if _, err := b.UpdateSpec(ctx, d); err != nil {
			return fmt.Errorf("update %q between pages: %w", key, err)
		}
		touched[key] = true
	}
	if err := b.Delete(ctx, widget, "doc-05", store.DeleteOptions{}); err != nil {
		return fmt.Errorf("delete between pages: %w", err)
	}
	touched["doc-05"] = true
	for _, key := range []string{"A", "doc-035"} {
		if _, err := b.Create(ctx, newDoc(widget, key, 0)); err != nil {
			return fmt.Errorf("create %q between pages: %w", key, err)
		}
		touched[key] = true
	}
	opts := store.ListOptions{Limit: 4, Continue: first.Continue}
	all := slices.Clone(seen)
	for page := 1; ; page++ {
		if page > 2*len(pageKeys) {
			return errors.New("list with writes between pages: the continue tokens do not move on")
		}
		res, err := b.List(ctx, widget, opts)
		if err != nil {
			return fmt.Errorf("page %d after writes: %w", page, err)
		}
		if res.Revision != first.Revision {
			return fmt.Errorf("page %d after writes: revision %d, the first page's was %d", page, res.Revision, first.Revision)
		}
		for _, d := range res.Items {
			if d.Meta.Key <= last {
				return fmt.Errorf("page %d after writes: key %q does not follow %q: a document is repeated or out of order", page, d.Meta.Key, last)
			}
			last = d.Meta.Key
			all = append(all, d)
		}
		if res.Continue == "" {
			break
		}
		opts.Continue = res.Continue
	}
	got := map[string]int{}
	for _, d := range all {
		got[d.Meta.Key]++
	}
	for _, key := range pageKeys {
		if !touched[key] && got[key] != 1 {
			return fmt.Errorf("list with writes between pages: unchanged document %q listed %d times, want once (pages %q)", key, got[key], docKeys(all))
		}
	}
	return nil
}

// checkBadContinue: tokens no List returned fail with ErrInvalidContinue
// (which matches ErrInvalid too) and name the kind; a negative limit fails
// with ErrInvalid.
func checkBadContinue(ctx context.Context, b store.Backend) error {
	res, err := b.List(ctx, widget, store.ListOptions{Limit: 2})
	if err != nil {
		return fmt.Errorf("list: %w", err)
	}
	if res.Continue == "" {
		return errors.New("list by 2: no continue token")
	}
	for _, token := range []string{"garbage", "%%%", res.Continue + "!", res.Continue[:1], "AA"} {
		_, err := b.List(ctx, widget, store.ListOptions{Limit: 2, Continue: token})
		if err := wantErr(fmt.Sprintf("list with continue token %q", token), err, store.ErrInvalidContinue, widget, ""); err != nil {
			return err
		}
		if !errors.Is(err, store.ErrInvalid) {
			return fmt.Errorf("list with continue token %q: error %v does not match ErrInvalid", token, err)
		}
	}
	_, err = b.List(ctx, widget, store.ListOptions{Limit: -1})
	return wantErr("list with limit -1", err, store.ErrInvalid, widget, "")
}
