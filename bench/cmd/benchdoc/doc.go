// Command benchdoc turns the raw benchmark output committed in bench/results
// into the tables of docs/benchmarks.md, so that the figures there are
// regenerated from recorded runs and never typed by hand.
//
// # Raw results
//
// Each table is read from one file, bench/results/NAME.txt: the unedited
// output of go test -bench with -count N, recorded by results/record.sh,
// which heads it with two comment lines, "# command: ..." (the exact command)
// and "# machine: ..." (cores, load and Go version). The goos, goarch and cpu
// lines of go test complete the description of the machine.
//
// # Tables
//
// Every figure is the median of the N runs of one benchmark. A row compares
// one measurement across implementations (tend first); the ratio columns give
// how many times better tend is than each other implementation in that same
// run, and the target and met columns come from the checks declared with the
// row in tables.go, so whether a target is met is computed from the figures.
//
// # Markers
//
// Each table replaces the text between "<!-- BEGIN generated: NAME -->" and
// "<!-- END generated: NAME -->" in docs/benchmarks.md; the prose around the
// markers is left alone. Regenerate with
//
//	cd bench && go generate ./cmd/benchdoc
//
// The package's test fails when a generated section differs from what the
// committed raw files produce.
package main
