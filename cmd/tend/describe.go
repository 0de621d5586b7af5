package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tendhq/tend/history"
	"github.com/tendhq/tend/oncall"
	"github.com/tendhq/tend/statemachine"
)

func newDescribe(o *options) *cobra.Command {
	var managerURL string
	cmd := &cobra.Command{
		Use:   "describe KIND KEY",
		Short: "Show a document in full: status, operation, failure, its place in the machine, history",
		Long: `describe shows a document for a person on call: its metadata, State and
Phase, the operation in flight with its checkpoint, the failure that moved it
to Fault, its conditions, an operator's hold and pending commands, where it
stands in its machine (the phase's steps, done ones marked, and the phase's
exits) and its history, oldest first. With --manager, the URL of a
manager's handler, it adds the last reconciles that manager ran of the
document: when, why (their triggers), how they ended and how long they took.`,
		Example: `  tend describe Gateway team-a/gw-1
  tend describe Gateway team-a/gw-1 --manager http://gateways:8080`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: o.completeKindKey,
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, err := o.connect(ctx)
			if err != nil {
				return err
			}
			defer c.close()
			_, m, err := c.registration(args[0])
			if err != nil {
				return err
			}
			obj, err := c.client.Get(ctx, args[0], args[1])
			if err != nil {
				return err
			}
			hist, err := c.client.History(ctx, args[0], args[1])
			if err != nil {
				return err
			}
			if err := describe(o.out, o.now(), obj, m, hist); err != nil || managerURL == "" {
				return err
			}
			rs, err := lastReconciles(ctx, managerURL, args[0], args[1])
			if err != nil {
				return err
			}
			return describeReconciles(o.out, o.now(), rs)
		}),
	}
	cmd.Flags().StringVar(&managerURL, "manager", "", "the URL of a manager's handler, to show its last reconciles of the document")
	return cmd
}

