package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// Codec turns the user's Spec and Status values into the bytes a backend
// stores, and back. Marshal is given a pointer to the value to encode (a
// *Spec or a *Status), as Unmarshal is given one to decode into: a type's
// pointer-receiver methods (MarshalJSON, MarshalText…) serve both ways, and
// a large status is not copied to be encoded.
type Codec interface {
	Marshal(v any) ([]byte, error)
	Unmarshal(data []byte, v any) error
}

// JSON is the default [Codec]: encoding/json.
var JSON Codec = jsonCodec{}

type jsonCodec struct{}

func (jsonCodec) Marshal(v any) ([]byte, error)      { return json.Marshal(v) }
func (jsonCodec) Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }

// Object is a document decoded into the user's types: the intent in Spec,
// the controller's progress in Status.
type Object[Spec, Status any] struct {
	Meta
	Spec   Spec
	Status Status
}

// ObjectEvent is one change delivered by an [ObjectWatch].
type ObjectEvent[Spec, Status any] struct {
	Type EventType
	// Revision is the revision of the change; see [Event].
	Revision int64
	Object   *Object[Spec, Status]
}

// CollectionConfig configures a [Collection].
type CollectionConfig struct {
	// Codec encodes Spec and Status. Nil means [JSON].
	Codec Codec
}

// Collection is the typed view of one kind of a [Backend]. It is safe for
// concurrent use.
type Collection[Spec, Status any] struct {
	b     Backend
	kind  string
	codec Codec
}

// NewCollection returns the typed view of kind in b. It fails with an error
// matching [ErrInvalid] for a malformed kind and [ErrUnknownKind] when b was
// not configured with it.
func NewCollection[Spec, Status any](b Backend, kind string, cfg CollectionConfig) (*Collection[Spec, Status], error) {
	if err := ValidateKind(kind); err != nil {
		return nil, &Error{Op: "collection", Kind: kind, Err: err}
	}
	if !slices.Contains(b.Kinds(), kind) {
		return nil, &Error{Op: "collection", Kind: kind, Err: ErrUnknownKind}
	}
	c := &Collection[Spec, Status]{b: b, kind: kind, codec: cfg.Codec}
	if c.codec == nil {
		c.codec = JSON
	}
	return c, nil
}

// Kind returns the kind the collection views.
func (c *Collection[Spec, Status]) Kind() string { return c.kind }

// Backend returns the backend the collection reads and writes.
func (c *Collection[Spec, Status]) Backend() Backend { return c.b }

// Get returns the object stored under key. See [Reader.Get].
func (c *Collection[Spec, Status]) Get(ctx context.Context, key string) (*Object[Spec, Status], error) {
	d, err := c.b.Get(ctx, c.kind, key)
	if err != nil {
		return nil, err
	}
	return c.Decode(d)
}

// List returns the objects matching opts, ordered by key, and the revision
// they were read at. If any document fails to decode, List returns no
// objects and an error naming every such document.
//
// With opts.Limit set, List reads the objects in pages of that size, one
// request each, so no single response holds the whole kind, and returns
// them all with the first page's revision; opts.Continue starts from the
// page it names. Pages are one snapshot only where the backend reads them
// at one revision: see [Reader.List]. [Collection.ListPage] reads one page.
func (c *Collection[Spec, Status]) List(ctx context.Context, opts ListOptions) ([]*Object[Spec, Status], int64, error) {
	var objs []*Object[Spec, Status]
	var rev int64
	for first := true; ; first = false {
		page, err := c.ListPage(ctx, opts)
		if err != nil {
			return nil, 0, err
		}
		if first {
			objs, rev = page.Items, page.Revision
		} else {
			objs = append(objs, page.Items...)
		}
		if page.Continue == "" {
			return objs, rev, nil
		}
		opts.Continue = page.Continue
	}
}

// ObjectPage is one page of a typed list; see [Collection.ListPage].
type ObjectPage[Spec, Status any] struct {
	// Items are the page's objects, ordered by key.
	Items []*Object[Spec, Status]
	// Revision and Continue are those of [ListResult].
	Revision int64
	Continue string
}

