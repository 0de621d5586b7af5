package wait_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/internal/wait"
	"github.com/tendhq/tend/store"
)

// compactedStore fails every watch as compacted, and counts them.
type compactedStore struct {
	store.Backend
	watches atomic.Int32
}

func (b *compactedStore) Watch(ctx context.Context, kind string, from int64) (store.Watch, error) {
	b.watches.Add(1)
	return nil, &store.Error{Op: "watch", Kind: kind, Err: store.ErrCompacted}
}

// Document judges each revision once, in order, and reads the document
// again a minute after a watch it cannot start, without spinning.
func TestDocument(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, err := memory.New(memory.Config{Kinds: []string{"Thing"}})
		if err != nil {
			t.Fatal(err)
		}
		doc, err := mem.Create(t.Context(), store.Document{Meta: store.Meta{Kind: "Thing", Key: "t1"}, Spec: []byte(`{"n":0}`)})
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex // guards doc, written by the writers below
		write := func(after time.Duration, spec string) {
			time.Sleep(after)
			mu.Lock()
			defer mu.Unlock()
			doc.Spec = []byte(spec)
			updated, err := mem.UpdateSpec(context.Background(), doc)
			if err != nil {
				t.Error(err)
				return
			}
			doc = updated
		}
		go func() {
			write(time.Second, `{"n":1}`)
			write(time.Second, `{"n":2}`)
		}()
		var judged []int64
		start := time.Now()
		err = wait.Document(t.Context(), mem, "Thing", "t1", func(d store.Document, found bool) (bool, error) {
			judged = append(judged, d.Meta.Revision)
			return string(d.Spec) == `{"n":2}`, nil
		})
		if err != nil || len(judged) != 3 || judged[0] >= judged[1] || judged[1] >= judged[2] || time.Since(start) != 2*time.Second {
			t.Fatalf("Document: %v, judged revisions %v after %v", err, judged, time.Since(start))
		}

		b := &compactedStore{Backend: mem}
		go write(10*time.Second, `{"n":3}`)
		start = time.Now()
		err = wait.Document(t.Context(), b, "Thing", "t1", func(d store.Document, found bool) (bool, error) {
			return string(d.Spec) == `{"n":3}`, nil
		})
		if err != nil || time.Since(start) != wait.Resync || b.watches.Load() != 1 {
			t.Fatalf("Document over a compacted watch: %v after %v, %d watches", err, time.Since(start), b.watches.Load())
		}

		ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
		defer cancel()
		err = wait.Document(ctx, b, "Thing", "t1", func(store.Document, bool) (bool, error) { return false, nil })
		if !errors.Is(err, context.DeadlineExceeded) || b.watches.Load() > 62 {
			t.Fatalf("Document: %v with %d watches in an hour", err, b.watches.Load())
		}
	})
}
