package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tendhq/tend/oncall"
	"github.com/tendhq/tend/statemachine"
)

// action is what every command that changes a document shares.
type action struct {
	*options
	verb  string // as the user typed it
	wait  bool
	force bool
	// sel, when set, makes the command a bulk action (see bulk).
	sel     *selection
	timeout time.Duration
}

// flags adds the flags of an action; commands adds --wait too.
func (a *action) flags(cmd *cobra.Command, commands bool) {
	f := cmd.Flags()
	f.BoolVarP(&a.yes, "yes", "y", false, "act without asking for confirmation")
	force := "act on a memory snapshot even while the process that wrote it runs (it will overwrite what tend writes)"
	if a.verb == "remove-finalizer" {
		force = "remove it even while a controller serves the kind (or runs on the memory snapshot)"
	}
	f.BoolVar(&a.force, "force", false, force)
	if a.sel != nil {
		a.sel.flags(cmd)
	}
	if commands {
		f.BoolVar(&a.wait, "wait", false, "wait until the controller carried the command out or refused it")
		f.DurationVar(&a.timeout, "timeout", 5*time.Minute, "how long --wait waits")
	}
}

// do connects, asks for confirmation of what, runs act and reports.
// act returns the command it issued, if it issued one.
func (a *action) do(ctx context.Context, kind, key, what string, act func(c *conn) (*statemachine.Command, error)) error {
	c, err := a.connect(ctx)
	if err != nil {
		return err
	}
	defer c.close()
	if _, _, err := c.registration(kind); err != nil {
		return err
	}
	if a.wait && !c.shared {
		return usagef("--wait needs a store the controllers share: no controller reads a memory snapshot while tend writes it")
	}
	if err := a.checkSnapshot(ctx, c, kind); err != nil {
		return err
	}
	obj, err := c.client.Get(ctx, kind, key)
	if err != nil {
		return err
	}
	prompt := fmt.Sprintf("%s %s %s (state %s, phase %s)", what, kind, key, obj.State, phaseCell(obj))
	if err := a.confirm(prompt); err != nil {
		return err
	}
	cmd, err := act(c)
	if err != nil {
		return err
	}
	if c.save != nil {
		if err := c.save(); err != nil {
			return err
		}
	}
	if cmd == nil {
		fmt.Fprintf(a.out, "%s %s: %s done\n", kind, key, a.verb)
		return nil
	}
	fmt.Fprintf(a.out, "%s %s: %s issued as command %s\n", kind, key, a.verb, cmd.ID)
	if !a.wait {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	e, err := c.client.Wait(wctx, kind, key, cmd.ID)
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("the controller did not carry out command %s within %v (it may still: it stays in the document's status until then)", cmd.ID, a.timeout)
	}
	if err != nil {
		return fmt.Errorf("waiting for command %s: %w", cmd.ID, err)
	}
	switch e.Outcome {
	case oncall.OutcomeRefused:
		return fmt.Errorf("%w %s: %s", errCommandRefused, cmd.ID, e.Reason)
	case "":
		// The store keeps no history of the kind: the command left the
		// status, and nothing says how.
		fmt.Fprintf(a.out, "%s %s: command %s carried out or refused (the store keeps no history of %s)\n", kind, key, cmd.ID, kind)
	default:
		fmt.Fprintf(a.out, "%s %s: command %s %s\n", kind, key, cmd.ID, e.Outcome)
	}
	return nil
}

// checkSnapshot refuses to act on a memory snapshot whose process still
// serves kind (its presence lease is live), unless --force: that process
// does not read the file, and overwrites it.
func (a *action) checkSnapshot(ctx context.Context, c *conn, kind string) error {
	if c.shared || a.force {
		return nil
	}
	served, err := c.client.Served(ctx, kind)
	if err != nil || !served {
		return err
	}
	return fmt.Errorf("%w: the process that wrote this snapshot serves %s (its presence lease is live): it does not read what tend writes here and will overwrite it; act through the on-call API it serves (--server), or stop it first (--force acts anyway)", errLiveSnapshot, kind)
}

