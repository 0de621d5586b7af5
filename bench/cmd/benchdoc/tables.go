package main

import "fmt"

// A table is one generated section of docs/benchmarks.md, read from the raw
// results file of the same name.
type table struct {
	name    string   // marker name and results file name, without .txt
	columns []string // the implementations compared, tend first
	rows    []row
}

// A row is one measurement across the table's columns.
type row struct {
	label  string
	unit   string   // the unit of go test's output shown: ns/op, B/key, p99-ms ...
	bench  []string // one benchmark name per column, "" where the implementation has none
	allocs bool     // show allocs/op too
	target []check  // all must hold for the row to be met
}

// tables are the generated sections, with the targets the project set for
// them: the workqueue's, the store's, the controller's (dispatch,
// convergence), and the PostgreSQL and etcd backends'.
var tables = []table{
	{
		name:    "workqueue",
		columns: []string{"tend", "client-go", "controller-runtime"},
		rows: []row{
			{label: "round trip Get+Done+Add, 1,000 keys queued, metrics off", unit: "ns/op", allocs: true,
				bench:  each("RoundTrip/%s"),
				target: []check{better("client-go", 1.8), maxAllocs(0)}},
			{label: "same, metrics on", unit: "ns/op", allocs: true,
				bench:  each("RoundTrip/%s/metrics"),
				target: []check{better("client-go", 3), better("controller-runtime", 10)}},
			{label: "drain 10,000 keys with 2 workers, per key", unit: "ns/op",
				bench:  each("Drain/%s"),
				target: []check{better("client-go", 1.6)}},
			{label: "AddAfter of a new key, fresh queue (growth included)", unit: "ns/op", allocs: true,
				bench:  each("AddAfter/%s/new"),
				target: []check{better("controller-runtime", 1)}},
			{label: "AddAfter of a key already delayed", unit: "ns/op", allocs: true,
				bench:  each("AddAfter/%s/again"),
				target: []check{better("controller-runtime", 1)}},
			{label: "lateness of 10,000 keys delayed 10–110 ms, 2 workers: p50", unit: "p50-ms",
				bench: each("Lateness/%s")},
			{label: "same: p99", unit: "p99-ms",
				bench:  each("Lateness/%s"),
				target: []check{better("client-go", 1)}},
			{label: "same: max", unit: "max-ms",
				bench: each("Lateness/%s")},
			{label: "heap per queued key, 100,000 keys", unit: "B/key",
				bench:  each("MemoryPerKey/%s/100k"),
				target: []check{atMost(74)}},
			{label: "heap per queued key, 10,000 keys", unit: "B/key",
				bench:  each("MemoryPerKey/%s/10k"),
				target: []check{atMost(74)}},
			{label: "round trip with priorities, all 0", unit: "ns/op", allocs: true,
				bench:  []string{"RoundTripPriority/tend/levels-1", "", "RoundTripPriority/controllerruntime/levels-1"},
				target: []check{within("RoundTrip/tend", "the plain round trip", 1.2)}},
			{label: "round trip with priorities -1, 0 and 1", unit: "ns/op", allocs: true,
				bench:  []string{"RoundTripPriority/tend/levels-3", "", "RoundTripPriority/controllerruntime/levels-3"},
				target: []check{within("RoundTrip/tend", "the plain round trip", 1.2)}},
		},
	},
	{
		name:    "dispatch",
		columns: []string{"tend", "controller-runtime"},
		rows: []row{
			{label: "no-op reconcile from a channel source, 1 worker", unit: "ns/op", allocs: true,
				bench:  []string{"Dispatch/tend/workers-1", "Dispatch/controller-runtime/workers-1"},
				target: []check{better("controller-runtime", 5)}},
			{label: "same, tend with metrics", unit: "ns/op", allocs: true,
				bench:  []string{"Dispatch/tend/metrics/workers-1", "Dispatch/controller-runtime/workers-1"},
				target: []check{better("controller-runtime", 5)}},
			{label: "no-op reconcile from a channel source, 4 workers", unit: "ns/op", allocs: true,
				bench:  []string{"Dispatch/tend/workers-4", "Dispatch/controller-runtime/workers-4"},
				target: []check{better("controller-runtime", 5)}},
			{label: "same, tend with metrics", unit: "ns/op", allocs: true,
				bench:  []string{"Dispatch/tend/metrics/workers-4", "Dispatch/controller-runtime/workers-4"},
				target: []check{better("controller-runtime", 5)}},
		},
	},
	{
		name:    "converge",
		columns: []string{"tend"},
		rows: []row{
			{label: "100,000 documents Creating → Started, memory store, 2 workers: time", unit: "s/converge",
				bench: []string{"Converge/docs-100000/workers-2"}},
			{label: "same: peak heap in use", unit: "peak-heap-MiB",
				bench:  []string{"Converge/docs-100000/workers-2"},
				target: []check{below(300)}},
			{label: "same: CPU time used while converging", unit: "cpu-s/converge",
				bench: []string{"Converge/docs-100000/workers-2"}},
			{label: "same: lists of the informer (1: its watch kept up with the store)", unit: "lists",
				bench: []string{"Converge/docs-100000/workers-2"}},
			{label: "100,000 documents Creating → Started, memory store, 8 workers: time", unit: "s/converge",
				bench: []string{"Converge/docs-100000/workers-8"}},
			{label: "same: peak heap in use", unit: "peak-heap-MiB",
				bench:  []string{"Converge/docs-100000/workers-8"},
				target: []check{below(300)}},
			{label: "same: CPU time used while converging", unit: "cpu-s/converge",
				bench: []string{"Converge/docs-100000/workers-8"}},
			{label: "same: lists of the informer (1: its watch kept up with the store)", unit: "lists",
				bench: []string{"Converge/docs-100000/workers-8"}},
			{label: "store writes per document, Creating → Started", unit: "writes/doc",
				bench: []string{"ConvergeWrites/docs-1000/workers-2"}},
			{label: "same: writes holding a step's checkpoint", unit: "checkpoint-writes/doc",
				bench: []string{"ConvergeWrites/docs-1000/workers-2"}},
			{label: "same: writes holding an operation's begin and no checkpoint", unit: "begin-writes/doc",
				bench: []string{"ConvergeWrites/docs-1000/workers-2"}},
			{label: "same: writes holding a completion and no checkpoint or begin", unit: "completion-writes/doc",
				bench: []string{"ConvergeWrites/docs-1000/workers-2"}},
			{label: "same: writes holding observations only", unit: "observation-writes/doc",
				bench: []string{"ConvergeWrites/docs-1000/workers-2"}},
			{label: "same: begins carried by a checkpoint's write", unit: "carried-begins/doc",
				bench: []string{"ConvergeWrites/docs-1000/workers-2"}},
			{label: "same: completions carried by a checkpoint's write", unit: "carried-completions/doc",
				bench: []string{"ConvergeWrites/docs-1000/workers-2"}},
			{label: "same: writes now ÷ writes before (10 per document: a write per decision)", unit: "writes-vs-before",
				bench:  []string{"ConvergeWrites/docs-1000/workers-2"},
				target: []check{atMost(0.6)}},
		},
	},
	{
		name:    "store",
		columns: []string{"memory store"},
		rows: []row{
			{label: "Get one document of 10,000, backend", unit: "ns/op", allocs: true,
				bench: []string{"StoreGet/backend"}},
			{label: "Get one document of 10,000, collection (decoded)", unit: "ns/op", allocs: true,
				bench: []string{"StoreGet/collection"}},
			{label: "no-op UpdateStatus, backend", unit: "ns/op", allocs: true,
				bench:  []string{"StoreUpdateStatus/backend/noop"},
				target: []check{below(2000), maxAllocs(3)}},
			{label: "no-op UpdateStatus, backend, document without owner", unit: "ns/op", allocs: true,
				bench:  []string{"StoreUpdateStatus/backend/noop-without-owner"},
				target: []check{below(2000), maxAllocs(3)}},
			{label: "UpdateStatus with a change, backend", unit: "ns/op", allocs: true,
				bench: []string{"StoreUpdateStatus/backend/change"}},
			{label: "no-op UpdateStatus, collection (encoded and decoded)", unit: "ns/op", allocs: true,
				bench: []string{"StoreUpdateStatus/collection/noop"}},
			{label: "watch delivery of changes already made", unit: "ns/op", allocs: true,
				bench: []string{"StoreWatch/read"}},
			{label: "watch: write a change, then read it", unit: "ns/op", allocs: true,
				bench: []string{"StoreWatch/write+read"}},
			{label: "watch: read while another goroutine writes", unit: "ns/op", allocs: true,
				bench: []string{"StoreWatch/concurrent"}},
			{label: "List all 100,000 documents", unit: "ns/op", allocs: true,
				bench: []string{"StoreList/all/100000"}},
			{label: "List 1,000 of 100,000 by label selector", unit: "ns/op", allocs: true,
				bench: []string{"StoreList/selector/1000"}},
			{label: "List 1,000 of 100,000 by owner", unit: "ns/op", allocs: true,
				bench: []string{"StoreList/owner/1000"}},
		},
	},
	// The cascade benchmarks of package cascade and of the gateway example,
	// with the target for the gateway's cascade delete.
	{
		name:    "cascade",
		columns: []string{"tend"},
		rows: []row{
			{label: "background delete of a gateway owning 100 routes, each owning a secret (201 documents), per document",
				unit: "ns/document", bench: []string{"Cascade/Background/100"}},
			{label: "same, 1,000 routes (2,001 documents)", unit: "ns/document", bench: []string{"Cascade/Background/1000"}},
			{label: "same, 5,000 routes (10,001 documents)", unit: "ns/document", bench: []string{"Cascade/Background/5000"}},
			{label: "foreground delete of a gateway owning 100 routes, each owning a secret (201 documents), per document",
				unit: "ns/document", bench: []string{"Cascade/Foreground/100"}},
			{label: "same, 1,000 routes (2,001 documents)", unit: "ns/document", bench: []string{"Cascade/Foreground/1000"}},
			{label: "same, 5,000 routes (10,001 documents)", unit: "ns/document", bench: []string{"Cascade/Foreground/5000"}},
			{label: "gateway example: ordered cascade delete of one gateway, zero simulated delay, memory store", unit: "ms/delete",
				bench: []string{"CascadeDelete"}, target: []check{below(50)}},
			{label: "same: store writes per delete", unit: "writes/delete", bench: []string{"CascadeDelete"}},
			{label: "same: speed-up over a one-step-per-tick design (1 s ticks, ≥ 6 s)", unit: "x-faster-than-ticks",
				bench: []string{"CascadeDelete"}},
		},
	},
	{
		name:    "expectations",
		columns: []string{"tend"},
		rows: []row{
			{label: "Counts: expect one creation, observe it, check, per key", unit: "ns/op", allocs: true,
				bench: []string{"CountsCycle"}},
			{label: "Names: the same with one named dependent", unit: "ns/op", allocs: true,
				bench: []string{"NamesCycle"}},
			{label: "Gate: one write, its watch event observed, one check", unit: "ns/op", allocs: true,
				bench: []string{"GateCycle"}},
		},
	},
	backend("postgres", "PostgreSQL", true),
	backend("etcd", "etcd", false),
}