// ListPage returns one page of the objects matching opts: at most
// opts.Limit of them (all when it is zero) after those of the page whose
// Continue token opts.Continue is. Pass the returned Continue token back to
// read the next page; it is empty after the last. See [Reader.List] for
// what pages promise and [ErrInvalidContinue]. If any document fails to
// decode, ListPage returns no objects and an error naming every such
// document.
func (c *Collection[Spec, Status]) ListPage(ctx context.Context, opts ListOptions) (ObjectPage[Spec, Status], error) {
	res, err := c.b.List(ctx, c.kind, opts)
	if err != nil {
		return ObjectPage[Spec, Status]{}, err
	}
	objs := make([]*Object[Spec, Status], 0, len(res.Items))
	var errs []error
	for _, d := range res.Items {
		o, err := c.Decode(d)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		objs = append(objs, o)
	}
	if errs != nil {
		return ObjectPage[Spec, Status]{}, errors.Join(errs...)
	}
	return ObjectPage[Spec, Status]{Items: objs, Revision: res.Revision, Continue: res.Continue}, nil
}

// Create stores o as a new document and returns it as stored. o.Status is
// not written: status belongs to the controller (see [Writer.Create]).
func (c *Collection[Spec, Status]) Create(ctx context.Context, o *Object[Spec, Status]) (*Object[Spec, Status], error) {
	d, err := c.encode("create", o, true, false)
	if err != nil {
		return nil, err
	}
	return c.result(c.b.Create(ctx, d))
}

// UpdateSpec writes o's Spec, labels, finalizers and owners, if o.Revision is
// still the stored revision. See [Writer.UpdateSpec].
func (c *Collection[Spec, Status]) UpdateSpec(ctx context.Context, o *Object[Spec, Status]) (*Object[Spec, Status], error) {
	d, err := c.encode("update spec", o, true, false)
	if err != nil {
		return nil, err
	}
	return c.result(c.b.UpdateSpec(ctx, d))
}

// UpdateStatus writes o's Status, if o.Revision is still the stored
// revision. See [Writer.UpdateStatus].
func (c *Collection[Spec, Status]) UpdateStatus(ctx context.Context, o *Object[Spec, Status]) (*Object[Spec, Status], error) {
	d, err := c.encode("update status", o, false, true)
	if err != nil {
		return nil, err
	}
	return c.result(c.b.UpdateStatus(ctx, d))
}

// Delete deletes the object stored under key. See [Writer.Delete].
func (c *Collection[Spec, Status]) Delete(ctx context.Context, key string, opts DeleteOptions) error {
	return c.b.Delete(ctx, c.kind, key, opts)
}

// WatchNow streams the changes made after it is called, decoded: it reads
// the store's revision with a List of at most one object and watches from
// it. It is the watch to start when nothing was listed, where a watch from
// revision 0 would fail with [ErrCompacted] on a store whose history no
// longer begins at 0 (one restored from a snapshot, or compacted).
func (c *Collection[Spec, Status]) WatchNow(ctx context.Context) (*ObjectWatch[Spec, Status], error) {
	page, err := c.ListPage(ctx, ListOptions{Limit: 1})
	if err != nil {
		return nil, err
	}
	return c.Watch(ctx, page.Revision)
}

// Watch streams the changes after fromRevision, decoded. See [Watcher.Watch].
func (c *Collection[Spec, Status]) Watch(ctx context.Context, fromRevision int64) (*ObjectWatch[Spec, Status], error) {
	w, err := c.b.Watch(ctx, c.kind, fromRevision)
	if err != nil {
		return nil, err
	}
	return &ObjectWatch[Spec, Status]{w: w, c: c}, nil
}

