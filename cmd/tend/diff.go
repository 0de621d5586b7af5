package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tendhq/tend/oncall"
	"github.com/tendhq/tend/statemachine"
)

func newMachineDiff(o *options) *cobra.Command {
	output := formatTable
	cmd := &cobra.Command{
		Use:   "diff KIND FILE",
		Short: "Show what a new version of a kind's machine changes, and which documents it would strand",
		Long: `diff compares the machine in FILE (a JSON descriptor, as tend machine KIND
--format json writes it and as a new version's statemachine.Machine.Descriptor
encodes it) with the machine recorded for KIND, and checks it against every
document of KIND the store holds, before anything is deployed: what changed,
how many documents the new machine carries on (their controllers write each
at its next reconcile), and which it would strand, with why. A Manager
refuses to run a kind whose new machine would strand documents.

It exits with 4 when documents would be stranded, 0 otherwise.`,
		Example: `  tend machine diff Gateway gateway-v2.json
  tend machine diff Gateway gateway-v2.json -o json`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: o.completeKind,
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(output); err != nil {
				return err
			}
			data, err := os.ReadFile(args[1])
			if err != nil {
				return err
			}
			next, err := statemachine.ParseDescriptor(data)
			if err != nil {
				return usagef("%s: %v", args[1], err)
			}
			c, err := o.connect(cmd.Context())
			if err != nil {
				return err
			}
			defer c.close()
			diff, err := c.client.DiffMachine(cmd.Context(), args[0], next.Descriptor())
			if err != nil {
				return err
			}
			if output == formatTable {
				err = writeDiff(o.out, diff)
			} else {
				err = writeData(o.out, output, diff)
			}
			if err != nil {
				return err
			}
			if diff.Stranded != nil {
				return &codedError{code: exitRefused}
			}
			return nil
		}),
	}
	cmd.Flags().StringVarP(&output, "output", "o", formatTable, "output format: table, json or yaml")
	return cmd
}

// writeDiff writes diff for a person to read.
func writeDiff(w io.Writer, diff oncall.MachineDiff) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: version %d (%s) → version %d (%s)\n", diff.Kind,
		diff.Recorded.Version, short(diff.Recorded.Digest), diff.Next.Version, short(diff.Next.Digest))
	if len(diff.Changes) == 0 {
		b.WriteString("Changes: none\n")
	} else {
		b.WriteString("Changes:\n")
		for _, c := range diff.Changes {
			fmt.Fprintf(&b, "  %s\n", c)
		}
	}
	stranded := 0
	if diff.Stranded != nil {
		stranded = diff.Stranded.Total
	}
	fmt.Fprintf(&b, "Documents: %d; carried on at their next reconcile: %d; stranded: %d\n", diff.Documents, diff.Carried, stranded)
	if s := diff.Stranded; s != nil {
		fmt.Fprintf(&b, "Stranded (%d of %d listed):\n", len(s.Documents), s.Total)
		t := newTable(&b, "  KEY", "STATE", "PHASE", "OPERATION", "STEP", "WHY")
		for _, d := range s.Documents {
			t.row("  "+d.Key, d.State, d.Phase, d.Operation, d.Step, strings.Join(d.Reasons, "; "))
		}
		if err := t.flush(); err != nil {
			return err
		}
		b.WriteString("Declare how to carry them in the new machine's Migrations (see docs/howto-evolve-a-machine.md).\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// short returns the first characters of a digest.
func short(digest string) string {
	d := strings.TrimPrefix(digest, "sha256:")
	if len(d) > 12 {
		d = d[:12]
	}
	return d
}
