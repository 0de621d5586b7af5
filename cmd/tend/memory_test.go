package main

import (
	"path/filepath"
	"testing"

	"github.com/tendhq/tend/backends/memory"
)

// memorySnapshot runs the controller on a memory store and returns the
// store and the path of its snapshot, for --store memory:PATH.
func memorySnapshot(t testing.TB) (*memory.Store, string) {
	t.Helper()
	s, err := memory.New(memory.Config{Kinds: testKinds})
	if err != nil {
		t.Fatal(err)
	}
	produce(t, s)
	path := filepath.Join(t.TempDir(), "tend.snapshot")
	if err := s.SnapshotFile(path); err != nil {
		t.Fatal(err)
	}
	return s, path
}

// readCommands are the commands that only read, each with its golden file.
var readCommands = [][]string{
	{"get"},
	{"get", "Widget"},
	{"get", "Widget", "--phase", "Ready,Fault"},
	{"get", "Widget", "-l", "team=a"},
	{"get", "Widget", "w-fault"},
	{"get", "Widget", "w-ready", "-o", "json"},
	{"get", "Widget", "w-ready", "-o", "yaml"},
	{"describe", "Widget", "w-failing"},
	{"describe", "Widget", "w-fault"},
	{"stuck"},
	{"stuck", "Widget", "-o", "json"},
	{"machine", "Widget"},
	{"machine", "Widget", "--format", "dot"},
	{"get", "Gadget"},
	{"get", "Widget", "nope"},
	{"describe", "Widget"},
	{"get", "Widget", "-o", "xml"},
	{"frobnicate"},
}

func TestReadMemory(t *testing.T) {
	_, path := memorySnapshot(t)
	golden(t, "read", transcript(t, "memory:"+path, readCommands...))
}

func TestRoundTripMemory(t *testing.T) {
	s, path := memorySnapshot(t)
	roundTrip(t, s, "memory:"+path)
}
