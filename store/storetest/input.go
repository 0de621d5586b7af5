package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/tendhq/tend/store"
)

// checkCancelled: every method called with a cancelled context returns
// context.Canceled and changes nothing.
func checkCancelled(ctx context.Context, b store.Backend) error {
	d, err := b.Create(ctx, newDoc(widget, "c", 1))
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	held, err := b.AcquireLease(ctx, "tend/held", "a", longTTL)
	if err != nil {
		return fmt.Errorf("acquire: %w", err)
	}
	before, err := revision(ctx, b)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	spec2 := d
	spec2.Spec = spec(2)
	status2 := d
	status2.Status = spec(2)
	calls := []struct {
		what string
		call func() error
	}{
		{"get", func() error { _, err := b.Get(cctx, widget, "c"); return err }},
		{"list", func() error { _, err := b.List(cctx, widget, store.ListOptions{}); return err }},
		{"create", func() error { _, err := b.Create(cctx, newDoc(widget, "new", 1)); return err }},
		{"update spec", func() error { _, err := b.UpdateSpec(cctx, spec2); return err }},
		{"update status", func() error { _, err := b.UpdateStatus(cctx, status2); return err }},
		{"delete", func() error { return b.Delete(cctx, widget, "c", store.DeleteOptions{}) }},
		{"watch", func() error {
			w, err := b.Watch(cctx, widget, before)
			if err == nil {
				w.Close()
			}
			return err
		}},
		{"acquire lease", func() error { _, err := b.AcquireLease(cctx, "tend/free", "y", longTTL); return err }},
		{"renew lease", func() error { _, err := b.RenewLease(cctx, held); return err }},
		{"release lease", func() error { return b.ReleaseLease(cctx, held) }},
		{"list leases", func() error { _, err := b.ListLeases(cctx, ""); return err }},
	}
	for _, c := range calls {
		if err := c.call(); !errors.Is(err, context.Canceled) {
			return fmt.Errorf("%s with a cancelled context: got %v, want context.Canceled", c.what, err)
		}
	}
	if err := expectStored(ctx, b, "after cancelled writes", d); err != nil {
		return err
	}
	if err := expectAbsent(ctx, b, "after cancelled create", widget, "new"); err != nil {
		return err
	}
	if after, err := revision(ctx, b); err != nil || after != before {
		return fmt.Errorf("cancelled calls moved the revision from %d to %d (%v)", before, after, err)
	}
	if _, err := b.AcquireLease(ctx, "tend/held", "z", longTTL); !errors.Is(err, store.ErrLeaseHeld) {
		return fmt.Errorf("a cancelled release gave the lease up: acquire by another holder got %v", err)
	}
	if _, err := b.AcquireLease(ctx, "tend/free", "z", longTTL); err != nil {
		return fmt.Errorf("a cancelled acquire took the lease: %w", err)
	}
	return nil
}

