package main

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tendhq/tend/store"
)

// completeKind completes the first argument with the registered kinds.
func (o *options) completeKind(cmd *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return o.completeKindKey(cmd, args, prefix)
}

// completeKindKey completes a KIND then a KEY argument from the store;
// without a store, it offers nothing.
func (o *options) completeKindKey(cmd *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
	none := cobra.ShellCompDirectiveNoFileComp
	if len(args) > 1 {
		return nil, none
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), 5*time.Second)
	defer cancel()
	c, err := o.connect(ctx)
	if err != nil {
		return nil, none
	}
	defer c.close()
	if len(args) == 0 {
		return withPrefix(c.kinds, prefix), none
	}
	objs, err := c.client.List(ctx, args[0], store.ListOptions{})
	if err != nil {
		return nil, none
	}
	keys := make([]string, len(objs))
	for i, obj := range objs {
		keys[i] = obj.Meta.Key
	}
	return withPrefix(keys, prefix), none
}

// withPrefix returns the words that begin with prefix.
func withPrefix(words []string, prefix string) []string {
	var out []string
	for _, w := range words {
		if strings.HasPrefix(w, prefix) {
			out = append(out, w)
		}
	}
	return out
}
