package history

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/tendhq/tend/store"
)

// Response is the body of a [Handler] answer.
type Response struct {
	Kind    string  `json:"kind"`
	Key     string  `json:"key"`
	Entries []Entry `json:"entries"`
}

// Handler returns a handler that answers GET /history/{kind}/{key}
// (the key may hold slashes) with the document's history read from r, as a
// JSON [Response], oldest entry first; an empty list when nothing was
// recorded. A kind the store does not hold a history of is not found (404);
// another failure to read is 500, with the error as the body.
func Handler(r *Reader) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		kind, key := req.PathValue("kind"), req.PathValue("key")
		entries, err := r.History(req.Context(), kind, key)
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		switch {
		case errors.Is(err, store.ErrUnknownKind) || errors.Is(err, store.ErrInvalid):
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		case err != nil:
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(Response{Kind: kind, Key: key, Entries: append([]Entry{}, entries...)})
	})
}
