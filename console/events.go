package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/tendhq/tend/registry"

	"go.uber.org/zap"

	"github.com/tendhq/tend/oncall"
	"github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// objectEvent is what the event stream sends about a document that
// changed: its row, and, on a stream for one document, its status.
type objectEvent struct {
	Type string `json:"type"` // Added, Modified or Deleted
	objectRow
	Revision int64           `json:"revision"`
	Status   json.RawMessage `json:"status,omitempty"`
}

// heartbeat is how often an idle event stream sends a comment, so that
// proxies keep it open and a closed connection is noticed.
const heartbeat = 15 * time.Second

// serveEvents streams, as server-sent events, the changes to the documents
// of kind (every registered kind when the query names none), or of the one
// document key, after revision from. Each change is an event "object"
// whose data is an objectEvent in JSON; when the store no longer holds the
// changes after from, a "reload" event tells the page to load itself
// again. The stream ends with the request.
func (c *Console) serveEvents(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	q := r.URL.Query()
	kind, key := q.Get("kind"), q.Get("key")
	var from int64
	if s := q.Get("from"); s != "" {
		var err error
		if from, err = strconv.ParseInt(s, 10, 64); err != nil || from < 0 {
			http.Error(w, fmt.Sprintf("console: bad revision %q", s), http.StatusBadRequest)
			return
		}
	}
	// A browser that reconnects names the last event it received.
	lastID, _ := strconv.ParseInt(r.Header.Get("Last-Event-ID"), 10, 64)
	from = max(from, lastID)

	var kinds []string
	if kind != "" {
		kinds = []string{kind}
	} else {
		regs, err := c.reader.Registrations(ctx)
		if err != nil {
			c.fail(w, r, err)
			return
		}
		for _, reg := range regs {
			kinds = append(kinds, reg.Kind)
		}
	}
	machines := map[string]*statemachine.Machine[string, string]{}
	watches := make([]store.Watch, 0, len(kinds)+1)
	defer func() {
		for _, wa := range watches {
			_ = wa.Close()
		}
	}()
	if kind == "" {
		// The page of every kind also learns of kinds registered later.
		wa, err := c.watchNow(ctx, registry.Kind)
		if err != nil && !errors.Is(err, store.ErrUnknownKind) {
			c.fail(w, r, err)
			return
		}
		if wa != nil {
			watches = append(watches, wa)
		}
	}
	compacted := false
	for _, k := range kinds {
		reg, err := c.reader.Registration(ctx, k)
		if err != nil {
			c.fail(w, r, err)
			return
		}
		if machines[k], err = reg.Build(); err != nil {
			c.fail(w, r, err)
			return
		}
		start := from
		if start == 0 || kind == "" {
			// The pages of one kind name the revision they were read at;
			// the page of every kind reads itself again on any change, so
			// its stream starts now.
			if start, err = c.revision(ctx, k); err != nil {
				c.fail(w, r, err)
				return
			}
		}
		wa, err := c.store.Watch(ctx, k, start)
		switch {
		case errors.Is(err, store.ErrCompacted):
			compacted = true
		case err != nil:
			c.fail(w, r, err)
			return
		default:
			watches = append(watches, wa)
		}
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "console: streaming unsupported", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	_, _ = fmt.Fprint(w, "retry: 2000\n\n")
	flusher.Flush()
	if compacted {
		sendReload(w, flusher)
		return
	}

	// One goroutine per watch hands events to this one, which alone
	// writes the response.
	events := make(chan store.Event)
	failed := make(chan error, len(watches))
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for _, wa := range watches {
		wg.Go(func() {
			for {
				ev, err := wa.Next(ctx)
				if err != nil {
					failed <- err
					return
				}
				select {
				case events <- ev:
				case <-ctx.Done():
					return
				}
			}
		})
	}
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case err := <-failed:
			if ctx.Err() == nil {
				// Compacted, lagged or closed: the page reads everything
				// again and opens a new stream.
				c.log.Debug("console event stream ended", zap.Error(err))
				sendReload(w, flusher)
			}
			return
		case <-tick.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return
			}
			flusher.Flush()
		case ev := <-events:
			if key != "" && ev.Document.Meta.Key != key {
				continue
			}
			oe, err := c.event(ev, machines[ev.Document.Meta.Kind], key != "")
			if err != nil {
				c.log.Debug("console event skipped", zap.Error(err))
				continue
			}
			data, err := json.Marshal(oe)
			if err != nil {
				continue
			}
			if _, err := fmt.Fprintf(w, "id: %d\nevent: object\ndata: %s\n\n", ev.Revision, data); err != nil {
				return
			}
			flusher.Flush()
		}
	}
}

// watchNow watches kind from the store's revision now.
func (c *Console) watchNow(ctx context.Context, kind string) (store.Watch, error) {
	rev, err := c.revision(ctx, kind)
	if err != nil {
		return nil, err
	}
	return c.store.Watch(ctx, kind, rev)
}

func sendReload(w http.ResponseWriter, f http.Flusher) {
	_, _ = fmt.Fprint(w, "event: reload\ndata: {}\n\n")
	f.Flush()
}

// event describes a change for the pages, reading the document as the
// oncall package reads it.
func (c *Console) event(ev store.Event, m *statemachine.Machine[string, string], withStatus bool) (objectEvent, error) {
	o, err := oncall.Decode(ev.Document)
	if err != nil {
		return objectEvent{}, err
	}
	oe := objectEvent{Type: ev.Type.String(), Revision: ev.Revision, objectRow: c.row(o.Meta.Kind, m, o, c.now())}
	if withStatus && ev.Type != store.Deleted {
		oe.Status = o.Status
	}
	return oe, nil
}
