package main

import (
	"github.com/spf13/cobra"

	"github.com/tendhq/tend/store"
)

func newStuck(o *options) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "stuck [KIND]",
		Short: "List the documents that need a person: past deadline, failing, refused, paused, in Fault",
		Long: `stuck lists the documents of every registered kind (or of KIND) that are
paused, failing a step, refusing their intent, in Fault, or in a phase past its
deadline, with the reasons.

It exits with code 5 when it lists any, and 0 when nothing is stuck, so a
script or a probe can run it:

  tend stuck >/dev/null || page-someone`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: o.completeKind,
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(output); err != nil {
				return err
			}
			ctx := cmd.Context()
			c, err := o.connect(ctx)
			if err != nil {
				return err
			}
			defer c.close()
			kinds := c.kinds
			if len(args) == 1 {
				kinds = args[:1]
			}
			type stuckDoc struct {
				Kind    string   `json:"kind"`
				Key     string   `json:"key"`
				State   string   `json:"state"`
				Phase   string   `json:"phase"`
				Reasons []string `json:"reasons"`
			}
			found := []stuckDoc{}
			now := o.now()
			for _, kind := range kinds {
				_, m, err := c.registration(kind)
				if err != nil {
					return err
				}
				objs, err := c.client.List(ctx, kind, store.ListOptions{})
				if err != nil {
					return err
				}
				for _, obj := range objs {
					if reasons := obj.Stuck(m, now); len(reasons) > 0 {
						found = append(found, stuckDoc{kind, obj.Meta.Key, obj.State, obj.Phase, reasons})
					}
				}
			}
			if output != formatTable {
				err = writeData(o.out, output, found)
			} else if len(found) == 0 {
				_, err = o.out.Write([]byte("Nothing is stuck.\n"))
			} else {
				t := newTable(o.out, "KIND", "KEY", "STATE", "PHASE", "REASON")
				for _, s := range found {
					for _, r := range s.Reasons {
						t.row(s.Kind, s.Key, s.State, s.Phase, oneLine(r, 100))
					}
				}
				err = t.flush()
			}
			if err != nil {
				return err
			}
			if len(found) > 0 {
				return &codedError{code: exitStuck}
			}
			return nil
		}),
	}
	cmd.Flags().StringVarP(&output, "output", "o", formatTable, "output format: table, json or yaml")
	return cmd
}