// checkBadInput: unknown kinds, malformed keys, labels, owners, selectors
// and revisions fail with a clear error naming the document, and nothing is
// written.
func checkBadInput(ctx context.Context, b store.Backend) error {
	good, err := b.Create(ctx, newDoc(widget, "good", 1))
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	before, err := revision(ctx, b)
	if err != nil {
		return err
	}
	// ops calls every document method on kind and key.
	ops := func(kind, key string) map[string]error {
		d := newDoc(kind, key, 1)
		out := map[string]error{}
		_, out["get"] = b.Get(ctx, kind, key)
		_, out["create"] = b.Create(ctx, d)
		d.Meta.Revision = good.Meta.Revision
		_, out["update spec"] = b.UpdateSpec(ctx, d)
		d.Status = spec(2)
		_, out["update status"] = b.UpdateStatus(ctx, d)
		out["delete"] = b.Delete(ctx, kind, key, store.DeleteOptions{})
		return out
	}
	kindOps := func(kind string) map[string]error {
		out := map[string]error{}
		_, out["list"] = b.List(ctx, kind, store.ListOptions{})
		w, err := b.Watch(ctx, kind, 0)
		if err == nil {
			w.Close()
		}
		out["watch"] = err
		return out
	}
	for op, err := range ops("Nope", "good") {
		if err := wantErr(op+" of an unknown kind", err, store.ErrUnknownKind, "Nope", "good"); err != nil {
			return err
		}
	}
	for op, err := range kindOps("Nope") {
		if err := wantErr(op+" of an unknown kind", err, store.ErrUnknownKind, "Nope", ""); err != nil {
			return err
		}
	}
	for _, kind := range []string{"", "widget", "Wid get", strings.Repeat("W", 64)} {
		all := ops(kind, "good")
		for op, err := range kindOps(kind) {
			all[op] = err
		}
		for op, err := range all {
			if !errors.Is(err, store.ErrUnknownKind) && !errors.Is(err, store.ErrInvalid) {
				return fmt.Errorf("%s of malformed kind %q: got %v, want ErrInvalid or ErrUnknownKind", op, kind, err)
			}
		}
	}
	for _, key := range []string{
		"", strings.Repeat("k", store.MaxKeyLen+1), "a b", "/a", "a/", "a//b", "a/../b", ".", "é", "a\x00b", "a\nb",
	} {
		for op, err := range ops(widget, key) {
			if err := wantErr(fmt.Sprintf("%s with key %q", op, key), err, store.ErrInvalid, widget, key); err != nil {
				return err
			}
		}
	}
	long := strings.Repeat("v", store.MaxNameLen+1)
	for _, labels := range []map[string]string{
		{"bad key": "v"}, {"-k": "v"}, {"k": "bad value"}, {"k": long}, {long: "v"},
		{"Example.com/k": "v"}, {"/k": "v"}, {"example.com/": "v"}, {"k": "-v"},
	} {
		d := newDoc(widget, "labelled", 1)
		d.Meta.Labels = labels
		_, err := b.Create(ctx, d)
		if err := wantErr(fmt.Sprintf("create with labels %q", labels), err, store.ErrInvalid, widget, "labelled"); err != nil {
			return err
		}
		up := good
		up.Meta.Labels = labels
		_, err = b.UpdateSpec(ctx, up)
		if err := wantErr(fmt.Sprintf("update spec with labels %q", labels), err, store.ErrInvalid, widget, "good"); err != nil {
			return err
		}
	}
	for _, owners := range [][]store.OwnerRef{
		{{Kind: gadget, Key: "o"}},
		{{Kind: "gadget", Key: "o", UID: "u"}},
		{{Kind: gadget, Key: "", UID: "u"}},
		{{Kind: gadget, Key: "o", UID: "u"}, {Kind: gadget, Key: "p", UID: "u"}},
		{{Kind: gadget, Key: "o", UID: "u", Controller: true}, {Kind: gadget, Key: "p", UID: "v", Controller: true}},
	} {
		d := newDoc(widget, "owned", 1)
		d.Meta.Owners = owners
		_, err := b.Create(ctx, d)
		if err := wantErr(fmt.Sprintf("create with owners %+v", owners), err, store.ErrInvalid, widget, "owned"); err != nil {
			return err
		}
	}
	stale := newDoc(widget, "revised", 1)
	stale.Meta.Revision = 7
	_, err = b.Create(ctx, stale)
	if err := wantErr("create with a revision", err, store.ErrInvalid, widget, "revised"); err != nil {
		return err
	}
	_, err = b.List(ctx, widget, store.ListOptions{Selector: store.SelectorFromMap(map[string]string{"bad key": "v"})})
	if err := wantErr("list with an invalid selector", err, store.ErrInvalid, widget, ""); err != nil {
		return err
	}
	_, err = b.Watch(ctx, widget, -1)
	if err := wantErr("watch from a negative revision", err, store.ErrInvalid, widget, ""); err != nil {
		return err
	}
	if err := expectStored(ctx, b, "after bad input", good); err != nil {
		return err
	}
	if after, err := revision(ctx, b); err != nil || after != before {
		return fmt.Errorf("refused calls moved the revision from %d to %d (%v)", before, after, err)
	}
	keys, _, err := listKeys(ctx, b, widget, store.ListOptions{})
	if err != nil {
		return err
	}
	if len(keys) != 1 || keys[0] != "good" {
		return fmt.Errorf("refused creates stored documents: %q", keys)
	}
	return nil
}
