package finalizer_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/finalizer"
	"github.com/tendhq/tend/store"
)

// Whatever other controllers do to the finalizer list between the helper's
// read and its write, Add and Remove change only their own name: the stored
// list ends up as the others left it, plus (Add) or minus (Remove) the name.
func TestOnlyOwnNameChanges(t *testing.T) {
	others := []string{"a.example.com/x", "b.example.com/x", "c.example.com/x"}
	rapid.Check(t, func(rt *rapid.T) {
		ctx := context.Background()
		s := newStore(rt)
		terminating := rapid.Bool().Draw(rt, "terminating")
		remove := terminating || rapid.Bool().Draw(rt, "remove")
		model := rapid.SliceOfNDistinct(rapid.SampledFrom(others), 0, len(others), rapid.ID).Draw(rt, "others")
		initial := slices.Clone(model)
		if remove || rapid.Bool().Draw(rt, "present") {
			initial = append(initial, name)
		}
		if terminating && len(initial) == 0 {
			initial = []string{name}
		}
		doc := create(rt, s, "b", initial, terminating)

		rw := &interfering{Store: s, interfere: func(ctx context.Context, s *memory.Store, write int) {
			switch rapid.IntRange(0, 3).Draw(rt, "interference") {
			case 1: // another controller adds its finalizer
				if terminating {
					return
				}
				f := rapid.SampledFrom(others).Draw(rt, "add")
				if slices.Contains(model, f) {
					return
				}
				model = append(model, f)
				setFinalizers(ctx, rt, s, func(fs []string) []string { return append(fs, f) })
			case 2: // another controller removes its finalizer
				if len(model) == 0 {
					return
				}
				f := rapid.SampledFrom(model).Draw(rt, "remove")
				model = slices.DeleteFunc(model, func(g string) bool { return g == f })
				setFinalizers(ctx, rt, s, func(fs []string) []string {
					return slices.DeleteFunc(fs, func(g string) bool { return g == f })
				})
			case 3: // a user edits the labels
				d, err := s.Get(ctx, "Bucket", "b")
				if err != nil {
					rt.Fatal(err)
				}
				d.Meta.Labels = map[string]string{"w": rapid.StringMatching(`[a-z]{1,5}`).Draw(rt, "label")}
				if _, err := s.UpdateSpec(ctx, d); err != nil {
					rt.Fatal(err)
				}
			}
		}}
		obj := finalizer.NewDocument(rw, doc)
		var err error
		if remove {
			err = finalizer.Remove(ctx, obj, name)
		} else {
			err = finalizer.Add(ctx, obj, name)
		}
		want := slices.Clone(model)
		switch {
		case errors.Is(err, store.ErrConflict):
			if rw.writes != finalizer.MaxAttempts {
				rt.Fatalf("gave up after %d writes, want %d", rw.writes, finalizer.MaxAttempts)
			}
			if remove || slices.Contains(initial, name) {
				want = append(want, name)
			}
		case err != nil:
			rt.Fatal(err)
		case !remove:
			want = append(want, name)
		}
		got, err := s.Get(ctx, "Bucket", "b")
		if errors.Is(err, store.ErrNotFound) && terminating && len(want) == 0 {
			return // the last finalizer went and the document with it
		}
		if err != nil {
			rt.Fatal(err)
		}
		slices.Sort(want)
		stored := slices.Sorted(slices.Values(got.Meta.Finalizers))
		if !slices.Equal(stored, want) {
			rt.Fatalf("stored finalizers %v, want %v", stored, want)
		}
	})
}
