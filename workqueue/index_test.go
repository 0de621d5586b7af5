package workqueue

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

// TestIndexMatchesMap drives the index and a map with random inserts and
// removals over enough keys to grow the table several times, and checks
// after every step that each key is found exactly when the map holds it and
// that every slot is reachable from its home without crossing an empty slot.
func TestIndexMatchesMap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		x := newIndex[string]()
		var entries slab[entry[string]]
		model := map[string]int32{}
		key := rapid.Custom(func(t *rapid.T) string {
			return fmt.Sprint(rapid.IntRange(0, 199).Draw(t, "key"))
		})
		t.Repeat(map[string]func(*rapid.T){
			"insert": func(t *rapid.T) {
				k := key.Draw(t, "key")
				idx, h, at := x.find(&entries, k)
				if _, ok := model[k]; ok {
					t.Skip("present")
				}
				if idx != noEntry {
					t.Fatalf("find(%q) = %d before insert", k, idx)
				}
				idx = entries.push(entry[string]{key: k})
				x.insert(idx, h, at)
				model[k] = idx
			},
			"remove": func(t *rapid.T) {
				k := key.Draw(t, "key")
				idx, ok := model[k]
				if !ok {
					t.Skip("absent")
				}
				x.remove(k, idx)
				delete(model, k)
			},
			"": func(t *rapid.T) {
				if x.n != len(model) {
					t.Fatalf("index holds %d keys, map %d", x.n, len(model))
				}
				for i := range 200 {
					k := fmt.Sprint(i)
					want, ok := model[k]
					if !ok {
						want = noEntry
					}
					if got, _, _ := x.find(&entries, k); got != want {
						t.Fatalf("find(%q) = %d, want %d", k, got, want)
					}
				}
				mask := uint32(len(x.slots) - 1)
				for i, s := range x.slots {
					if s.ref == 0 {
						continue
					}
					for j := s.hash & mask; j != uint32(i); j = (j + 1) & mask {
						if x.slots[j].ref == 0 {
							t.Fatalf("slot %d (home %d) is cut off by the empty slot %d", i, s.hash&mask, j)
						}
					}
				}
			},
		})
	})
}

// TestIndexKeyTypes checks lookups of keys whose equality is not that of
// their bytes: structs of strings, and interfaces.
func TestIndexKeyTypes(t *testing.T) {
	type name struct{ namespace, name string }
	qn, err := New(Config[name]{})
	if err != nil {
		t.Fatal(err)
	}
	defer qn.ShutDown()
	a := name{"ns", "a"}
	qn.Add(a)
	qn.Add(name{string([]byte("ns")), string([]byte("a"))}) // equal, other backing arrays
	if n := qn.Len(); n != 1 {
		t.Fatalf("Len = %d after adding one name twice, want 1", n)
	}
	qa, err := New(Config[any]{})
	if err != nil {
		t.Fatal(err)
	}
	defer qa.ShutDown()
	qa.Add(1)
	qa.Add(int64(1))
	qa.Add(1)
	qa.Add("1")
	if n := qa.Len(); n != 3 {
		t.Fatalf("Len = %d, want 3 (1, int64(1), \"1\")", n)
	}
}
