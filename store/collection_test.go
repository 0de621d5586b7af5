package store_test

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/store"
)

type gwSpec struct {
	State    string
	Replicas int
}

type gwStatus struct {
	Phase string
}

// watchedGateways returns a new backend, a collection of its Gateways and a
// watch of them from the start, closed when the test ends.
func watchedGateways(t *testing.T) (*memory.Store, *store.Collection[gwSpec, gwStatus], *store.ObjectWatch[gwSpec, gwStatus]) {
	t.Helper()
	b := newBackend(t)
	c, err := store.NewCollection[gwSpec, gwStatus](b, "Gateway", store.CollectionConfig{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := c.Watch(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return b, c, w
}

func newBackend(t *testing.T) *memory.Store {
	t.Helper()
	b, err := memory.New(memory.Config{Kinds: []string{"Gateway", "Other"}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestNewCollectionErrors(t *testing.T) {
	b := newBackend(t)
	if _, err := store.NewCollection[gwSpec, gwStatus](b, "Missing", store.CollectionConfig{}); !errors.Is(err, store.ErrUnknownKind) {
		t.Errorf("unknown kind: got %v, want ErrUnknownKind", err)
	}
	if _, err := store.NewCollection[gwSpec, gwStatus](b, "gateway", store.CollectionConfig{}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("malformed kind: got %v, want ErrInvalid", err)
	}
}

func TestCollectionRoundTrip(t *testing.T) {
	ctx := t.Context()
	b, c, w := watchedGateways(t)
	if c.Kind() != "Gateway" || c.Backend() != store.Backend(b) {
		t.Fatal("wrong kind or backend")
	}
	o, err := c.Create(ctx, &store.Object[gwSpec, gwStatus]{
		Meta:   store.Meta{Key: "gw-1", Labels: map[string]string{"team": "a"}},
		Spec:   gwSpec{State: "Running", Replicas: 2},
		Status: gwStatus{Phase: "ignored on create"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if o.Kind != "Gateway" || o.Generation != 1 || o.Spec.Replicas != 2 || o.Status.Phase != "" {
		t.Fatalf("created %+v", o)
	}
	o.Status.Phase = "Creating"
	o.Spec.Replicas = 99 // not written by UpdateStatus
	if o, err = c.UpdateStatus(ctx, o); err != nil {
		t.Fatal(err)
	}
	if o.Status.Phase != "Creating" || o.Spec.Replicas != 2 {
		t.Fatalf("after update status: %+v", o)
	}
	o.Spec.State = "Stopped"
	o.Status.Phase = "not written by UpdateSpec"
	if o, err = c.UpdateSpec(ctx, o); err != nil {
		t.Fatal(err)
	}
	if o.Generation != 2 || o.Status.Phase != "Creating" {
		t.Fatalf("after update spec: %+v", o)
	}
	got, err := c.Get(ctx, "gw-1")
	if err != nil || got.Spec != (gwSpec{State: "Stopped", Replicas: 2}) || got.Status.Phase != "Creating" {
		t.Fatalf("get: %+v, %v", got, err)
	}
	objs, rev, err := c.List(ctx, store.ListOptions{Selector: store.MustParseSelector("team=a")})
	if err != nil || len(objs) != 1 || rev != o.Revision || objs[0].Key != "gw-1" {
		t.Fatalf("list: %v at %d, %v", objs, rev, err)
	}
	if err := c.Delete(ctx, "gw-1", store.DeleteOptions{Revision: o.Revision}); err != nil {
		t.Fatal(err)
	}
	var types []store.EventType
	for range 4 {
		e, err := w.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, e.Type)
		if e.Object.Key != "gw-1" || e.Object.Spec.Replicas != 2 {
			t.Fatalf("event %+v", e)
		}
	}
	want := []store.EventType{store.Added, store.Modified, store.Modified, store.Deleted}
	if !slices.Equal(types, want) {
		t.Errorf("events %v, want %v", types, want)
	}
	if _, err := c.Get(ctx, "gw-1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("get after delete: %v", err)
	}
}

func TestCollectionDecodeErrors(t *testing.T) {
	ctx := t.Context()
	b, c, w := watchedGateways(t)
	if _, err := b.Create(ctx, store.Document{Meta: store.Meta{Kind: "Gateway", Key: "bad"}, Spec: []byte(`{"Replicas":"two"}`)}); err != nil {
		t.Fatal(err)
	}
	good, err := c.Create(ctx, &store.Object[gwSpec, gwStatus]{Meta: store.Meta{Key: "good"}, Spec: gwSpec{Replicas: 1}})
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, err error) {
		t.Helper()
		var se *store.Error
		if !errors.Is(err, store.ErrDecode) || !errors.As(err, &se) || se.Op != "decode" || se.Kind != "Gateway" || se.Key != "bad" {
			t.Errorf("%s: got %v, want a decode *store.Error naming Gateway \"bad\"", what, err)
		}
		if err != nil && !strings.Contains(err.Error(), "spec") {
			t.Errorf("%s: error %q does not say which payload failed", what, err)
		}
	}
	_, err = c.Get(ctx, "bad")
	check("get", err)
	objs, _, err := c.List(ctx, store.ListOptions{})
	check("list", err)
	if objs != nil {
		t.Errorf("list returned objects with an error: %v", objs)
	}
	_, err = w.Next(ctx)
	check("watch", err)
	e, err := w.Next(ctx)
	if err != nil || e.Object.Key != "good" || e.Revision != good.Revision {
		t.Errorf("watch after a decode error: %+v, %v", e, err)
	}
	// A status that does not decode is reported too.
	d, err := b.Get(ctx, "Gateway", "good")
	if err != nil {
		t.Fatal(err)
	}
	d.Status = []byte("[")
	if _, err := b.UpdateStatus(ctx, d); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, "good"); !errors.Is(err, store.ErrDecode) || !strings.Contains(err.Error(), "status") {
		t.Errorf("get with a bad status: %v", err)
	}
}

// gobCodec shows a codec other than JSON.
type gobCodec struct{}

func (gobCodec) Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	err := gob.NewEncoder(&buf).Encode(v)
	return buf.Bytes(), err
}

func (gobCodec) Unmarshal(data []byte, v any) error {
	return gob.NewDecoder(bytes.NewReader(data)).Decode(v)
}

func TestCollectionCodec(t *testing.T) {
	ctx := t.Context()
	b := newBackend(t)
	c, err := store.NewCollection[gwSpec, gwStatus](b, "Gateway", store.CollectionConfig{Codec: gobCodec{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(ctx, &store.Object[gwSpec, gwStatus]{Meta: store.Meta{Key: "g"}, Spec: gwSpec{State: "Running"}}); err != nil {
		t.Fatal(err)
	}
	d, err := b.Get(ctx, "Gateway", "g")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.HasPrefix(d.Spec, []byte("{")) {
		t.Errorf("spec %q was encoded as JSON, not with the configured codec", d.Spec)
	}
	o, err := c.Decode(d)
	if err != nil || o.Spec.State != "Running" {
		t.Errorf("decode: %+v, %v", o, err)
	}
}

func TestCollectionEncode(t *testing.T) {
	c, err := store.NewCollection[gwSpec, gwStatus](newBackend(t), "Gateway", store.CollectionConfig{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.Encode(&store.Object[gwSpec, gwStatus]{Meta: store.Meta{Key: "k"}, Spec: gwSpec{State: "S"}, Status: gwStatus{Phase: "P"}})
	if err != nil {
		t.Fatal(err)
	}
	if d.Meta.Kind != "Gateway" || string(d.Spec) != `{"State":"S","Replicas":0}` || string(d.Status) != `{"Phase":"P"}` {
		t.Errorf("encoded %+v", d)
	}
	_, err = c.Encode(&store.Object[gwSpec, gwStatus]{Meta: store.Meta{Kind: "Other", Key: "k"}})
	if !errors.Is(err, store.ErrInvalid) {
		t.Errorf("encode of another kind: got %v, want ErrInvalid", err)
	}
	d, err = c.EncodeStatus(&store.Object[gwSpec, gwStatus]{Meta: store.Meta{Key: "k"}, Spec: gwSpec{State: "S"}, Status: gwStatus{Phase: "P"}})
	if err != nil {
		t.Fatal(err)
	}
	if d.Meta.Kind != "Gateway" || d.Spec != nil || string(d.Status) != `{"Phase":"P"}` {
		t.Errorf("status encoded %+v", d)
	}
	_, err = c.EncodeStatus(&store.Object[gwSpec, gwStatus]{Meta: store.Meta{Kind: "Other", Key: "k"}})
	if !errors.Is(err, store.ErrInvalid) {
		t.Errorf("status encode of another kind: got %v, want ErrInvalid", err)
	}
	_, err = c.Create(context.Background(), &store.Object[gwSpec, gwStatus]{Meta: store.Meta{Kind: "Other", Key: "k"}})
	if !errors.Is(err, store.ErrInvalid) {
		t.Errorf("create of another kind: got %v, want ErrInvalid", err)
	}
}

func TestCollectionPages(t *testing.T) {
	ctx := t.Context()
	c, err := store.NewCollection[gwSpec, gwStatus](newBackend(t), "Gateway", store.CollectionConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, key := range []string{"gw-3", "gw-1", "gw-5", "gw-2", "gw-4"} {
		if _, err := c.Create(ctx, &store.Object[gwSpec, gwStatus]{Meta: store.Meta{Key: key}}); err != nil {
			t.Fatal(err)
		}
		want = append(want, key)
	}
	slices.Sort(want)
	keys := func(objs []*store.Object[gwSpec, gwStatus]) []string {
		var ks []string
		for _, o := range objs {
			ks = append(ks, o.Key)
		}
		return ks
	}
	all, rev, err := c.List(ctx, store.ListOptions{})
	if err != nil || !slices.Equal(keys(all), want) {
		t.Fatalf("List = %q, %v; want %q", keys(all), err, want)
	}
	// List with a limit reads every page.
	paged, prev, err := c.List(ctx, store.ListOptions{Limit: 2})
	if err != nil || !slices.Equal(keys(paged), want) || prev != rev {
		t.Fatalf("List by 2 = %q at %d, %v; want %q at %d", keys(paged), prev, err, want, rev)
	}
	// ListPage reads one.
	var got [][]string
	opts := store.ListOptions{Limit: 2}
	for {
		page, err := c.ListPage(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, keys(page.Items))
		if page.Continue == "" {
			break
		}
		opts.Continue = page.Continue
	}
	if len(got) != 3 || !slices.Equal(slices.Concat(got...), want) {
		t.Fatalf("pages %q, want %q in pages of 2", got, want)
	}
	if _, err := c.ListPage(ctx, store.ListOptions{Limit: 2, Continue: "bad"}); !errors.Is(err, store.ErrInvalidContinue) {
		t.Fatalf("bad token: got %v, want ErrInvalidContinue", err)
	}
	if _, _, err := c.List(ctx, store.ListOptions{Continue: "bad"}); !errors.Is(err, store.ErrInvalidContinue) {
		t.Fatalf("List with a bad token: got %v, want ErrInvalidContinue", err)
	}
}

// sealed is a value whose JSON methods have pointer receivers: it is stored
// as "sealed:<text>" and read back from that form only.
type sealed struct{ text string }

func (s *sealed) MarshalJSON() ([]byte, error) { return []byte(`"sealed:` + s.text + `"`), nil }

func (s *sealed) UnmarshalJSON(b []byte) error {
	text, ok := strings.CutPrefix(strings.Trim(string(b), `"`), "sealed:")
	if !ok {
		return errors.New("not sealed")
	}
	s.text = text
	return nil
}

// TestCollectionPointerMarshalers checks that a spec and a status whose
// types encode with pointer-receiver methods are written with them, as they
// are read with them, so what is written reads back.
func TestCollectionPointerMarshalers(t *testing.T) {
	ctx := t.Context()
	b := newBackend(t)
	c, err := store.NewCollection[sealed, sealed](b, "Gateway", store.CollectionConfig{})
	if err != nil {
		t.Fatal(err)
	}
	created, err := c.Create(ctx, &store.Object[sealed, sealed]{Meta: store.Meta{Key: "g"}, Spec: sealed{"spec"}})
	if err != nil {
		t.Fatal(err)
	}
	created.Status = sealed{"status"}
	if _, err := c.UpdateStatus(ctx, created); err != nil {
		t.Fatal(err)
	}
	d, err := b.Get(ctx, "Gateway", "g")
	if err != nil {
		t.Fatal(err)
	}
	if string(d.Spec) != `"sealed:spec"` || string(d.Status) != `"sealed:status"` {
		t.Fatalf("stored spec %s, status %s: want both written by their MarshalJSON", d.Spec, d.Status)
	}
	got, err := c.Get(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.text != "spec" || got.Status.text != "status" {
		t.Fatalf("read back %+v, %+v", got.Spec, got.Status)
	}
}

// TestObjectWatchOwnsItsObjects checks that an object a typed watch returns
// is the caller's: changing its metadata in place, as a caller about to
// write it back does, leaves the stored document as it was, although the
// backend's event shares the stored document.
func TestObjectWatchOwnsItsObjects(t *testing.T) {
	ctx := t.Context()
	b, c, w := watchedGateways(t)
	if _, err := c.Create(ctx, &store.Object[gwSpec, gwStatus]{Meta: store.Meta{Key: "g", Labels: map[string]string{"team": "a"},
		Finalizers: []string{"example.com/f"}, Owners: []store.OwnerRef{{Kind: "Other", Key: "o", UID: "u1"}}}}); err != nil {
		t.Fatal(err)
	}
	e, err := w.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	e.Object.Labels["team"] = "changed"
	e.Object.Finalizers[0] = "example.com/changed"
	e.Object.Owners[0].UID = "changed"
	got, err := b.Get(ctx, "Gateway", "g")
	if err != nil {
		t.Fatal(err)
	}
	if got.Meta.Labels["team"] != "a" || got.Meta.Finalizers[0] != "example.com/f" || got.Meta.Owners[0].UID != "u1" {
		t.Fatalf("changing a watched object changed the store: %+v", got.Meta)
	}
}