// backend returns the table of the benchmarks of backends/NAME, the store
// on server, with the targets for the convergence of 10,000 documents.
// serverCPU says whether the server is a process of its own, whose CPU time
// the benchmark reports apart.
func backend(name, server string, serverCPU bool) table {
	rows := []row{
		{label: "one status write (UpdateStatus), sequential", unit: "ns/op", bench: []string{"UpdateStatus"}},
		{label: "watch delivery: from the start of a status write to its event out of Next", unit: "ns/delivery",
			bench: []string{"WatchDelivery"}},
	}
	for _, workers := range []int{8, 32} {
		b := []string{fmt.Sprintf("Converge/workers-%d", workers)}
		rows = append(rows,
			row{label: fmt.Sprintf("10,000 documents Creating → Started, gateway machine, instant steps, %s, %d workers: time", server, workers),
				unit: "s/converge", bench: b, target: []check{below(60)}},
			row{label: "same: overhead, time ÷ (store writes × single-write latency)", unit: "overhead", bench: b,
				target: []check{atMost(1.5)}},
			row{label: "same: store writes", unit: "writes/converge", bench: b},
			row{label: "same: single-write latency, measured before the run", unit: "write-ms", bench: b},
		)
		if serverCPU {
			rows = append(rows,
				row{label: "same: CPU time of the benchmark process (controller and client)", unit: "cpu-s/converge", bench: b},
				row{label: "same: CPU time of the " + server + " server", unit: "server-cpu-s/converge", bench: b})
		} else {
			rows = append(rows,
				row{label: "same: CPU time of the benchmark process (controller, client and the " + server + " member)",
					unit: "cpu-s/converge", bench: b})
		}
	}
	return table{name: name, columns: []string{"tend"}, rows: rows}
}

// each names the workqueue benchmark pattern for tend, client-go and
// controller-runtime, as the bench package names them.
func each(pattern string) []string {
	return []string{
		fmt.Sprintf(pattern, "tend"),
		fmt.Sprintf(pattern, "clientgo"),
		fmt.Sprintf(pattern, "controllerruntime"),
	}
}
