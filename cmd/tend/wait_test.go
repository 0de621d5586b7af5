package main

import (
	"context"
	"strings"
	"testing"

	"github.com/tendhq/tend/store"
)

// waitCase is one tend wait and what it must end with.
type waitCase struct {
	args []string
	code int
	says string // in stdout or stderr
}

func checkWaits(t *testing.T, spec string, cases ...waitCase) {
	t.Helper()
	for _, c := range cases {
		r := tend(t, append([]string{"--store", spec, "wait", "Widget"}, c.args...)...)
		if r.code != c.code || !strings.Contains(r.stdout+r.stderr, c.says) {
			t.Errorf("tend wait Widget %s: exit %d, %q%q; want exit %d saying %q", strings.Join(c.args, " "), r.code, r.stdout, r.stderr, c.code, c.says)
		}
	}
}

// The documents a controller run left: settled, held in Fault, still
// failing, absent.
func TestWaitMemory(t *testing.T) {
	_, path := memorySnapshot(t)
	checkWaits(t, "memory:"+path,
		waitCase{[]string{"w-ready"}, exitOK, "Widget w-ready: settled: state Up, phase Ready"},
		waitCase{[]string{"w-down"}, exitOK, "settled: state Down, phase Absent"},
		waitCase{[]string{"w-fault"}, exitStuck, "bad configuration"},
		waitCase{[]string{"w-failing", "--timeout", "1s"}, exitError, "did not settle within 1s"},
		waitCase{[]string{"nope"}, exitNotFound, "removed"},
		waitCase{[]string{"w-ready", "extra"}, exitUsage, "accepts 2 arg(s)"},
	)
}

// Against a running controller: a spec change is waited for until it is
// settled, a refused intent and a removal end the wait.
func TestWaitPostgres(t *testing.T) {
	s, spec := postgresStore(t)
	produce(t, s)
	run := startController(t, s, true)
	defer run.stop()
	waitServed(t, spec)
	coll, err := store.NewCollection[widgetSpec, widgetStatus](s, widgetKind, store.CollectionConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	set := func(key, state string) {
		t.Helper()
		obj, err := coll.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		obj.Spec.State = state
		if _, err := coll.UpdateSpec(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	set("w-down", "Up")
	checkWaits(t, spec, waitCase{[]string{"w-down", "--timeout", "30s"}, exitOK, "settled: state Up, phase Ready"})
	set("w-down", "Sideways") // written past the driver's admission
	checkWaits(t, spec, waitCase{[]string{"w-down", "--timeout", "30s"}, exitRefused, "Sideways"})
	set("w-ready", "Gone")
	checkWaits(t, spec,
		waitCase{[]string{"w-ready", "--timeout", "30s"}, exitNotFound, "removed"},
		waitCase{[]string{"w-fault", "--timeout", "30s"}, exitStuck, "bad configuration"},
	)
}
