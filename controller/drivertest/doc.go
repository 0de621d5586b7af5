// Package drivertest property-tests a machine's real
// [github.com/tendhq/tend/controller.Driver]: the user's own steps and
// observers, on an in-memory store, under faults that persist and intents
// that change at the worst moment.
package drivertest
