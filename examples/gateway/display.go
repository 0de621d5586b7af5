package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/tendhq/tend/examples/gateway/platform"
	sm "github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// display draws the table of every gateway and its runtime domain: State,
// Phase and the step in flight, with what each still owns.
type display struct {
	p     *platform.Platform
	w     *world
	gm    *sm.Machine[platform.GatewayState, platform.GatewayPhase]
	out   io.Writer
	tty   bool
	start time.Time

	mu     sync.Mutex // guards events and drawing
	events []string
}

// say records a line of the script's narration, shown under the table.
func (d *display) say(format string, args ...any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	line := fmt.Sprintf("%6.2fs  %s", time.Since(d.start).Seconds(), fmt.Sprintf(format, args...))
	d.events = append(d.events, line)
	if !d.tty {
		fmt.Fprintln(d.out, line)
	}
}

func (d *display) loop(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			d.draw(ctx, "")
		}
	}
}

// draw renders the table; on a terminal it redraws in place.
func (d *display) draw(ctx context.Context, title string) {
	var b strings.Builder
	if err := d.table(ctx, &b); err != nil {
		if errors.Is(err, context.Canceled) {
			return
		}
		fmt.Fprintf(&b, "reading the store: %v\n", err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.tty {
		fmt.Fprint(d.out, "\x1b[H\x1b[2J")
		b.WriteString("\n")
		for _, e := range d.events[max(0, len(d.events)-8):] {
			b.WriteString(e + "\n")
		}
	} else if title == "" {
		title = "snapshot"
	}
	if title != "" && !d.tty {
		fmt.Fprintf(d.out, "--- %s at %.2fs\n", title, time.Since(d.start).Seconds())
	}
	fmt.Fprint(d.out, b.String())
}

func (d *display) table(ctx context.Context, out io.Writer) error {
	docs := d.p.Collections()
	gws, _, err := docs.Gateways.List(ctx, store.ListOptions{})
	if err != nil {
		return err
	}
	domains, _, err := docs.Domains.List(ctx, store.ListOptions{})
	if err != nil {
		return err
	}
	domainOf := map[string]*platform.Domain{}
	for _, dm := range domains {
		domainOf[dm.Spec.Gateway] = dm
	}
	resources, err := d.w.resources(ctx)
	if err != nil {
		return err
	}
	owned := map[string]int{}
	for _, r := range resources {
		owned[r.Labels[platform.LabelGateway]]++
	}
	stats, sims := d.p.Stats(), d.w.sim.Stats()
	simulated := "infra"
	if d.w.kube != nil {
		simulated = "database" // the cluster is real
	}
	fmt.Fprintf(out, "tend gateway demo  %.1fs  steps run %d, retried %d  %s calls %d, injected failures %d\n",
		time.Since(d.start).Seconds(), stats.Steps, stats.Retried, simulated, sims.Calls, sims.Failures)
	fmt.Fprintf(out, "%s\n\n", summary(gws, stats))
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "GATEWAY\tSTATE\tPHASE\tSTEP\tDOMAIN\tRESOURCES\tLAST ERROR")
	for _, gw := range gws {
		dom := "-"
		if dm := domainOf[gw.Key]; dm != nil {
			dom = fmt.Sprintf("%s/%s", dm.Spec.State, cmpOr(string(dm.Status.Phase), "Creating"))
			if op := dm.Status.Operation; op != nil {
				dom += " " + nextStep(op.Done, d.stepsOfDomain(dm.Status.Phase))
			}
		}
		step, lastErr := "", ""
		if op := gw.Status.Operation; op != nil {
			ps, _ := d.gm.Spec(op.Phase)
			step = fmt.Sprintf("%d/%d %s", min(len(op.Done)+1, len(ps.Steps)), len(ps.Steps), nextStep(op.Done, ps.Steps))
			if op.Attempts > 0 {
				lastErr = fmt.Sprintf("#%d %s", op.Attempts, truncate(op.LastError, 60))
			}
		}
		phase := cmpOr(string(gw.Status.Phase), "-")
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", gw.Key, gw.Spec.State, phase, step, dom, owned[gw.Key], lastErr)
	}
	return w.Flush()
}

func (d *display) stepsOfDomain(p platform.DomainPhase) []string {
	for _, ps := range platform.DomainDefinition().Phases {
		if ps.Phase == p {
			return ps.Steps
		}
	}
	return nil
}

// nextStep is the first of steps not in done.
func nextStep(done, steps []string) string {
	for _, s := range steps {
		if !slices.Contains(done, s) {
			return s
		}
	}
	return "(completing)"
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
