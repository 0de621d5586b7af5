package expectations

import (
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

var (
	propKeys  = []string{"k1", "k2"}
	propNames = []string{"a", "b", "c", "d"}
)

// propTTL is short and the clock moves in whole seconds, so that runs often land exactly on an expiry boundary.
const propTTL = 10 * time.Second

func drawStep(t *rapid.T) time.Duration {
	return time.Duration(rapid.IntRange(0, 12).Draw(t, "seconds")) * time.Second
}

// TestNamesProperty checks Names against a model under testing/synctest with the default clock: a key is satisfied
// exactly when none of its expected names is both unobserved and unexpired, whatever the interleaving of expects,
// observations, deletions and time.
func TestNamesProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		rapid.SyncTest(t, func(t *rapid.T) {
			n, err := NewNames[string, string](NamesConfig{TTL: propTTL})
			if err != nil {
				t.Fatal(err)
			}
			// model[key][dir][name] is the time name was last expected; dir 0 is creations, 1 deletions.
			model := map[string][2]map[string]time.Time{}
			for _, k := range propKeys {
				model[k] = [2]map[string]time.Time{{}, {}}
			}
			live := func(m map[string]time.Time) []string {
				var out []string
				for name, at := range m {
					if time.Since(at) <= propTTL {
						out = append(out, name)
					}
				}
				slices.Sort(out)
				return out
			}
			t.Repeat(map[string]func(*rapid.T){
				"expect": func(t *rapid.T) {
					k := rapid.SampledFrom(propKeys).Draw(t, "key")
					dir := rapid.IntRange(0, 1).Draw(t, "dir")
					names := rapid.SliceOfDistinct(rapid.SampledFrom(propNames), rapid.ID).Draw(t, "names")
					if dir == 0 {
						n.ExpectCreations(k, names...)
					} else {
						n.ExpectDeletions(k, names...)
					}
					for _, name := range names {
						model[k][dir][name] = time.Now()
					}
				},
				"observe": func(t *rapid.T) {
					k := rapid.SampledFrom(propKeys).Draw(t, "key")
					dir := rapid.IntRange(0, 1).Draw(t, "dir")
					name := rapid.SampledFrom(propNames).Draw(t, "name")
					if dir == 0 {
						n.CreationObserved(k, name)
					} else {
						n.DeletionObserved(k, name)
					}
					delete(model[k][dir], name)
				},
				"delete": func(t *rapid.T) {
					k := rapid.SampledFrom(propKeys).Draw(t, "key")
					n.DeleteExpectations(k)
					clear(model[k][0])
					clear(model[k][1])
				},
				"sleep": func(t *rapid.T) {
					time.Sleep(drawStep(t))
				},
				"": func(t *rapid.T) {
					for _, k := range propKeys {
						wantAdd, wantDel := live(model[k][0]), live(model[k][1])
						want := len(wantAdd) == 0 && len(wantDel) == 0
						if got := n.SatisfiedExpectations(k); got != want {
							t.Fatalf("%s: SatisfiedExpectations = %v, want %v (pending %q, %q)", k, got, want, wantAdd, wantDel)
						}
						add, del := n.Pending(k)
						slices.Sort(add)
						slices.Sort(del)
						if !slices.Equal(add, wantAdd) || !slices.Equal(del, wantDel) {
							t.Fatalf("%s: Pending = (%q, %q), want (%q, %q)", k, add, del, wantAdd, wantDel)
						}
					}
				},
			})
		})
	})
}

// countModel is Kubernetes' ControlleeExpectations: two counters and the time they were set.
type countModel struct {
	add, del int
	set      time.Time
}