// describe writes obj for a person.
func describe(w io.Writer, now time.Time, obj oncall.View, m *statemachine.Machine[string, string], hist []history.Entry) error {
	d := &describer{w: w, now: now}
	meta := obj.Meta
	d.field("Kind", meta.Kind)
	d.field("Key", meta.Key)
	d.field("UID", meta.UID)
	d.field("Revision", fmt.Sprint(meta.Revision))
	d.field("Generation", fmt.Sprint(meta.Generation))
	d.field("Created", when(now, meta.CreatedAt))
	d.field("Updated", when(now, meta.UpdatedAt))
	if meta.Terminating() {
		d.field("Deleting", "requested "+when(now, meta.DeletionRequestedAt))
	}
	if len(meta.Labels) > 0 {
		var ls []string
		for _, k := range slices.Sorted(maps.Keys(meta.Labels)) {
			ls = append(ls, k+"="+meta.Labels[k])
		}
		d.field("Labels", strings.Join(ls, ","))
	}
	if len(meta.Finalizers) > 0 {
		d.field("Finalizers", strings.Join(meta.Finalizers, ", "))
	}
	for _, o := range meta.Owners {
		d.field("Owner", o.Kind+" "+o.Key)
	}
	d.field("State", obj.State)
	spec, known := m.Spec(obj.Phase)
	kind := "unknown to the machine"
	if known {
		kind = spec.Type.String()
	}
	d.field("Phase", fmt.Sprintf("%s (%s), since %s", obj.Phase, kind, when(now, obj.Since)))
	if p := obj.Paused; p != nil {
		d.field("Paused", fmt.Sprintf("by %s at %s: %s", p.By, when(now, p.At), p.Reason))
	}
	if r := obj.Refused; r != nil {
		d.field("Refused", fmt.Sprintf("intent %s: %s", r.Intent, r.Reason))
	}
	if op := obj.Operation; op != nil {
		d.section("Operation")
		d.item("ID", op.ID)
		d.item("Phase", fmt.Sprintf("%s, from %s", op.Phase, op.From))
		d.item("Trigger", op.Trigger)
		d.item("Done", strings.Join(op.Done, ", "))
		if op.Attempts > 0 {
			d.item("Attempts", fmt.Sprint(op.Attempts))
		}
		d.item("Last error", op.LastError)
		d.item("Class", op.ErrorClass)
		if !op.RetryAt.IsZero() {
			d.item("Retry at", op.RetryAt.UTC().Format(time.RFC3339))
		}
		if op.Request != "" {
			d.item("Request", op.Request+" "+strings.Join(op.Tokens, ","))
		}
	}
	if f := obj.Failure; f != nil {
		d.section("Failure")
		d.item("Operation", fmt.Sprintf("%s (%s, from %s)", f.Operation.ID, f.Operation.Phase, f.Operation.From))
		d.item("Step", f.Step)
		d.item("Cause", string(f.Cause))
		d.item("Reason", f.Reason)
		d.item("At", when(now, f.At))
		d.item("Done", strings.Join(f.Operation.Done, ", "))
	}
	if len(obj.Conditions) > 0 {
		d.section("Conditions")
		t := newTable(w, "  NAME", "STATUS", "REASON", "SINCE", "OBSERVED")
		for _, c := range obj.Conditions {
			t.row("  "+c.Name, fmt.Sprint(c.Status), c.Reason, age(now, c.LastTransition), observed(now, c, obj.Since))
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	if len(obj.Commands) > 0 {
		d.section("Pending commands")
		t := newTable(w, "  ID", "VERB", "ARGUMENT", "BY", "AGE")
		for _, c := range obj.Commands {
			t.row("  "+c.ID, string(c.Verb), c.Step+c.Phase+c.Request, c.By, age(now, c.At))
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	d.section("Machine " + m.Name())
	if known {
		d.place(m, spec, obj)
	} else {
		d.line("  the phase %q is not one of the machine's", obj.Phase)
	}
	d.section("History")
	if len(hist) == 0 {
		d.line("  none recorded")
	}
	for _, e := range hist {
		d.line("  %s", e)
	}
	return d.err
}

// describer writes the sections of describe.
type describer struct {
	w   io.Writer
	now time.Time
	err error
}

func (d *describer) line(format string, args ...any) {
	if d.err == nil {
		_, d.err = fmt.Fprintf(d.w, format+"\n", args...)
	}
}

func (d *describer) field(name, value string) {
	if value != "" {
		d.line("%-12s%s", name+":", value)
	}
}

func (d *describer) section(name string) { d.line("%s:", name) }

func (d *describer) item(name, value string) {
	if value != "" {
		d.line("  %-12s%s", name+":", value)
	}
}

// place writes where obj stands in its machine: the steps of its phase,
// done ones marked and the next one pointed at, and the ways out of it.
func (d *describer) place(m *statemachine.Machine[string, string], spec statemachine.PhaseSpec[string], obj oncall.View) {
	if len(spec.Steps) > 0 {
		d.line("  Steps of %s:", spec.Phase)
		var done []string
		if obj.Operation != nil && obj.Operation.Phase == spec.Phase {
			done = obj.Operation.Done
		} else if obj.Failure != nil && obj.Failure.Operation.Phase == spec.Phase {
			done = obj.Failure.Operation.Done
		}
		next := true
		for _, s := range spec.Steps {
			switch {
			case slices.Contains(done, s):
				d.line("    [x] %s", s)
			case next:
				next = false
				d.line("    [ ] %s  <- next", s)
			default:
				d.line("    [ ] %s", s)
			}
		}
	}
	exits := exitsOf(m, spec)
	if len(exits) == 0 {
		d.line("  No exits from %s.", spec.Phase)
		return
	}
	d.line("  Exits from %s:", spec.Phase)
	for _, e := range exits {
		d.line("    %s", e)
	}
}

// exitsOf lists the ways out of a phase, as its machine declares them.
func exitsOf(m *statemachine.Machine[string, string], spec statemachine.PhaseSpec[string]) []string {
	def := m.Definition()
	p := spec.Phase
	var out []string
	if spec.Type == statemachine.Transitional {
		var reqs []string
		for _, r := range spec.Completion {
			reqs = append(reqs, r.String())
		}
		cond := "when its steps are done"
		if len(reqs) > 0 {
			cond += " and " + strings.Join(reqs, ", ")
		}
		if spec.Then != "" {
			out = append(out, fmt.Sprintf("-> %s %s", spec.Then, cond))
		}
		if spec.FailTo != "" {
			out = append(out, fmt.Sprintf("-> %s on failure (deadline %v, %d attempts)", spec.FailTo, spec.Bounds.Deadline, spec.Bounds.MaxAttempts))
		}
	}
	for _, r := range def.Rules {
		if r.Phase == p {
			out = append(out, fmt.Sprintf("-> %s for intent %s", r.Begin, r.State))
		}
	}
	for _, a := range def.Aborts {
		if a.Phase == p {
			out = append(out, fmt.Sprintf("-> %s aborting, for intent %s", a.To, a.State))
		}
	}
	for _, r := range def.Requests {
		for _, e := range r.Serve {
			if e.From == p {
				out = append(out, fmt.Sprintf("-> %s on request %s", e.To, r.Name))
			}
		}
	}
	for _, t := range def.Timers {
		if t.Phase == p {
			out = append(out, fmt.Sprintf("-> %s on timer %s", t.Begin, t.Name))
		}
	}
	if spec.Type == statemachine.Fault {
		var to []string
		for _, q := range m.Phases() {
			if qs, _ := m.Spec(q); qs.Type != statemachine.Transitional && qs.Type != statemachine.Fault {
				to = append(to, q)
			}
		}
		out = append(out, fmt.Sprintf("-> %s by tend move; tend retry or tend skip STEP resume the failed operation", strings.Join(to, ", ")))
	}
	if spec.Repair != "" {
		out = append(out, fmt.Sprintf("-> %s when its health fails", spec.Repair))
	}
	return out
}

// observed says in which phase and how long ago c was last observed, and
// whether that phase is over (the document's phase began at since).
func observed(now time.Time, c statemachine.Condition, since time.Time) string {
	if c.Phase == "" {
		return "-"
	}
	out := "in " + c.Phase + ", " + age(now, c.ObservedAt) + " ago"
	if c.Stale(since) {
		out += " (stale)"
	}
	return out
}
