package etcd

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	"github.com/tendhq/tend/store"
)

// formatVersion is the version of the stored document format that this
// package writes and the newest it reads.
const formatVersion = 1

// record is the metadata a stored document carries. Kind and key are in the
// etcd key and the revision is etcd's ModRevision, so neither is repeated.
type record struct {
	UID        string            `json:"uid"`
	Generation int64             `json:"generation"`
	Created    int64             `json:"created"`
	Updated    int64             `json:"updated"`
	Deletion   int64             `json:"deletion,omitempty"`
	Finalizers []string          `json:"finalizers,omitempty"`
	Owners     []store.OwnerRef  `json:"owners,omitempty"`
	Labels     map[string]string `json:"labels,omitempty"`
}

// encode returns the stored form of d: the format version, the length of
// the JSON metadata and the metadata, the length of the spec and the spec,
// then the status. Payloads are kept as they are, not re-encoded.
func encode(d *store.Document) []byte {
	meta, err := json.Marshal(record{
		UID:        d.Meta.UID,
		Generation: d.Meta.Generation,
		Created:    unixNano(d.Meta.CreatedAt),
		Updated:    unixNano(d.Meta.UpdatedAt),
		Deletion:   unixNano(d.Meta.DeletionRequestedAt),
		Finalizers: d.Meta.Finalizers,
		Owners:     d.Meta.Owners,
		Labels:     d.Meta.Labels,
	})
	if err != nil {
		// Strings, numbers and booleans always marshal.
		panic("etcd: encode metadata: " + err.Error())
	}
	b := make([]byte, 0, 1+2*binary.MaxVarintLen64+len(meta)+len(d.Spec)+len(d.Status))
	b = append(b, formatVersion)
	b = binary.AppendUvarint(b, uint64(len(meta)))
	b = append(b, meta...)
	b = binary.AppendUvarint(b, uint64(len(d.Spec)))
	b = append(b, d.Spec...)
	return append(b, d.Status...)
}

// decode parses the stored form of a document. Kind, key and revision are
// left for the caller. A document written in a newer format is refused.
func decode(b []byte) (store.Document, error) {
	if len(b) == 0 {
		return store.Document{}, fmt.Errorf("%w: empty stored document", store.ErrDecode)
	}
	if b[0] != formatVersion {
		return store.Document{}, fmt.Errorf("%w: stored document format %d is not %d, the one this version of the etcd backend reads; upgrade it",
			store.ErrDecode, b[0], formatVersion)
	}
	b = b[1:]
	meta, b, ok := chunk(b)
	if !ok {
		return store.Document{}, fmt.Errorf("%w: truncated stored document", store.ErrDecode)
	}
	spec, status, ok := chunk(b)
	if !ok {
		return store.Document{}, fmt.Errorf("%w: truncated stored document", store.ErrDecode)
	}
	var r record
	if err := json.Unmarshal(meta, &r); err != nil {
		return store.Document{}, fmt.Errorf("%w: stored metadata: %w", store.ErrDecode, err)
	}
	d := store.Document{Meta: store.Meta{
		UID:                 r.UID,
		Generation:          r.Generation,
		CreatedAt:           fromUnixNano(r.Created),
		UpdatedAt:           fromUnixNano(r.Updated),
		DeletionRequestedAt: fromUnixNano(r.Deletion),
		Finalizers:          r.Finalizers,
		Owners:              r.Owners,
		Labels:              r.Labels,
	}}
	if len(spec) > 0 {
		d.Spec = spec[:len(spec):len(spec)]
	}
	if len(status) > 0 {
		d.Status = status
	}
	return d, nil
}

// chunk splits a length-prefixed part off b.
func chunk(b []byte) (part, rest []byte, ok bool) {
	n, w := binary.Uvarint(b)
	if w <= 0 || n > uint64(len(b)-w) {
		return nil, nil, false
	}
	return b[w : w+int(n)], b[w+int(n):], true
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromUnixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}
