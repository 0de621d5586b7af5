package storetest

import (
	"context"
	"fmt"
	"slices"

	"github.com/tendhq/tend/store"
)

// listKeys lists kind with opts and returns the keys, checking that the
// result is ordered by key, of the kind, and read at a revision no older
// than any item.
func listKeys(ctx context.Context, b store.Backend, kind string, opts store.ListOptions) ([]string, int64, error) {
	res, err := b.List(ctx, kind, opts)
	if err != nil {
		return nil, 0, fmt.Errorf("list %s %q owner %q: %w", kind, opts.Selector, opts.OwnerUID, err)
	}
	keys := make([]string, len(res.Items))
	for i, d := range res.Items {
		keys[i] = d.Meta.Key
		if d.Meta.Kind != kind {
			return nil, 0, fmt.Errorf("list %s returned a document of kind %s", kind, d.Meta.Kind)
		}
		if d.Meta.Revision > res.Revision {
			return nil, 0, fmt.Errorf("list %s: item %q has revision %d, newer than the list's %d", kind, d.Meta.Key, d.Meta.Revision, res.Revision)
		}
	}
	if !slices.IsSorted(keys) {
		return nil, 0, fmt.Errorf("list %s %q: keys not ordered: %q", kind, opts.Selector, keys)
	}
	return keys, res.Revision, nil
}

// checkListByLabel: List with each selector operator returns exactly the
// documents whose labels match, ordered by key, at a revision that moves
// with writes.
func checkListByLabel(ctx context.Context, b store.Backend) error {
	labelSets := []map[string]string{
		{"env": "prod", "tier": "web"},
		{"env": "prod", "tier": "db"},
		{"env": "dev", "tier": "web", "example.com/team": "a"},
		{"env": "dev"},
		{"tier": "web", "example.com/team": "b"},
		{"env": "staging", "example.com/team": "a"},
		{"env": ""},
		nil,
	}
	// Create in reverse key order, so insertion order is not key order.
	all := map[string]map[string]string{}
	for i := len(labelSets) - 1; i >= 0; i-- {
		key := fmt.Sprintf("ns/doc-%02d", i)
		d := newDoc(widget, key, i)
		d.Meta.Labels = labelSets[i]
		if _, err := b.Create(ctx, d); err != nil {
			return fmt.Errorf("create %q: %w", key, err)
		}
		all[key] = labelSets[i]
	}
	// Documents of another kind with the same labels must not show up.
	other := newDoc(gadget, "ns/doc-00", 0)
	other.Meta.Labels = labelSets[0]
	if _, err := b.Create(ctx, other); err != nil {
		return fmt.Errorf("create gadget: %w", err)
	}
	selectors := []string{
		"", "env=prod", "env==prod", "env!=prod", "env in (prod,dev)", "env notin (prod,dev)",
		"env", "!env", "env=", "env=prod,tier=web", "env in (dev,staging),example.com/team=a",
		"tier=web,!env", "example.com/team notin (a)", "env=none", "missing", "!missing",
		"env in (prod),tier notin (db)", "env=prod,env=dev",
	}
	for _, s := range selectors {
		sel, err := store.ParseSelector(s)
		if err != nil {
			return fmt.Errorf("parse %q: %w", s, err)
		}
		if err := expectSelected(ctx, b, sel, all); err != nil {
			return err
		}
	}
	if err := expectSelected(ctx, b, store.SelectorFromMap(map[string]string{"env": "dev", "tier": "web"}), all); err != nil {
		return err
	}
	// Relabelling moves a document between selections, and the list
	// revision follows the writes.
	_, rev1, err := listKeys(ctx, b, widget, store.ListOptions{})
	if err != nil {
		return err
	}
	d, err := b.Get(ctx, widget, "ns/doc-00")
	if err != nil {
		return fmt.Errorf("get: %w", err)
	}
	d.Meta.Labels = map[string]string{"env": "dev"}
	if d, err = b.UpdateSpec(ctx, d); err != nil {
		return fmt.Errorf("relabel: %w", err)
	}
	all["ns/doc-00"] = d.Meta.Labels
	if err := b.Delete(ctx, widget, "ns/doc-03", store.DeleteOptions{}); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	delete(all, "ns/doc-03")
	_, rev2, err := listKeys(ctx, b, widget, store.ListOptions{})
	if err != nil {
		return err
	}
	if rev2 < d.Meta.Revision || rev2 <= rev1 {
		return fmt.Errorf("list revision %d after writes up to %d (and %d before them)", rev2, d.Meta.Revision, rev1)
	}
	for _, s := range []string{"env=prod", "env=dev", "env in (prod,dev)", "tier=web", ""} {
		if err := expectSelected(ctx, b, store.MustParseSelector(s), all); err != nil {
			return fmt.Errorf("after relabel and delete: %w", err)
		}
	}
	return nil
}

