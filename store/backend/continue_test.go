package backend_test

import (
	"errors"
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/tendhq/tend/store"
	"github.com/tendhq/tend/store/backend"
)

func TestContinueRoundTrip(t *testing.T) {
	for _, c := range []backend.Cursor{
		{Revision: 1, After: "a"},
		{Revision: math.MaxInt64, After: "team-a/gw-1"},
		{Revision: 300, After: "x/y.z:~_-"},
	} {
		got, err := backend.DecodeContinue(backend.EncodeContinue(c))
		if err != nil || got != c {
			t.Errorf("round trip of %+v: got %+v, %v", c, got, err)
		}
	}
}

func TestDecodeContinueRefuses(t *testing.T) {
	for _, token := range []string{
		"", "x", "not-a-token", "AQ", // format byte only
		backend.EncodeContinue(backend.Cursor{Revision: 0, After: "a"}),    // no revision
		backend.EncodeContinue(backend.Cursor{Revision: 1, After: ""}),     // no key
		backend.EncodeContinue(backend.Cursor{Revision: 1, After: "a//b"}), // bad key
		backend.EncodeContinue(backend.Cursor{Revision: -1, After: "a"}),   // negative
		"AYAAYQ", // the revision 0 as an overlong varint: not canonical
		backend.EncodeContinue(backend.Cursor{Revision: 1, After: "a"}) + "=",
	} {
		if c, err := backend.DecodeContinue(token); !errors.Is(err, store.ErrInvalidContinue) || !errors.Is(err, store.ErrInvalid) {
			t.Errorf("DecodeContinue(%q) = %+v, %v; want ErrInvalidContinue", token, c, err)
		}
	}
}

func TestStartList(t *testing.T) {
	if _, err := backend.StartList("Widget", store.ListOptions{Limit: -1}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("negative limit: %v", err)
	}
	_, err := backend.StartList("Widget", store.ListOptions{Continue: "zz"})
	var se *store.Error
	if !errors.Is(err, store.ErrInvalidContinue) || !errors.As(err, &se) || se.Kind != "Widget" || se.Op != "list" {
		t.Errorf("bad token: %v", err)
	}
}

// FuzzDecodeContinue: DecodeContinue never panics, refuses with
// ErrInvalidContinue, and accepts exactly the encodings of valid cursors.
func FuzzDecodeContinue(f *testing.F) {
	for _, c := range []backend.Cursor{{Revision: 1, After: "a"}, {Revision: 1 << 40, After: "team-a/gw-1"}} {
		f.Add(backend.EncodeContinue(c))
	}
	for _, s := range []string{"", "AQ", "AYAAYQ", "AQFh", "////", "AQH_"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, token string) {
		c, err := backend.DecodeContinue(token)
		if err != nil {
			if !errors.Is(err, store.ErrInvalidContinue) {
				t.Fatalf("DecodeContinue(%q): error %v does not match ErrInvalidContinue", token, err)
			}
			return
		}
		if c.Revision <= 0 || store.ValidateKey(c.After) != nil {
			t.Fatalf("DecodeContinue(%q) accepted %+v", token, c)
		}
		if again := backend.EncodeContinue(c); again != token {
			t.Fatalf("DecodeContinue(%q) = %+v, which encodes as %q", token, c, again)
		}
	})
}

// TestPageProperty: for any sorted keys and any limit, the pages Page cuts
// hold at most limit keys each, report the first page's revision, and
// together are the keys, each once, in order; writes between pages (keys
// added or removed) neither repeat nor lose a key present throughout.
func TestPageProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		gen := rapid.SliceOfDistinct(rapid.StringMatching(`[a-c][a-c.-]{0,3}(/[a-c][a-c.-]{0,3})?`), rapid.ID[string])
		keys := slices.Sorted(slices.Values(gen.Draw(t, "keys")))
		limit := rapid.IntRange(1, len(keys)+2).Draw(t, "limit")
		id := func(k string) string { return k }
		var got []string
		c := backend.Cursor{}
		current, seen := keys, len(keys)
		for pages := 0; ; pages++ {
			if pages > seen+1 {
				t.Fatalf("more than %d pages", pages)
			}
			page, next, rev := backend.Page(current, id, limit, c, int64(10+pages))
			if len(page) > limit || rev != 10 {
				t.Fatalf("page %d: %d keys at revision %d, limit %d at revision 10", pages, len(page), rev, limit)
			}
			got = append(got, page...)
			if next == "" {
				break
			}
			var err error
			if c, err = backend.DecodeContinue(next); err != nil {
				t.Fatal(err)
			}
			// Between pages, a write adds or removes keys.
			extra := rapid.SliceOf(rapid.StringMatching(`[a-c][a-c]{0,3}`)).Draw(t, "added")
			current = slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(keys), extra...))))
			seen += len(extra)
		}
		if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
			t.Fatalf("pages %q are not in order or repeat a key", got)
		}
		for _, k := range keys {
			if !slices.Contains(got, k) {
				t.Fatalf("pages %q lost %q", got, k)
			}
		}
	})
}
