package main

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tendhq/tend/oncall"
	"github.com/tendhq/tend/statemachine"
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
	return o.completeArgs(nil)(cmd, args, prefix)
}

// argOf returns the words a command's third argument may be, for a
// document of a kind with machine m.
type argOf func(m *statemachine.Machine[string, string], obj oncall.View) []string

// completeArgs completes KIND, KEY and, with third, the argument after
// them.
func (o *options) completeArgs(third argOf) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
		return o.complete(cmd, args, prefix, third)
	}
}

func (o *options) complete(cmd *cobra.Command, args []string, prefix string, third argOf) ([]string, cobra.ShellCompDirective) {
	none := cobra.ShellCompDirectiveNoFileComp
	if len(args) > 2 || len(args) == 2 && third == nil {
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
	if len(args) == 2 {
		_, m, err := c.registration(args[0])
		if err != nil {
			return nil, none
		}
		obj, err := c.client.Get(ctx, args[0], args[1])
		if err != nil {
			return nil, none
		}
		return withPrefix(third(m, obj), prefix), none
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

// stepsOf offers the step that failed, or else every step of the machine.
func stepsOf(m *statemachine.Machine[string, string], obj oncall.View) []string {
	if s, ok := obj.FailedStep(m); ok {
		return []string{s}
	}
	return m.Steps()
}

// restingPhases offers the phases a move may go to.
func restingPhases(m *statemachine.Machine[string, string], _ oncall.View) []string {
	var out []string
	for _, p := range m.Phases() {
		if s, _ := m.Spec(p); s.Type == statemachine.Resting || s.Type == statemachine.Terminal {
			out = append(out, p)
		}
	}
	return out
}

// requestsOf offers the machine's requests.
func requestsOf(m *statemachine.Machine[string, string], _ oncall.View) []string {
	return m.Requests()
}

// finalizersOf offers the document's finalizers.
func finalizersOf(_ *statemachine.Machine[string, string], obj oncall.View) []string {
	return obj.Meta.Finalizers
}
