package etcd

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/tendhq/tend/store"
)

// TestRecordRoundTrip: every document decodes to what was encoded, payload
// bytes included, and no truncation of a stored document decodes.
func TestRecordRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		when := func(label string) time.Time {
			if rapid.Bool().Draw(t, label+" zero") {
				return time.Time{}
			}
			return time.Unix(0, rapid.Int64Range(1, 1<<62).Draw(t, label))
		}
		var owners []store.OwnerRef
		for i := range rapid.IntRange(0, 3).Draw(t, "owners") {
			owners = append(owners, store.OwnerRef{Kind: "Owner", Key: "k", UID: string(rune('a' + i)), Controller: i == 0})
		}
		d := store.Document{
			Meta: store.Meta{
				UID:                 rapid.String().Draw(t, "uid"),
				Generation:          rapid.Int64().Draw(t, "generation"),
				CreatedAt:           when("created"),
				UpdatedAt:           when("updated"),
				DeletionRequestedAt: when("deletion"),
				Finalizers:          rapid.SliceOf(rapid.String()).Draw(t, "finalizers"),
				Owners:              owners,
				Labels:              rapid.MapOf(rapid.String(), rapid.String()).Draw(t, "labels"),
			},
			Spec:   rapid.SliceOf(rapid.Byte()).Draw(t, "spec"),
			Status: rapid.SliceOf(rapid.Byte()).Draw(t, "status"),
		}
		b := encode(&d)
		got, err := decode(b)
		if err != nil {
			t.Fatal(err)
		}
		norm := func(d store.Document) store.Document {
			if len(d.Spec) == 0 {
				d.Spec = nil
			}
			if len(d.Status) == 0 {
				d.Status = nil
			}
			if len(d.Meta.Finalizers) == 0 {
				d.Meta.Finalizers = nil
			}
			if len(d.Meta.Labels) == 0 {
				d.Meta.Labels = nil
			}
			return d
		}
		if diff := cmp.Diff(norm(d), norm(got)); diff != "" {
			t.Fatalf("round trip (-want +got):\n%s", diff)
		}
		if n := rapid.IntRange(0, len(b)-1).Draw(t, "cut"); len(d.Status) == 0 {
			if _, err := decode(b[:n]); !errors.Is(err, store.ErrDecode) {
				t.Fatalf("decode of %d of %d bytes: got %v, want ErrDecode", n, len(b), err)
			}
		}
	})
}
