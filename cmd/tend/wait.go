package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/tendhq/tend/oncall"
	"github.com/tendhq/tend/statemachine"
)

func newWait(o *options) *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "wait KIND KEY",
		Short: "Wait until a document has settled at its intent, is held in Fault, refused or removed",
		Long: `wait waits until the controller of the document has observed its spec as it
is now and settled it at its intent (exit 0), and tells when it cannot: the
document is held in Fault (exit 5, with the failure), its intent is refused
(exit 4, with the reason), or it is removed (exit 3). After --timeout it exits
with code 1.

  tend wait Gateway team-a/gw-1 --timeout 10m && run-the-next-step`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: o.completeKindKey,
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			kind, key := args[0], args[1]
			c, err := o.connect(cmd.Context())
			if err != nil {
				return err
			}
			defer c.close()
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			v, err := c.client.Await(ctx, kind, key, 0)
			switch {
			case err == nil:
				_, err = fmt.Fprintf(o.out, "%s %s: settled: state %s, phase %s\n", kind, key, v.State, v.Phase)
				return err
			case errors.Is(err, context.DeadlineExceeded) && cmd.Context().Err() == nil:
				return fmt.Errorf("%s %s did not settle within %v", kind, key, timeout)
			case errors.Is(err, statemachine.ErrHeldInFault):
				return &codedError{exitStuck, err}
			case errors.Is(err, statemachine.ErrIntentRefused):
				return &codedError{exitRefused, err}
			case errors.Is(err, oncall.ErrRemoved):
				return &codedError{exitNotFound, err}
			}
			return err
		}),
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "how long to wait")
	return cmd
}