// confirm asks the user to confirm, unless --yes was given; without a
// terminal to ask on, it refuses.
func (a *action) confirm(prompt string) error {
	if a.yes {
		return nil
	}
	if !a.interactive {
		return fmt.Errorf("%w: %s changes the document; run it again with --yes to act without a terminal to confirm on", errNotConfirmed, "tend "+a.verb)
	}
	fmt.Fprintf(a.errOut, "%s? [y/N] ", prompt)
	answer, _ := bufio.NewReader(a.in).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return nil
	}
	return errNotConfirmed
}

func newPause(o *options) *cobra.Command {
	a := &action{options: o, verb: "pause", sel: &selection{}}
	var reason string
	cmd := &cobra.Command{
		Use:   "pause KIND KEY",
		Short: "Hold a document: its controller runs nothing for it until resumed",
		Long: `pause holds a document: its controllers run no step and make no decision for
it until tend resume lifts the hold. The hold, who set it and why are in
status.paused, and the action in the document's history.` + bulkLong,
		Example: `  tend pause Gateway team-a/gw-1 --reason "investigating INC-42" --yes
  tend pause Gateway -l team=a --dry-run
  tend pause Gateway -l team=a --rate 10/s --reason "INC-42" --yes`,
		Args:              a.sel.args(2),
		ValidArgsFunction: o.completeKindKey,
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			if a.sel.selecting() {
				return a.bulk(cmd.Context(), args[0], "Pause", oncall.Action{Name: oncall.ActionPause, Reason: reason})
			}
			return a.do(cmd.Context(), args[0], args[1], "Pause", func(c *conn) (*statemachine.Command, error) {
				return nil, c.client.Pause(cmd.Context(), args[0], args[1], reason)
			})
		}),
	}
	a.flags(cmd, false)
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the other operators")
	return cmd
}

func newResume(o *options) *cobra.Command {
	a := &action{options: o, verb: "resume", sel: &selection{}}
	cmd := &cobra.Command{
		Use:               "resume KIND KEY",
		Short:             "Lift an operator's hold on a document",
		Long:              "resume lifts an operator's hold on a document: its controllers reconcile it at once." + bulkLong,
		Example:           "  tend resume Gateway team-a/gw-1 --yes\n  tend resume Gateway --all --yes",
		Args:              a.sel.args(2),
		ValidArgsFunction: o.completeKindKey,
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			if a.sel.selecting() {
				return a.bulk(cmd.Context(), args[0], "Resume", oncall.Action{Name: oncall.ActionResume})
			}
			return a.do(cmd.Context(), args[0], args[1], "Resume", func(c *conn) (*statemachine.Command, error) {
				return nil, c.client.Resume(cmd.Context(), args[0], args[1])
			})
		}),
	}
	a.flags(cmd, false)
	return cmd
}

// newCommand returns a command that issues a controller command with one
// argument (or none when argName is empty).
func newCommand(o *options, use, argName string, argOf argOf, short, long, what string, issue func(ctx context.Context, c *conn, kind, key, arg string) (statemachine.Command, error)) *cobra.Command {
	a := &action{options: o, verb: use, sel: &selection{}}
	n := 2
	usage := use + " KIND KEY"
	if argName != "" {
		n = 3
		usage += " " + argName
	}
	cmd := &cobra.Command{
		Use:               usage,
		Short:             short,
		Long:              long,
		Args:              a.sel.args(n),
		ValidArgsFunction: o.completeArgs(argOf),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			arg := ""
			w := what
			if a.sel.selecting() {
				if n == 3 {
					arg = args[1]
					w = fmt.Sprintf(what, arg)
				}
				return a.bulk(cmd.Context(), args[0], w, bulkAction(use, arg))
			}
			if n == 3 {
				arg = args[2]
				w = fmt.Sprintf(what, arg)
			}
			return a.do(cmd.Context(), args[0], args[1], w, func(c *conn) (*statemachine.Command, error) {
				command, err := issue(cmd.Context(), c, args[0], args[1], arg)
				if err != nil {
					return nil, err
				}
				return &command, nil
			})
		}),
	}
	a.flags(cmd, true)
	return cmd
}