// Decode turns a document of the collection's kind into an object. A
// payload that does not decode gives an [*Error] with Op "decode" naming the
// document and matching [ErrDecode]. Empty payloads decode to zero values.
func (c *Collection[Spec, Status]) Decode(d Document) (*Object[Spec, Status], error) {
	o := &Object[Spec, Status]{Meta: d.Meta}
	if len(d.Spec) > 0 {
		if err := c.codec.Unmarshal(d.Spec, &o.Spec); err != nil {
			return nil, c.decodeError(d, "spec", err)
		}
	}
	if len(d.Status) > 0 {
		if err := c.codec.Unmarshal(d.Status, &o.Status); err != nil {
			return nil, c.decodeError(d, "status", err)
		}
	}
	return o, nil
}

// Encode turns an object into a document with both payloads encoded. An
// empty Kind is set to the collection's; another kind is an error matching
// [ErrInvalid].
func (c *Collection[Spec, Status]) Encode(o *Object[Spec, Status]) (Document, error) {
	return c.encode("encode", o, true, true)
}

// EncodeStatus turns an object into a document with only its status
// encoded: what [Writer.UpdateStatus] writes, without the cost of encoding a
// spec it ignores. Its Kind is checked and set as [Collection.Encode] does.
func (c *Collection[Spec, Status]) EncodeStatus(o *Object[Spec, Status]) (Document, error) {
	return c.encode("encode status", o, false, true)
}

func (c *Collection[Spec, Status]) encode(op string, o *Object[Spec, Status], spec, status bool) (Document, error) {
	d := Document{Meta: o.Meta}
	if d.Meta.Kind == "" {
		d.Meta.Kind = c.kind
	} else if d.Meta.Kind != c.kind {
		return Document{}, &Error{Op: op, Kind: c.kind, Key: o.Key,
			Err: fmt.Errorf("%w: object of kind %q", ErrInvalid, o.Kind)}
	}
	var err error
	if spec {
		if d.Spec, err = c.codec.Marshal(&o.Spec); err != nil {
			return Document{}, &Error{Op: op, Kind: c.kind, Key: o.Key, Err: fmt.Errorf("%w: encode spec: %w", ErrInvalid, err)}
		}
	}
	if status {
		if d.Status, err = c.codec.Marshal(&o.Status); err != nil {
			return Document{}, &Error{Op: op, Kind: c.kind, Key: o.Key, Err: fmt.Errorf("%w: encode status: %w", ErrInvalid, err)}
		}
	}
	return d, nil
}

func (c *Collection[Spec, Status]) result(d Document, err error) (*Object[Spec, Status], error) {
	if err != nil {
		return nil, err
	}
	return c.Decode(d)
}

func (c *Collection[Spec, Status]) decodeError(d Document, part string, err error) error {
	return &Error{Op: "decode", Kind: d.Meta.Kind, Key: d.Meta.Key, Err: fmt.Errorf("%w: %s: %w", ErrDecode, part, err)}
}

// ObjectWatch is a [Watch] whose documents are decoded.
type ObjectWatch[Spec, Status any] struct {
	w Watch
	c *Collection[Spec, Status]
}

// Next returns the next change, decoded. It fails as [Watch.Next] does. A
// document that does not decode is returned as an error matching
// [ErrDecode] that names it; the watch stays usable and the next call
// returns the following change.
func (w *ObjectWatch[Spec, Status]) Next(ctx context.Context) (ObjectEvent[Spec, Status], error) {
	e, err := w.w.Next(ctx)
	if err != nil {
		return ObjectEvent[Spec, Status]{}, err
	}
	// The payloads are decoded into values of the caller's own; the
	// metadata is copied, as the event's may be the backend's.
	e.Document.Meta = e.Document.Meta.Clone()
	o, err := w.c.Decode(e.Document)
	if err != nil {
		return ObjectEvent[Spec, Status]{}, err
	}
	return ObjectEvent[Spec, Status]{Type: e.Type, Revision: e.Revision, Object: o}, nil
}

// Close releases the watch.
func (w *ObjectWatch[Spec, Status]) Close() error { return w.w.Close() }