// expectSelected lists widgets with sel and compares with the keys of all
// whose labels sel matches.
func expectSelected(ctx context.Context, b store.Backend, sel store.Selector, all map[string]map[string]string) error {
	var want []string
	for key, labels := range all {
		if sel.Matches(labels) {
			want = append(want, key)
		}
	}
	slices.Sort(want)
	got, _, err := listKeys(ctx, b, widget, store.ListOptions{Selector: sel})
	if err != nil {
		return err
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("list with selector %q: got %q, want %q", sel, got, want)
	}
	return nil
}

// checkListByOwner: List by owner UID returns the dependents that reference
// it, alone or with a selector, and follows changes of owner references.
func checkListByOwner(ctx context.Context, b store.Backend) error {
	o1, err := b.Create(ctx, newDoc(widget, "owner-1", 1))
	if err != nil {
		return fmt.Errorf("create owner: %w", err)
	}
	o2, err := b.Create(ctx, newDoc(widget, "owner-2", 2))
	if err != nil {
		return fmt.Errorf("create owner: %w", err)
	}
	ref := func(o store.Document, controller bool) store.OwnerRef {
		return store.OwnerRef{Kind: o.Meta.Kind, Key: o.Meta.Key, UID: o.Meta.UID, Controller: controller, BlockOwnerDeletion: controller}
	}
	deps := []struct {
		key    string
		owners []store.OwnerRef
		labels map[string]string
	}{
		{"dep-d", []store.OwnerRef{ref(o1, true)}, map[string]string{"role": "a"}},
		{"dep-c", []store.OwnerRef{ref(o1, false), ref(o2, true)}, map[string]string{"role": "b"}},
		{"dep-b", []store.OwnerRef{ref(o2, false)}, map[string]string{"role": "a"}},
		{"dep-a", nil, map[string]string{"role": "a"}},
	}
	stored := map[string]store.Document{}
	for _, d := range deps {
		in := newDoc(gadget, d.key, 0)
		in.Meta.Owners, in.Meta.Labels = d.owners, d.labels
		got, err := b.Create(ctx, in)
		if err != nil {
			return fmt.Errorf("create %q: %w", d.key, err)
		}
		if !slices.Equal(got.Meta.Owners, d.owners) {
			return fmt.Errorf("create %q: owners %+v, want %+v", d.key, got.Meta.Owners, d.owners)
		}
		stored[d.key] = got
	}
	// Owners in another kind must not be listed.
	stray := newDoc(widget, "stray", 0)
	stray.Meta.Owners = []store.OwnerRef{ref(o1, false)}
	if _, err := b.Create(ctx, stray); err != nil {
		return fmt.Errorf("create stray: %w", err)
	}
	expect := func(what string, opts store.ListOptions, want ...string) error {
		got, _, err := listKeys(ctx, b, gadget, opts)
		if err != nil {
			return err
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("%s: got %q, want %q", what, got, want)
		}
		return nil
	}
	for _, c := range []struct {
		what string
		opts store.ListOptions
		want []string
	}{
		{"owner 1", store.ListOptions{OwnerUID: o1.Meta.UID}, []string{"dep-c", "dep-d"}},
		{"owner 2", store.ListOptions{OwnerUID: o2.Meta.UID}, []string{"dep-b", "dep-c"}},
		{"unknown owner", store.ListOptions{OwnerUID: "no-such-uid"}, nil},
		{"owner 1 and role=a", store.ListOptions{OwnerUID: o1.Meta.UID, Selector: store.MustParseSelector("role=a")}, []string{"dep-d"}},
		{"owner 2 and role!=a", store.ListOptions{OwnerUID: o2.Meta.UID, Selector: store.MustParseSelector("role!=a")}, []string{"dep-c"}},
	} {
		if err := expect(c.what, c.opts, c.want...); err != nil {
			return err
		}
	}
	// Dropping an owner reference, and deleting a dependent, update the
	// owner listing.
	c := stored["dep-c"]
	c.Meta.Owners = []store.OwnerRef{ref(o2, true)}
	if _, err := b.UpdateSpec(ctx, c); err != nil {
		return fmt.Errorf("drop owner reference: %w", err)
	}
	if err := b.Delete(ctx, gadget, "dep-b", store.DeleteOptions{}); err != nil {
		return fmt.Errorf("delete dependent: %w", err)
	}
	return firstErr(
		expect("owner 1 after dropping a reference", store.ListOptions{OwnerUID: o1.Meta.UID}, "dep-d"),
		expect("owner 2 after deleting a dependent", store.ListOptions{OwnerUID: o2.Meta.UID}, "dep-c"),
	)
}
