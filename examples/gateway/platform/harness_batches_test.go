//go:build !race

package platform

// harnessBatches runs the gateway driver's property test this many times,
// each with rapid's number of checks (100 by default): 1,000 runs.
const harnessBatches = 10
