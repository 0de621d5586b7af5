package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tendhq/tend/oncall"
	"github.com/tendhq/tend/store"
)

// errBulkRefused is returned when a bulk action was refused for at least
// one document.
var errBulkRefused = errors.New("refused for some documents")

// previewRows is how many documents a bulk action's preview shows.
const previewRows = 10

// selection holds the flags that turn an action on one document into a
// bulk action on every document they select.
type selection struct {
	selector string
	phases   []string
	stuck    bool
	all      bool
	dryRun   bool
	rate     string
	parallel int
}

// selectionFlags adds the flags of a bulk action to cmd.
func (s *selection) flags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVarP(&s.selector, "selector", "l", "", "act on every document of KIND whose labels match (team=a,tier in (1,2))")
	f.StringSliceVar(&s.phases, "phase", nil, "act on every document of KIND in these phases")
	f.BoolVar(&s.stuck, "stuck", false, "act on every document of KIND that tend stuck lists")
	f.BoolVar(&s.all, "all", false, "act on every document of KIND")
	f.BoolVar(&s.dryRun, "dry-run", false, "with a selection: show how many documents it selects, and the first ones, and act on none")
	f.StringVar(&s.rate, "rate", "", "with a selection: at most this many documents a second or a minute (10/s, 100/m); default as fast as the store takes them")
	f.IntVar(&s.parallel, "parallel", 4, "with a selection: how many documents are acted on at a time")
}

// selecting reports whether a selection flag was given.
func (s *selection) selecting() bool {
	return s.selector != "" || len(s.phases) > 0 || s.stuck || s.all
}

// args returns the check of a command's arguments: n with a KEY, or n-1
// with a selection instead.
func (s *selection) args(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		want := n
		if s.selecting() {
			want = n - 1
		}
		if len(args) != want {
			return fmt.Errorf("want tend %s, or the same without KEY with -l, --phase, --stuck or --all: got %d arguments", cmd.Use, len(args))
		}
		if !s.selecting() && (s.dryRun || s.rate != "") {
			return errors.New("--dry-run and --rate go with a selection: -l, --phase, --stuck or --all")
		}
		return nil
	}
}

// parseRate reads --rate: N/s or N/m.
func parseRate(s string) (oncall.Rate, error) {
	if s == "" {
		return oncall.Rate{}, nil
	}
	n, per, ok := strings.Cut(s, "/")
	count, err := strconv.Atoi(n)
	if !ok || err != nil || count < 1 {
		return oncall.Rate{}, usagef("--rate %q: want N/s or N/m, N at least 1", s)
	}
	switch per {
	case "s":
		return oncall.Rate{N: count, Per: time.Second}, nil
	case "m":
		return oncall.Rate{N: count, Per: time.Minute}, nil
	}
	return oncall.Rate{}, usagef("--rate %q: want N/s or N/m", s)
}

// bulk previews the documents of kind the selection selects, asks for
// confirmation, acts on them with act, and writes each one's outcome and a
// summary.
func (a *action) bulk(ctx context.Context, kind, what string, act oncall.Action) error {
	s := a.sel
	if a.wait {
		return usagef("--wait waits for one document's command: it does not go with a selection")
	}
	rate, err := parseRate(s.rate)
	if err != nil {
		return err
	}
	labels, err := store.ParseSelector(s.selector)
	if err != nil {
		return usagef("-l %q: %v", s.selector, err)
	}
	c, err := a.connect(ctx)
	if err != nil {
		return err
	}
	defer c.close()
	if _, _, err := c.registration(kind); err != nil {
		return err
	}
	if err := a.checkSnapshot(ctx, c, kind); err != nil {
		return err
	}
	sel := oncall.Selection{Kind: kind, Selector: labels, Phases: s.phases, Stuck: s.stuck, All: s.all}
	views, err := c.client.Select(ctx, sel)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.out, "%d %s documents selected\n", len(views), kind)
	if len(views) > 0 {
		t := newTable(a.out, "KEY", "STATE", "PHASE")
		for _, v := range views[:min(len(views), previewRows)] {
			t.row(v.Meta.Key, v.State, phaseCell(v))
		}
		if err := t.flush(); err != nil {
			return err
		}
		if more := len(views) - previewRows; more > 0 {
			fmt.Fprintf(a.out, "… and %d more\n", more)
		}
	}
	if s.dryRun || len(views) == 0 {
		return nil
	}
	if err := a.confirm(fmt.Sprintf("%s %d %s documents, at %s", what, len(views), kind, rate)); err != nil {
		return err
	}
	res, err := c.client.Bulk(ctx, oncall.Bulk{Selection: sel, Action: act, Rate: rate, Parallel: s.parallel, Preview: oncall.PreviewOf(views)})
	if err != nil && len(res.Outcomes) == 0 {
		return err
	}
	if c.save != nil {
		if serr := c.save(); serr != nil {
			return errors.Join(err, serr)
		}
	}
	refused := res.Refused()
	for _, o := range res.Outcomes {
		switch {
		case o.Err != nil:
			fmt.Fprintf(a.out, "%s %s: %s refused: %v\n", kind, o.Key, a.verb, o.Err)
		case o.Command != "":
			fmt.Fprintf(a.out, "%s %s: %s issued as command %s\n", kind, o.Key, a.verb, o.Command)
		default:
			fmt.Fprintf(a.out, "%s %s: %s done\n", kind, o.Key, a.verb)
		}
	}
	for _, l := range []struct {
		what string
		keys []string
	}{
		{"changed since the preview (acted on)", res.Changed},
		{"no longer selected (left alone)", res.Gone},
		{"selected since the preview (left alone)", res.Added},
	} {
		if len(l.keys) > 0 {
			fmt.Fprintf(a.out, "%s: %s\n", l.what, strings.Join(l.keys, ", "))
		}
	}
	fmt.Fprintf(a.out, "%s: %d done, %d refused, of %d selected\n", a.verb, len(res.Outcomes)-refused, refused, len(views))
	if err != nil {
		return err // interrupted: the outcomes above are those reached
	}
	if refused > 0 {
		return fmt.Errorf("%s %w", a.verb, errBulkRefused)
	}
	return nil
}
