// Package bench compares tend's workqueue with client-go's typed workqueue and
// controller-runtime's priority queue: the same benchmarks run against all
// three in one go test -bench run, and a conformance test runs one scenario
// table against tend's queue and client-go's and checks that they agree
// except where tend differs on purpose.
//
// The package holds only tests; see README.md for how to run them and
// ../docs/benchmarks.md for the figures.
package bench
