package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newMachine(o *options) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "machine KIND",
		Short: "Draw the machine a kind's controllers registered",
		Long: `machine writes the machine of KIND, as its controllers registered it, as a
Mermaid state diagram (the default), a Graphviz DOT digraph, or the JSON
descriptor the controllers recorded.`,
		Example: `  tend machine Gateway > gateway.mmd
  tend machine Gateway --format dot | dot -Tsvg > gateway.svg`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.completeKind,
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			if format != "mermaid" && format != "dot" && format != "json" {
				return usagef("--format %q: want mermaid, dot or json", format)
			}
			ctx := cmd.Context()
			c, err := o.connect(ctx)
			if err != nil {
				return err
			}
			defer c.close()
			r, m, err := c.registration(args[0])
			if err != nil {
				return err
			}
			switch format {
			case "dot":
				_, err = fmt.Fprint(o.out, m.DOT())
			case "json":
				err = writeData(o.out, formatJSON, r.Machine)
			default:
				_, err = fmt.Fprint(o.out, m.Mermaid())
			}
			return err
		}),
	}
	cmd.Flags().StringVar(&format, "format", "mermaid", "mermaid, dot or json")
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions([]string{"mermaid", "dot", "json"}, cobra.ShellCompDirectiveNoFileComp))
	cmd.AddCommand(newMachineDiff(o))
	return cmd
}
