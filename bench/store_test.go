package bench

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/store"
)

// storeSpec and storeStatus are a realistic document: a few hundred bytes
// of JSON and two labels.
type storeSpec struct {
	State    string            `json:"state"`
	Image    string            `json:"image"`
	Replicas int               `json:"replicas"`
	Routes   []string          `json:"routes"`
	Env      map[string]string `json:"env"`
}

type storeStatus struct {
	Phase      string `json:"phase"`
	Operation  string `json:"operation"`
	Checkpoint int    `json:"checkpoint"`
	Message    string `json:"message"`
}

var (
	benchSpec = storeSpec{
		State: "Running", Image: "registry.example.com/gateway:1.27.3", Replicas: 3,
		Routes: []string{"/api/v1/orders", "/api/v1/users", "/api/v1/payments"},
		Env:    map[string]string{"LOG_LEVEL": "info", "REGION": "eu-west-1"},
	}
	benchStatus = storeStatus{Phase: "Started", Operation: "op-000123", Checkpoint: 3, Message: "all routes serving"}
)

// newBenchStore returns a memory store holding n documents "gw-0".."gw-n-1"
// of kind ApiGateway, each labelled team=team-(i%100) and owned by one of 100
// owners, and the collection viewing them.
func newBenchStore(b *testing.B, n int) (*memory.Store, *store.Collection[storeSpec, storeStatus]) {
	b.Helper()
	s, err := memory.New(memory.Config{Kinds: []string{"ApiGateway"}})
	if err != nil {
		b.Fatal(err)
	}
	c, err := store.NewCollection[storeSpec, storeStatus](s, "ApiGateway", store.CollectionConfig{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for i := range n {
		o, err := c.Create(ctx, &store.Object[storeSpec, storeStatus]{
			Meta: store.Meta{
				Key:    "gw-" + strconv.Itoa(i),
				Labels: map[string]string{"team": "team-" + strconv.Itoa(i%100), "tier": "edge"},
				Owners: []store.OwnerRef{{Kind: "ApiGateway", Key: "owner", UID: "owner-" + strconv.Itoa(i%100)}},
			},
			Spec: benchSpec,
		})
		if err != nil {
			b.Fatal(err)
		}
		o.Status = benchStatus
		if _, err := c.UpdateStatus(ctx, o); err != nil {
			b.Fatal(err)
		}
	}
	return s, c
}

// BenchmarkStoreGet reads one document of 10,000: the backend's copy, and
// the collection's decoded object.
func BenchmarkStoreGet(b *testing.B) {
	s, c := newBenchStore(b, 10_000)
	ctx := context.Background()
	b.Run("backend", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.Get(ctx, "ApiGateway", "gw-4242"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("collection", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.Get(ctx, "gw-4242"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkStoreUpdateStatus writes the status of one document of 10,000:
// unchanged ("noop": the precondition is checked, nothing is written, no
// event), or alternating between two values ("change": a new revision and
// an event); through the backend with encoded bytes, and through the
// collection with JSON encoding and decoding. The documents have two labels
// and an owner reference; "noop-without-owner" has only the labels. Every
// call returns a copy of the document that reuses the parts equal to those
// of the document given (store.Document.CloneReusing): a no-op given the
// document as read copies nothing, and a change copies nothing either, its
// cost being the stored copy of the status and the new version.
func BenchmarkStoreUpdateStatus(b *testing.B) {
	s, c := newBenchStore(b, 10_000)
	ctx := context.Background()
	b.Run("backend/noop", func(b *testing.B) {
		d, err := s.Get(ctx, "ApiGateway", "gw-4242")
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.UpdateStatus(ctx, d); err != nil {
				b.Fatal(err)
			}
		}
	})
	plain, err := s.Create(ctx, store.Document{
		Meta: store.Meta{Kind: "ApiGateway", Key: "plain", Labels: map[string]string{"team": "team-1", "tier": "edge"}},
		Spec: []byte(`{"state":"Running"}`),
	})
	if err != nil {
		b.Fatal(err)
	}
	plain.Status = []byte(`{"phase":"Started"}`)
	if plain, err = s.UpdateStatus(ctx, plain); err != nil {
		b.Fatal(err)
	}
	b.Run("backend/noop-without-owner", func(b *testing.B) {
		d := plain
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.UpdateStatus(ctx, d); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("backend/change", func(b *testing.B) {
		d, err := s.Get(ctx, "ApiGateway", "gw-4242")
		if err != nil {
			b.Fatal(err)
		}
		statuses := [2][]byte{
			[]byte(`{"phase":"Stopping","operation":"op-000124","checkpoint":0,"message":""}`),
			[]byte(`{"phase":"Stopped","operation":"op-000124","checkpoint":1,"message":""}`),
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			d.Status = statuses[i%2]
			if d, err = s.UpdateStatus(ctx, d); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("collection/noop", func(b *testing.B) {
		o, err := c.Get(ctx, "gw-4242")
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.UpdateStatus(ctx, o); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkStoreWatch measures the delivery of one change to one watch:
// "read" reads changes already made (the writes are not timed), "write+read"
// makes each change and reads it in the same goroutine, "concurrent" reads
// while another goroutine writes.
func BenchmarkStoreWatch(b *testing.B) {
	const batch = 1_000
	ctx := context.Background()
	setup := func(b *testing.B) (*memory.Store, store.Document, store.Watch, [2][]byte) {
		s, _ := newBenchStore(b, 1)
		d, err := s.Get(ctx, "ApiGateway", "gw-0")
		if err != nil {
			b.Fatal(err)
		}
		w, err := s.Watch(ctx, "ApiGateway", d.Meta.Revision)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { w.Close() })
		return s, d, w, [2][]byte{[]byte(`{"phase":"Stopping"}`), []byte(`{"phase":"Stopped"}`)}
	}
	b.Run("read", func(b *testing.B) {
		s, d, w, statuses := setup(b)
		b.ReportAllocs()
		written := 0
		for done := 0; done < b.N; {
			n := min(batch, b.N-done)
			b.StopTimer()
			for range n {
				written++
				d.Status = statuses[written%2]
				var err error
				if d, err = s.UpdateStatus(ctx, d); err != nil {
					b.Fatal(err)
				}
			}
			b.StartTimer()
			for range n {
				if _, err := w.Next(ctx); err != nil {
					b.Fatal(err)
				}
			}
			done += n
		}
	})
	b.Run("write+read", func(b *testing.B) {
		s, d, w, statuses := setup(b)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			d.Status = statuses[i%2]
			var err error
			if d, err = s.UpdateStatus(ctx, d); err != nil {
				b.Fatal(err)
			}
			if _, err := w.Next(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("concurrent", func(b *testing.B) {
		s, d, w, statuses := setup(b)
		n := b.N
		errc := make(chan error, 1)
		// The writer stays at most batch changes ahead, within the watch
		// buffer: a writer in a tight loop outruns any reader, and the watch
		// would rightly be cut off.
		ahead := make(chan struct{}, batch)
		b.ReportAllocs()
		b.ResetTimer()
		go func() {
			for i := range n {
				ahead <- struct{}{}
				d.Status = statuses[i%2]
				var err error
				if d, err = s.UpdateStatus(ctx, d); err != nil {
					errc <- err
					return
				}
			}
			errc <- nil
		}()
		for range n {
			if _, err := w.Next(ctx); err != nil {
				b.Fatal(err)
			}
			<-ahead
		}
		if err := <-errc; err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkStoreList lists 100,000 documents: all of them, the 1% selected
// by a label, and the 1% owned by one owner.
func BenchmarkStoreList(b *testing.B) {
	s, _ := newBenchStore(b, 100_000)
	ctx := context.Background()
	for _, c := range []struct {
		name string
		opts store.ListOptions
		want int
	}{
		{"all", store.ListOptions{}, 100_000},
		{"selector", store.ListOptions{Selector: store.MustParseSelector("team=team-7,tier=edge")}, 1_000},
		{"owner", store.ListOptions{OwnerUID: "owner-7"}, 1_000},
	} {
		b.Run(fmt.Sprintf("%s/%d", c.name, c.want), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				res, err := s.List(ctx, "ApiGateway", c.opts)
				if err != nil {
					b.Fatal(err)
				}
				if len(res.Items) != c.want {
					b.Fatalf("listed %d, want %d", len(res.Items), c.want)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(c.want), "ns/doc")
		})
	}
}
