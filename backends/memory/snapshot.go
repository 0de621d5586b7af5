package memory

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tendhq/tend/store"
	"github.com/tendhq/tend/store/backend"
)

// ErrBadSnapshot is returned by [New] when Config.Restore does not hold a
// snapshot it can restore: truncated, altered, of another format, or naming
// a kind the store was not configured with.
var ErrBadSnapshot = errors.New("memory: bad snapshot")

// snapshotFormat names the layout of a snapshot.
const snapshotFormat = "tend.memory.snapshot/v1"

// snapshotFile is a snapshot as written: the data and its checksum.
type snapshotFile struct {
	Format string          `json:"format"`
	SHA256 string          `json:"sha256"`
	Data   json.RawMessage `json:"data"`
}

type snapshotData struct {
	Revision  int64           `json:"revision"`
	Documents []snapshotDoc   `json:"documents"`
	Leases    []snapshotLease `json:"leases,omitempty"`
}

type snapshotDoc struct {
	Meta   store.Meta `json:"meta"`
	Spec   []byte     `json:"spec,omitempty"`
	Status []byte     `json:"status,omitempty"`
}

type snapshotLease struct {
	Name    string        `json:"name"`
	Holder  string        `json:"holder"`
	Fence   int64         `json:"fence"`
	TTL     time.Duration `json:"ttl"`
	Expires time.Time     `json:"expires"`
	Held    bool          `json:"held,omitempty"`
}

// Snapshot writes the store's documents, leases and revision to w as JSON
// with a checksum. Pass the output as Config.Restore to start a store where
// this one stands. The change history is not saved: on the restored store,
// watches from revisions before the snapshot's fail with
// [store.ErrCompacted].
func (s *Store) Snapshot(w io.Writer) error {
	var data snapshotData
	s.mu.RLock()
	data.Revision = s.rev
	var vs []*version
	ks := s.kinds.Load()
	for _, name := range ks.names {
		for _, v := range ks.byName[name].docs {
			vs = append(vs, v)
		}
	}
	for name, l := range s.leases {
		data.Leases = append(data.Leases, snapshotLease{
			Name: name, Holder: l.holder, Fence: l.fence, TTL: l.ttl, Expires: l.expires.Round(0), Held: l.held,
		})
	}
	s.mu.RUnlock()
	// Versions are immutable, so they are sorted and encoded outside the
	// lock. Sorting makes equal stores write equal snapshots.
	slices.SortFunc(vs, func(a, b *version) int {
		return cmp.Or(strings.Compare(a.meta.Kind, b.meta.Kind), strings.Compare(a.meta.Key, b.meta.Key))
	})
	slices.SortFunc(data.Leases, func(a, b snapshotLease) int { return strings.Compare(a.Name, b.Name) })
	data.Documents = make([]snapshotDoc, len(vs))
	for i, v := range vs {
		data.Documents[i] = snapshotDoc{Meta: v.meta, Spec: v.spec, Status: v.status}
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("memory: snapshot: %w", err)
	}
	sum := sha256.Sum256(raw)
	out, err := json.Marshal(snapshotFile{Format: snapshotFormat, SHA256: hex.EncodeToString(sum[:]), Data: raw})
	if err != nil {
		return fmt.Errorf("memory: snapshot: %w", err)
	}
	if _, err := w.Write(append(out, '\n')); err != nil {
		return fmt.Errorf("memory: snapshot: %w", err)
	}
	return nil
}

// SnapshotFile writes a [Store.Snapshot] to path atomically: to a temporary
// file in the same directory, synced, then renamed over path, so a crash
// leaves either the old snapshot or the new one.
func (s *Store) SnapshotFile(path string) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("memory: snapshot: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := s.Snapshot(f); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("memory: snapshot: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("memory: snapshot: %w", err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("memory: snapshot: %w", err)
	}
	return nil
}