// bulkAction returns the action of the command verb with its argument.
func bulkAction(verb, arg string) oncall.Action {
	a := oncall.Action{Name: verb}
	switch verb {
	case oncall.ActionSkip:
		a.Step = arg
	case oncall.ActionMove:
		a.Phase = arg
	case oncall.ActionRequest:
		a.Request = arg
	}
	return a
}

const commandLong = `

The command is written into the document's status (status.commands) and
carried out by whichever replica of its controller reconciles it next, which
records the outcome in the document's history; --wait waits for it.` + bulkLong

// bulkLong documents the bulk form of an action.
const bulkLong = `

With -l, --phase, --stuck or --all instead of KEY, the action is taken on
every document of KIND they select: tend shows how many and the first ones
(--dry-run stops there), asks for confirmation, acts at --rate, and writes
each document's outcome, the documents that changed since it showed them,
and a summary; it exits with code 4 when the action was refused for any.`

func newRetry(o *options) *cobra.Command {
	return newCommand(o, "retry", "", nil, "Run a failing step again now, or resume a failed operation from Fault",
		`retry runs the failed step again at once, without waiting for its backoff,
and forgets its failed attempts; in Fault, it begins the failed operation again
from its checkpoint.`+commandLong, "Retry",
		func(ctx context.Context, c *conn, kind, key, _ string) (statemachine.Command, error) {
			return c.client.Retry(ctx, kind, key)
		})
}

func newSkip(o *options) *cobra.Command {
	return newCommand(o, "skip", "STEP", stepsOf, "Count a failed step as done and go on with the next",
		`skip counts the step STEP, the step that failed, as done, and goes on with
the next; in Fault, it resumes the failed operation after it.`+commandLong, "Skip step %s of",
		func(ctx context.Context, c *conn, kind, key, step string) (statemachine.Command, error) {
			return c.client.Skip(ctx, kind, key, step)
		})
}

func newMove(o *options) *cobra.Command {
	return newCommand(o, "move", "PHASE", restingPhases, "Move a document out of Fault into a phase that is not transitional",
		`move leaves Fault for PHASE, a phase of the machine that is not
transitional, when the operator has repaired by hand what the failed
operation left.`+commandLong, "Move to phase %s",
		func(ctx context.Context, c *conn, kind, key, phase string) (statemachine.Command, error) {
			return c.client.Move(ctx, kind, key, phase)
		})
}

func newRequest(o *options) *cobra.Command {
	return newCommand(o, "request", "NAME", requestsOf, "Serve one of the machine's one-shot requests once",
		`request serves the machine's one-shot request NAME once (a restart, a
rotation…), as if the spec carried a new token for it.`+commandLong, "Request %s of",
		func(ctx context.Context, c *conn, kind, key, name string) (statemachine.Command, error) {
			return c.client.Request(ctx, kind, key, name)
		})
}

func newRemoveFinalizer(o *options) *cobra.Command {
	a := &action{options: o, verb: "remove-finalizer"}
	cmd := &cobra.Command{
		Use:   "remove-finalizer KIND KEY NAME",
		Short: "Remove a finalizer from a document, when its controller cannot",
		Long: `remove-finalizer removes the finalizer NAME from a document, so a deleted
document whose controller is gone for good can be removed. While a
controller serves the kind, it refuses (exit code 4) unless --force is
given: the controller would have cleaned up and removed it itself.`,
		Args:              cobra.ExactArgs(3),
		ValidArgsFunction: o.completeArgs(finalizersOf),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			return a.do(cmd.Context(), args[0], args[1], "Remove finalizer "+args[2]+" from", func(c *conn) (*statemachine.Command, error) {
				return nil, c.client.RemoveFinalizer(cmd.Context(), args[0], args[1], args[2], a.force)
			})
		}),
	}
	a.flags(cmd, false)
	return cmd
}
