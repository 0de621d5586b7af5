// Package sharedcache holds the informer factories one run of a controller,
// or of a manager, shares among the sources and reconcilers that read a
// store through a cache: one factory per store.
package sharedcache

import (
	"context"
	"reflect"
	"sync"

	"github.com/tendhq/tend/informer"
)

// User is what reads a store through a shared cache: controller.CacheUser.
type User interface {
	CacheStore() informer.ListWatcher
	UseCache(f *informer.Factory)
}

// Set holds the informer factories one run shares: one per store. The zero
// Set is empty and ready to use.
type Set struct {
	Given *informer.Factory   // a factory given by the user; nil when none
	made  []*informer.Factory // made for the run, over the stores the users read
}

// For returns the factory over lw: the given one when it lists and watches
// lw, else one made for the run. A store that cannot be compared (a
// ListWatcher of a non-comparable type) gets none.
func (cs *Set) For(lw informer.ListWatcher) *informer.Factory {
	if lw == nil || !reflect.TypeOf(lw).Comparable() {
		return nil
	}
	if cs.Given != nil && sameStore(cs.Given.ListWatcher(), lw) {
		return cs.Given
	}
	for _, f := range cs.made {
		if sameStore(f.ListWatcher(), lw) {
			return f
		}
	}
	f, err := informer.NewFactory(lw, informer.FactoryConfig{})
	if err != nil {
		return nil
	}
	cs.made = append(cs.made, f)
	return f
}

// sameStore reports whether a and b are the same store; b's type is
// comparable. A comparable type can still hold an interface whose value is
// not: such a store is never the same as another.
func sameStore(a, b informer.ListWatcher) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return reflect.TypeOf(a) == reflect.TypeOf(b) && a == b
}

// Bind gives each user its factory from cs; with cs nil, nil to each (each
// then reads the store itself).
func Bind[U User](cs *Set, users []U) {
	for _, u := range users {
		var f *informer.Factory
		if cs != nil {
			f = cs.For(u.CacheStore())
		}
		u.UseCache(f)
	}
}

// Run runs every factory of cs (the given one too, when runGiven) until
// the returned func is called, which returns once they all stopped. An
// informer's failure reaches the sources that subscribe to it, which stop
// their controllers: it is reported there.
func (cs *Set) Run(ctx context.Context, runGiven bool) (stop func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	fs := cs.made
	if runGiven && cs.Given != nil {
		fs = append([]*informer.Factory{cs.Given}, fs...)
	}
	for _, f := range fs {
		wg.Go(func() { _ = f.Run(ctx) })
	}
	return func() {
		cancel()
		wg.Wait()
	}
}
