package main

import (
	"cmp"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"

	"github.com/tendhq/tend/examples/gateway/platform"
)

// checkListen checks the address of -listen: a host (a name or an IP
// address, empty for every interface) and a port.
func checkListen(addr string) error {
	if addr == "" {
		return nil
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("-listen %q: %w (want host:port, such as 127.0.0.1:8080)", addr, err)
	}
	return nil
}

// summary returns a line of how many gateways are in each phase, in the
// machine's order, and the failures so far: gateways holding a failure
// (given up, in the Fault phase or deleted from it) and failed step runs.
func summary(gws []*platform.Gateway, stats platform.Stats) string {
	count := map[platform.GatewayPhase]int{}
	failed := 0
	for _, gw := range gws {
		count[cmp.Or(gw.Status.Phase, platform.GatewayCreating)]++
		if gw.Status.Failure != nil {
			failed++
		}
	}
	var phases []string
	for _, ps := range platform.GatewayDefinition().Phases {
		if n := count[ps.Phase]; n > 0 {
			phases = append(phases, fmt.Sprintf("%s %d", ps.Phase, n))
			delete(count, ps.Phase)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(count)) {
		phases = append(phases, fmt.Sprintf("%s %d", p, count[p]))
	}
	if len(phases) == 0 {
		phases = []string{"no gateways"}
	}
	return fmt.Sprintf("phases: %s | failures: %d gateways holding one, %d step runs failed", strings.Join(phases, ", "), failed, stats.Retried)
}
