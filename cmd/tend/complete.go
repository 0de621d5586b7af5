package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/tendhq/tend/store"
)

// completeKind completes the first argument with the registered kinds.
func (o *options) completeKind(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return o.completeKindKey(cmd, args, "")
}

// completeKindKey completes a KIND then a KEY argument from the store;
// without a store, it offers nothing.
func (o *options) completeKindKey(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
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
		return c.kinds, none
	}
	objs, err := c.client.List(ctx, args[0], store.ListOptions{})
	if err != nil {
		return nil, none
	}
	keys := make([]string, len(objs))
	for i, obj := range objs {
		keys[i] = obj.Meta.Key
	}
	return keys, none
}
