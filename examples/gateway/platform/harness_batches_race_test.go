//go:build race

package platform

// harnessBatches is the number of batches of the gateway driver's property
// test under the race detector: 200 runs, which find the data races the
// full 1,000 would, in a fifth of the time.
const harnessBatches = 2
