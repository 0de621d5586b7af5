package drivertest_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tendhq/tend/driver/drivertest"
	"github.com/tendhq/tend/internal/evolvetest"
	sm "github.com/tendhq/tend/statemachine"
)

func machineOf(t *testing.T, d sm.Definition[string, string]) *sm.Machine[string, string] {
	t.Helper()
	m, err := sm.New(d)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A snapshot of documents version 1 wrote is carried by version 2 with its
// migrations; the version that forgets them (the planted defect) is
// caught, naming the documents it would strand.
func TestCheckCarried(t *testing.T) {
	docs, err := drivertest.ReadSnapshot("testdata/services.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 4 {
		t.Fatalf("%d documents read", len(docs))
	}
	if err := drivertest.CheckCarried[evolvetest.Spec, evolvetest.Status](machineOf(t, evolvetest.V1()), docs); err != nil {
		t.Fatalf("version 1: %v", err)
	}
	if err := drivertest.CheckCarried[evolvetest.Spec, evolvetest.Status](machineOf(t, evolvetest.V2(true)), docs); err != nil {
		t.Fatalf("version 2 with its migrations: %v", err)
	}
	err = drivertest.CheckCarried[evolvetest.Spec, evolvetest.Status](machineOf(t, evolvetest.V2(false)), docs)
	var se *sm.StrandedError
	if !errors.Is(err, sm.ErrStranded) || !errors.As(err, &se) {
		t.Fatalf("version 2 without migrations: %v, want ErrStranded", err)
	}
	var keys []string
	for _, d := range se.Documents {
		keys = append(keys, d.Key)
	}
	if !slices.Equal(keys, []string{"mid", "legacy"}) || se.Total != 2 || se.Kind != "Service" {
		t.Fatalf("stranded %v (total %d)", keys, se.Total)
	}
	// The retired intent alone strands a document whose status is carried.
	def := evolvetest.V2(true)
	def.Migrations.States = nil
	err = drivertest.CheckCarried[evolvetest.Spec, evolvetest.Status](machineOf(t, def), docs[1:2])
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "intent Legacy is not a state") {
		t.Fatalf("a retired intent: %v", err)
	}
}

func TestParseSnapshot(t *testing.T) {
	one := `{"meta": {"kind": "Service", "key": "a"}, "spec": {"state": "Up"}}`
	stream := one + "\n" + `{"meta":{"kind":"Service","key":"b"},"spec":{"state":"Down"},"status":{"phase":"Idle"}}` + "\n"
	for _, tt := range []struct {
		data string
		keys []string
		err  bool
	}{
		{data: one, keys: []string{"a"}},
		{data: stream, keys: []string{"a", "b"}},
		{data: `{"items": []}`},
		{data: `[1, 2]`, err: true},
		{data: `{"kind": "Service"}`, err: true},
		{data: one[:20], err: true},
	} {
		docs, err := drivertest.ParseSnapshot([]byte(tt.data))
		if (err != nil) != tt.err {
			t.Errorf("%q: %v", tt.data, err)
			continue
		}
		var keys []string
		for _, d := range docs {
			keys = append(keys, d.Meta.Key)
		}
		if !slices.Equal(keys, tt.keys) {
			t.Errorf("%q: keys %v, want %v", tt.data, keys, tt.keys)
		}
	}
	if _, err := drivertest.ReadSnapshot(filepath.Join(t.TempDir(), "missing.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
}