// SnapshotKinds returns the kinds of the documents of the snapshot r
// holds, sorted: the kinds a store must at least be configured with to
// restore it. A tool that opens a snapshot it did not write reads them
// first. It fails with ErrBadSnapshot as [New] would on the snapshot's
// format or checksum.
func SnapshotKinds(r io.Reader) ([]string, error) {
	data, err := readSnapshot(r)
	if err != nil {
		return nil, err
	}
	kinds := make([]string, 0, len(data.Documents))
	for _, d := range data.Documents {
		kinds = append(kinds, d.Meta.Kind)
	}
	slices.Sort(kinds)
	return slices.Compact(kinds), nil
}

// readSnapshot decodes the snapshot r holds and checks its format and
// checksum.
func readSnapshot(r io.Reader) (snapshotData, error) {
	var file snapshotFile
	if err := json.NewDecoder(r).Decode(&file); err != nil {
		return snapshotData{}, fmt.Errorf("%w: %v", ErrBadSnapshot, err)
	}
	if file.Format != snapshotFormat {
		return snapshotData{}, fmt.Errorf("%w: format %q, want %q", ErrBadSnapshot, file.Format, snapshotFormat)
	}
	if sum := sha256.Sum256(file.Data); hex.EncodeToString(sum[:]) != file.SHA256 {
		return snapshotData{}, fmt.Errorf("%w: checksum mismatch: the snapshot was altered or truncated", ErrBadSnapshot)
	}
	var data snapshotData
	if err := json.Unmarshal(file.Data, &data); err != nil {
		return snapshotData{}, fmt.Errorf("%w: %v", ErrBadSnapshot, err)
	}
	return data, nil
}

// restore loads a snapshot into the empty store s.
func (s *Store) restore(r io.Reader) error {
	data, err := readSnapshot(r)
	if err != nil {
		return err
	}
	if data.Revision < 0 {
		return fmt.Errorf("%w: negative revision %d", ErrBadSnapshot, data.Revision)
	}
	uids := make(map[string]bool, len(data.Documents))
	for _, d := range data.Documents {
		m := d.Meta
		if err := restoredDoc(&m, data.Revision, uids); err != nil {
			return fmt.Errorf("%w: document %s %q: %v", ErrBadSnapshot, m.Kind, m.Key, err)
		}
		k := s.kinds.Load().byName[m.Kind]
		if k == nil {
			return fmt.Errorf("%w: document %s %q: kind %q is not in Config.Kinds", ErrBadSnapshot, m.Kind, m.Key, m.Kind)
		}
		if k.docs[m.Key] != nil {
			return fmt.Errorf("%w: document %s %q: stored twice", ErrBadSnapshot, m.Kind, m.Key)
		}
		c := store.Document{Meta: m, Spec: d.Spec, Status: d.Status}.Clone()
		k.put(nil, &version{meta: c.Meta, spec: c.Spec, status: c.Status})
	}
	for _, l := range data.Leases {
		if err := backend.ValidateLease(l.Name, l.Holder, l.TTL); err != nil || l.Fence < 1 {
			return fmt.Errorf("%w: lease %q: invalid (fence %d): %v", ErrBadSnapshot, l.Name, l.Fence, err)
		}
		if s.leases[l.Name] != nil {
			return fmt.Errorf("%w: lease %q: stored twice", ErrBadSnapshot, l.Name)
		}
		s.leases[l.Name] = &lease{holder: l.Holder, fence: l.Fence, ttl: l.TTL, expires: l.Expires, held: l.Held}
	}
	s.rev = data.Revision
	for _, k := range s.kinds.Load().byName {
		k.compacted = data.Revision
	}
	return nil
}

// restoredDoc checks the metadata of a document read from a snapshot.
func restoredDoc(m *store.Meta, rev int64, uids map[string]bool) error {
	if err := backend.ValidateMeta(m); err != nil {
		return err
	}
	switch {
	case m.UID == "" || uids[m.UID]:
		return fmt.Errorf("missing or repeated UID %q", m.UID)
	case m.Revision < 1 || m.Revision > rev:
		return fmt.Errorf("revision %d outside 1..%d", m.Revision, rev)
	case m.Generation < 1:
		return fmt.Errorf("generation %d is not positive", m.Generation)
	case m.Terminating() && len(m.Finalizers) == 0:
		return errors.New("terminating without finalizers")
	}
	uids[m.UID] = true
	return nil
}
