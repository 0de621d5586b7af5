package backend_test

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tendhq/tend/store"
	"github.com/tendhq/tend/store/backend"
)

// A backend that holds its documents sorted by key serves a paged List
// with StartList and Page: each page starts after the last key of the one
// before and reports the first page's revision.
func ExamplePage() {
	keys := []string{"a", "b", "c", "d", "e"} // the matching documents, by key
	const rev = 42                            // the revision they were read at
	key := func(k string) string { return k }

	opts := store.ListOptions{Limit: 2}
	for {
		c, err := backend.StartList("Widget", opts)
		if err != nil {
			panic(err)
		}
		page, next, revision := backend.Page(keys, key, opts.Limit, c, rev)
		fmt.Println(strings.Join(page, ","), "at revision", revision, "more:", next != "")
		if next == "" {
			break
		}
		opts.Continue = next
	}

	// A token the backend did not write is refused.
	_, err := backend.StartList("Widget", store.ListOptions{Continue: "not-a-token"})
	fmt.Println(errors.Is(err, store.ErrInvalidContinue))
	// Output:
	// a,b at revision 42 more: true
	// c,d at revision 42 more: true
	// e at revision 42 more: false
	// true
}

// A backend checks a Delete's preconditions against the stored metadata.
func ExampleCheckDelete() {
	stored := store.Meta{Kind: "Widget", Key: "w-1", UID: "u-1", Revision: 7}
	fmt.Println(backend.CheckDelete(stored, store.DeleteOptions{Revision: 7}))
	err := backend.CheckDelete(stored, store.DeleteOptions{UID: "u-0"})
	fmt.Println(errors.Is(err, store.ErrConflict))
	fmt.Println(err)
	// Output:
	// <nil>
	// true
	// store: delete Widget "w-1": store: conflict: UID "u-0" is not the stored "u-1"
}
