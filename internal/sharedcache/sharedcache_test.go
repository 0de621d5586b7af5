package sharedcache

import (
	"context"
	"testing"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/informer"
	"github.com/tendhq/tend/store"
)

// funcs is a ListWatcher of a type that cannot be compared.
type funcs struct {
	list func() (store.ListResult, error)
}

func (f funcs) List(context.Context, string, store.ListOptions) (store.ListResult, error) {
	return f.list()
}

func (f funcs) Watch(context.Context, string, int64) (store.Watch, error) {
	return nil, store.ErrClosed
}

// holder is a comparable type that may hold a value that is not.
type holder struct{ informer.ListWatcher }

// A run makes one factory per store, compared by identity; a store that
// cannot be compared gets none (its sources watch on their own) instead of
// a panic.
func TestCachesFactoryPerStore(t *testing.T) {
	a, err := memory.New(memory.Config{Kinds: []string{"Widget"}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := memory.New(memory.Config{Kinds: []string{"Widget"}})
	if err != nil {
		t.Fatal(err)
	}
	var cs Set
	fa, fb := cs.For(a), cs.For(b)
	if fa == nil || fb == nil || fa == fb {
		t.Fatalf("factories %p and %p for two stores, want two", fa, fb)
	}
	if again := cs.For(a); again != fa {
		t.Errorf("a second factory for one store")
	}
	if f := cs.For(funcs{}); f != nil {
		t.Errorf("a factory for a store that cannot be compared")
	}
	h1, h2 := holder{funcs{}}, holder{funcs{}}
	if cs.For(h1) == nil {
		t.Fatal("no factory for a comparable holder")
	}
	if f := cs.For(h2); f == nil {
		t.Error("no factory for a second holder")
	}
	if len(cs.made) != 4 {
		t.Errorf("%d factories made, want 4 (a, b and each holder)", len(cs.made))
	}
}
