// Command workspace runs the cloud-workspace data plane of the reference
// example on the embedded default — the in-memory store, containers as local
// processes, volumes and object storage as directories — through a scripted
// scenario: create, start, write a file into the home, stop, archive,
// restore, check that the file survived, delete, and collect the orphan
// archives. It shows each workspace's phase and operation as they change and
// exits non-zero if the scenario fails.
//
//	go run ./examples/workspace
//
// See README.md beside this file.
package main

//go:generate go test -run ^TestREADMEDiagram$ -update .

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/tendhq/tend/examples/workspace/local"
)

func main() {
	local.ServeIfContainer() // a container of the scenario: serve and never return
	keep := flag.Bool("keep", false, "keep the scenario's directory (volumes, archives) for inspection")
	timeout := flag.Duration("timeout", 50*time.Second, "give up if the scenario has not finished by then")
	flag.Parse()

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, *timeout)
	defer cancelTimeout()

	dir, err := os.MkdirTemp("", "tend-workspace-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "workspace:", err)
		os.Exit(1)
	}
	if *keep {
		fmt.Println("scenario directory:", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	start := time.Now()
	if err := run(ctx, dir, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "workspace: scenario failed:", err)
		cancel()
		if !*keep {
			os.RemoveAll(dir)
		}
		os.Exit(1)
	}
	fmt.Printf("\nscenario passed in %v\n", time.Since(start).Round(time.Millisecond))
}
