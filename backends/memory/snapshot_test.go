package memory_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/store"
)

var kinds = []string{"Widget", "Gadget"}

// populated returns a store holding every kind of state a snapshot keeps.
func populated(t *testing.T) *memory.Store {
	t.Helper()
	ctx := t.Context()
	s := newStore(t, memory.Config{Kinds: kinds})
	owner, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Gadget", Key: "owner"}, Spec: []byte(`{"o":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.Create(ctx, store.Document{
		Meta: store.Meta{
			Kind: "Widget", Key: "team/a",
			Labels:     map[string]string{"env": "prod"},
			Finalizers: []string{"example.com/f"},
			Owners:     []store.OwnerRef{{Kind: "Gadget", Key: "owner", UID: owner.Meta.UID, Controller: true}},
		},
		Spec: []byte(`{"n":1}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	d.Status = []byte(`{"phase":"Started"}`)
	if _, err := s.UpdateStatus(ctx, d); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "Widget", "team/a", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: "team/b", Labels: map[string]string{"env": "dev"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AcquireLease(ctx, "tend/leader", "replica-1", time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AcquireLease(ctx, "tend/shard-1", "replica-2", time.Hour); err != nil {
		t.Fatal(err)
	}
	gone, err := s.AcquireLease(ctx, "tend/shard-2", "replica-2", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ReleaseLease(ctx, gone); err != nil {
		t.Fatal(err)
	}
	return s
}

func snapshot(t *testing.T, s *memory.Store) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := s.Snapshot(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestSnapshotRoundTrip(t *testing.T) {
	ctx := t.Context()
	s := populated(t)
	snap := snapshot(t, s)
	if again := snapshot(t, s); !bytes.Equal(snap, again) {
		t.Error("two snapshots of the same store differ")
	}
	r, err := memory.New(memory.Config{Kinds: kinds, Restore: bytes.NewReader(snap)})
	if err != nil {
		t.Fatal(err)
	}
	if again := snapshot(t, r); !bytes.Equal(snap, again) {
		t.Errorf("the restored store snapshots differently:\n%s\n%s", snap, again)
	}
	for _, kind := range kinds {
		want, err := s.List(ctx, kind, store.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.List(ctx, kind, store.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Revision != want.Revision || len(got.Items) != len(want.Items) {
			t.Fatalf("%s: restored %d items at %d, want %d at %d", kind, len(got.Items), got.Revision, len(want.Items), want.Revision)
		}
		for i := range got.Items {
			g, w := got.Items[i], want.Items[i]
			gj, _ := json.Marshal(g)
			wj, _ := json.Marshal(w)
			if !bytes.Equal(gj, wj) {
				t.Errorf("%s: restored\n%s\nwant\n%s", kind, gj, wj)
			}
		}
	}
	// Indexes are rebuilt.
	owner, _ := r.Get(ctx, "Gadget", "owner")
	res, err := r.List(ctx, "Widget", store.ListOptions{OwnerUID: owner.Meta.UID, Selector: store.MustParseSelector("env=prod")})
	if err != nil || len(res.Items) != 1 || res.Items[0].Meta.Key != "team/a" || !res.Items[0].Meta.Terminating() {
		t.Fatalf("list by owner and label after restore: %+v, %v", res.Items, err)
	}
	// Revisions continue; history before the snapshot is gone.
	rev := res.Revision
	d, err := r.Create(ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: "team/c"}})
	if err != nil || d.Meta.Revision != rev+1 {
		t.Fatalf("create after restore: revision %d, want %d (%v)", d.Meta.Revision, rev+1, err)
	}
	if _, err := r.Watch(ctx, "Widget", rev-1); !errors.Is(err, store.ErrCompacted) {
		t.Errorf("watch from before the snapshot: got %v, want ErrCompacted", err)
	}
	w, err := r.Watch(ctx, "Widget", rev)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if e, err := w.Next(ctx); err != nil || e.Document.Meta.Key != "team/c" {
		t.Fatalf("watch from the snapshot revision: %+v, %v", e, err)
	}
	// Leases and their fences survive; a released lease's fence keeps growing.
	if _, err := r.AcquireLease(ctx, "tend/leader", "replica-9", time.Second); !errors.Is(err, store.ErrLeaseHeld) {
		t.Errorf("held lease after restore: %v", err)
	}
	l, err := r.AcquireLease(ctx, "tend/shard-2", "replica-9", time.Second)
	if err != nil || l.Fence != 2 {
		t.Errorf("released lease after restore: %+v, %v; want fence 2", l, err)
	}
}

func TestSnapshotFile(t *testing.T) {
	s := populated(t)
	path := filepath.Join(t.TempDir(), "store.json")
	if err := s.SnapshotFile(path); err != nil {
		t.Fatal(err)
	}
	if err := s.SnapshotFile(path); err != nil {
		t.Fatalf("overwriting a snapshot: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := memory.New(memory.Config{Kinds: kinds, Restore: f})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Get(t.Context(), "Widget", "team/b"); err != nil {
		t.Fatal(err)
	}
	if err := s.SnapshotFile(filepath.Join(t.TempDir(), "missing", "dir", "s.json")); err == nil {
		t.Error("snapshot into a missing directory succeeded")
	}
}

// sealed wraps data in a snapshot file with a valid checksum, to test the
// checks behind the checksum.
func sealed(format, data string) string {
	sum := sha256.Sum256([]byte(data))
	f, _ := json.Marshal(map[string]any{"format": format, "sha256": hex.EncodeToString(sum[:]), "data": json.RawMessage(data)})
	return string(f)
}

func TestSnapshotCorrupted(t *testing.T) {
	good := string(snapshot(t, populated(t)))
	const format = "tend.memory.snapshot/v1"
	doc := func(meta string) string {
		return `{"revision":5,"documents":[{"meta":` + meta + `}]}`
	}
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"empty", "", "EOF"},
		{"not JSON", "hello", "invalid"},
		{"truncated", good[:len(good)/2], "unexpected EOF"},
		{"altered", strings.Replace(good, `"team/b"`, `"team/x"`, 1), "checksum"},
		{"other format", sealed("tend.memory.snapshot/v0", `{"revision":1}`), "format"},
		{"unknown kind", sealed(format, doc(`{"kind":"Other","key":"a","uid":"u","revision":1,"generation":1}`)), `"Other"`},
		{"bad key", sealed(format, doc(`{"kind":"Widget","key":"a//b","uid":"u","revision":1,"generation":1}`)), `"a//b"`},
		{"no UID", sealed(format, doc(`{"kind":"Widget","key":"a","revision":1,"generation":1}`)), "UID"},
		{"future revision", sealed(format, doc(`{"kind":"Widget","key":"a","uid":"u","revision":9,"generation":1}`)), "revision 9"},
		{"no generation", sealed(format, doc(`{"kind":"Widget","key":"a","uid":"u","revision":1}`)), "generation"},
		{"terminating without finalizers", sealed(format,
			doc(`{"kind":"Widget","key":"a","uid":"u","revision":1,"generation":1,"deletionRequestedAt":"2020-01-01T00:00:00Z"}`)), "terminating"},
		{"duplicate key", sealed(format, `{"revision":5,"documents":[`+
			`{"meta":{"kind":"Widget","key":"a","uid":"u","revision":1,"generation":1}},`+
			`{"meta":{"kind":"Widget","key":"a","uid":"v","revision":2,"generation":1}}]}`), "twice"},
		{"bad lease", sealed(format, `{"revision":1,"documents":[],"leases":[{"name":"x","holder":"h","fence":0,"ttl":1}]}`), `"x"`},
		{"negative revision", sealed(format, `{"revision":-1,"documents":[]}`), "negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := memory.New(memory.Config{Kinds: kinds, Restore: strings.NewReader(tt.in)})
			if !errors.Is(err, memory.ErrBadSnapshot) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want ErrBadSnapshot mentioning %s", err, tt.want)
			}
		})
	}
}

func TestSnapshotKinds(t *testing.T) {
	got, err := memory.SnapshotKinds(bytes.NewReader(snapshot(t, populated(t))))
	if err != nil || !slices.Equal(got, []string{"Gadget", "Widget"}) {
		t.Fatalf("kinds of a snapshot: %v %v", got, err)
	}
	empty, _ := memory.New(memory.Config{Kinds: kinds})
	if got, err := memory.SnapshotKinds(bytes.NewReader(snapshot(t, empty))); err != nil || len(got) != 0 {
		t.Fatalf("kinds of an empty snapshot: %v %v", got, err)
	}
	good := string(snapshot(t, populated(t)))
	if _, err := memory.SnapshotKinds(strings.NewReader(strings.Replace(good, `"team/b"`, `"team/x"`, 1))); !errors.Is(err, memory.ErrBadSnapshot) {
		t.Fatalf("kinds of an altered snapshot: %v", err)
	}
}
