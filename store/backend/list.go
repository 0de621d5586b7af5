package backend

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/tendhq/tend/store"
)

// Cursor is the position a continue token ([store.ListResult.Continue])
// records: where the next page starts, and the revision of the list's
// first page.
type Cursor struct {
	// Revision is the revision the first page was read at. A backend that
	// can read at a past revision reads every later page at it; every
	// page reports it as its [store.ListResult.Revision].
	Revision int64
	// After is the key of the last document of the pages before: the next
	// page holds the documents whose keys sort after it.
	After string
}

// continueFormat is the first byte of every continue token, so that a
// later format can tell its tokens from these.
const continueFormat = 1

// EncodeContinue returns the continue token of c: URL-safe base64 of a
// format byte, the revision as an unsigned varint, and the key. Decode it
// with [DecodeContinue].
func EncodeContinue(c Cursor) string {
	b := make([]byte, 0, 1+binary.MaxVarintLen64+len(c.After))
	b = append(b, continueFormat)
	b = binary.AppendUvarint(b, uint64(c.Revision))
	b = append(b, c.After...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeContinue reads a token written by [EncodeContinue]. Anything else,
// including a token that encodes the same cursor differently, fails with an
// error matching [store.ErrInvalidContinue]: every accepted token is the
// encoding of its cursor, whose revision is positive and whose key passes
// [store.ValidateKey].
func DecodeContinue(token string) (Cursor, error) {
	b, err := base64.RawURLEncoding.Strict().DecodeString(token)
	if err != nil || len(b) == 0 || b[0] != continueFormat {
		return Cursor{}, badContinue(token, "not a continue token of this backend")
	}
	rev, n := binary.Uvarint(b[1:])
	if n <= 0 || rev == 0 || rev > math.MaxInt64 {
		return Cursor{}, badContinue(token, "bad revision")
	}
	c := Cursor{Revision: int64(rev), After: string(b[1+n:])}
	if err := store.ValidateKey(c.After); err != nil {
		return Cursor{}, badContinue(token, "bad key")
	}
	if EncodeContinue(c) != token {
		return Cursor{}, badContinue(token, "not in canonical form")
	}
	return c, nil
}

func badContinue(token, why string) error {
	if len(token) > 64 {
		token = token[:64] + "…"
	}
	return fmt.Errorf("%w %q: %s", store.ErrInvalidContinue, token, why)
}

// StartList checks the options of a List of kind before the backend reads
// anything: an invalid selector or a negative limit is an error matching
// [store.ErrInvalid], a malformed continue token one matching
// [store.ErrInvalidContinue]; each names the operation and the kind. It
// returns the cursor of opts.Continue, zero for a first page.
func StartList(kind string, opts store.ListOptions) (Cursor, error) {
	fail := func(err error) (Cursor, error) { return Cursor{}, &store.Error{Op: "list", Kind: kind, Err: err} }
	if err := opts.Selector.Validate(); err != nil {
		return fail(err)
	}
	if opts.Limit < 0 {
		return fail(fmt.Errorf("%w: negative limit %d", store.ErrInvalid, opts.Limit))
	}
	if opts.Continue == "" {
		return Cursor{}, nil
	}
	c, err := DecodeContinue(opts.Continue)
	if err != nil {
		return fail(err)
	}
	return c, nil
}

// Page cuts one page out of sorted, the matching documents (or the
// backend's records of them) ordered by their keys, read at revision rev,
// for a List whose options had limit and whose continue token held c: the
// items whose keys sort after c.After, at most limit of them (all when
// limit is zero). It returns them, the continue token of the next page
// (empty when no item remains) and the revision the page reports: c's
// for a later page, rev for a first one.
func Page[T any](sorted []T, key func(T) string, limit int, c Cursor, rev int64) (page []T, next string, revision int64) {
	revision = rev
	if c.Revision != 0 {
		revision = c.Revision
	}
	if c.After != "" {
		sorted = sorted[sort.Search(len(sorted), func(i int) bool { return key(sorted[i]) > c.After }):]
	}
	if limit == 0 || len(sorted) <= limit {
		return sorted, "", revision
	}
	page = sorted[:limit]
	return page, EncodeContinue(Cursor{Revision: revision, After: key(page[limit-1])}), revision
}

// Selects reports whether a List with opts keeps the document whose
// metadata is m: its labels match opts.Selector and, when opts.OwnerUID is
// set, one of its owner references has that UID.
func Selects(opts store.ListOptions, m *store.Meta) bool {
	return opts.Selector.Matches(m.Labels) &&
		(opts.OwnerUID == "" || slices.ContainsFunc(m.Owners, func(o store.OwnerRef) bool { return o.UID == opts.OwnerUID }))
}