// TestCountsProperty checks Counts against a model of Kubernetes' ControllerExpectations, with a manual clock.
func TestCountsProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		clk := newFakeClock()
		c, err := NewCounts[string](CountsConfig{TTL: propTTL, Now: clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		model := map[string]*countModel{}
		liveModel := func(k string) *countModel {
			m := model[k]
			if m == nil || clk.Now().Sub(m.set) > propTTL {
				return nil
			}
			return m
		}
		adjust := func(k string, add, del int) {
			if m := liveModel(k); m != nil {
				m.add += add
				m.del += del
			}
		}
		count := rapid.IntRange(-2, 5)
		t.Repeat(map[string]func(*rapid.T){
			"set": func(t *rapid.T) {
				k := rapid.SampledFrom(propKeys).Draw(t, "key")
				add, del := count.Draw(t, "add"), count.Draw(t, "del")
				c.SetExpectations(k, add, del)
				model[k] = &countModel{add: add, del: del, set: clk.Now()}
			},
			"expectCreations": func(t *rapid.T) {
				k := rapid.SampledFrom(propKeys).Draw(t, "key")
				add := count.Draw(t, "add")
				c.ExpectCreations(k, add)
				model[k] = &countModel{add: add, set: clk.Now()}
			},
			"creationObserved": func(t *rapid.T) {
				k := rapid.SampledFrom(propKeys).Draw(t, "key")
				c.CreationObserved(k)
				adjust(k, -1, 0)
			},
			"deletionObserved": func(t *rapid.T) {
				k := rapid.SampledFrom(propKeys).Draw(t, "key")
				c.DeletionObserved(k)
				adjust(k, 0, -1)
			},
			"raise": func(t *rapid.T) {
				k := rapid.SampledFrom(propKeys).Draw(t, "key")
				add, del := count.Draw(t, "add"), count.Draw(t, "del")
				c.RaiseExpectations(k, add, del)
				adjust(k, add, del)
			},
			"lower": func(t *rapid.T) {
				k := rapid.SampledFrom(propKeys).Draw(t, "key")
				add, del := count.Draw(t, "add"), count.Draw(t, "del")
				c.LowerExpectations(k, add, del)
				adjust(k, -add, -del)
			},
			"delete": func(t *rapid.T) {
				k := rapid.SampledFrom(propKeys).Draw(t, "key")
				c.DeleteExpectations(k)
				delete(model, k)
			},
			"advance": func(t *rapid.T) {
				clk.Advance(drawStep(t))
			},
			"": func(t *rapid.T) {
				for _, k := range propKeys {
					m := liveModel(k)
					want := m == nil || (m.add <= 0 && m.del <= 0)
					if got := c.SatisfiedExpectations(k); got != want {
						t.Fatalf("%s: SatisfiedExpectations = %v, want %v (model %+v)", k, got, want, m)
					}
					add, del, ok := c.Get(k)
					if ok != (m != nil) || (m != nil && (add != m.add || del != m.del)) {
						t.Fatalf("%s: Get = (%d, %d, %v), model %+v", k, add, del, ok, m)
					}
				}
			},
		})
	})
}

// TestGateReadYourWrites simulates a store, a reconciler and another writer writing to it, and a cache applying the
// store's change log in revision order, possibly far behind. Whenever the gate says a key is ready, the cache shows
// the reconciler's last write to it or a later one; once the cache has caught up, every key is ready.
func TestGateReadYourWrites(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		type change struct {
			key string
			rev int64
		}
		var (
			g       Gate[string]
			log     []change             // every write, in revision order
			applied int                  // how much of log the cache has applied
			cache   = map[string]int64{} // the revision of each key as the cache shows it
			last    = map[string]int64{} // the revision of the reconciler's last write to each key
		)
		perKey := rapid.Bool().Draw(t, "perKey")
		write := func(k string) int64 {
			rev := int64(len(log) + 1)
			log = append(log, change{key: k, rev: rev})
			return rev
		}
		t.Repeat(map[string]func(*rapid.T){
			"write": func(t *rapid.T) {
				k := rapid.SampledFrom(propKeys).Draw(t, "key")
				rev := write(k)
				last[k] = rev
				g.Wrote(k, rev)
			},
			"otherWriter": func(t *rapid.T) {
				write(rapid.SampledFrom(propKeys).Draw(t, "key"))
			},
			"cacheApplies": func(t *rapid.T) {
				n := rapid.IntRange(0, len(log)-applied).Draw(t, "events")
				for _, ch := range log[applied : applied+n] {
					cache[ch.key] = ch.rev
					if perKey {
						g.ObservedKey(ch.key, ch.rev)
					} else {
						g.Observed(ch.rev)
					}
				}
				applied += n
			},
			"": func(t *rapid.T) {
				for _, k := range propKeys {
					if g.Ready(k) && cache[k] < last[k] {
						t.Fatalf("%s ready but the cache shows revision %d, reconciler wrote %d", k, cache[k], last[k])
					}
				}
			},
		})
		for _, ch := range log[applied:] {
			g.Observed(ch.rev)
		}
		for _, k := range propKeys {
			if !g.Ready(k) {
				t.Fatalf("%s not ready after the cache caught up", k)
			}
		}
		if n := g.Len(); n != 0 {
			t.Fatalf("Len = %d after the cache caught up, want 0", n)
		}
	})
}
