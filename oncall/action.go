package oncall

import (
	"context"
	"fmt"

	"github.com/tendhq/tend/statemachine"
)

// Verbs of the commands an [Action] issues, beside ActionPause, ActionResume
// and ActionRemoveFinalizer: the statemachine's command verbs.
const (
	ActionRetry   = string(statemachine.VerbRetry)
	ActionSkip    = string(statemachine.VerbSkip)
	ActionMove    = string(statemachine.VerbMove)
	ActionRequest = string(statemachine.VerbRequest)
)

// Action is one of the Client's actions as data, for [Client.Apply], a
// [Bulk] and the [Server]'s wire: Name is one of the Action* names, and the
// other fields are its arguments.
type Action struct {
	Name string `json:"name"`
	// Reason is why (pause).
	Reason string `json:"reason,omitempty"`
	// Step is the step to skip, Phase the phase to move to, Request the
	// request to serve, Finalizer the finalizer to remove.
	Step      string `json:"step,omitempty"`
	Phase     string `json:"phase,omitempty"`
	Request   string `json:"request,omitempty"`
	Finalizer string `json:"finalizer,omitempty"`
	// Force removes a finalizer even while a controller serves the kind.
	Force bool `json:"force,omitempty"`
}

// Check returns an error matching ErrInvalidAction when a names no action
// or lacks the argument its action needs.
func (a Action) Check() error {
	missing := ""
	switch a.Name {
	case ActionPause, ActionResume, ActionRetry:
	case ActionSkip:
		if a.Step == "" {
			missing = "a step"
		}
	case ActionMove:
		if a.Phase == "" {
			missing = "a phase"
		}
	case ActionRequest:
		if a.Request == "" {
			missing = "a request"
		}
	case ActionRemoveFinalizer:
		if a.Finalizer == "" {
			missing = "a finalizer"
		}
	default:
		return fmt.Errorf("%w: no action is named %q", ErrInvalidAction, a.Name)
	}
	if missing != "" {
		return fmt.Errorf("%w: %s needs %s", ErrInvalidAction, a.Name, missing)
	}
	return nil
}

// Apply carries out a on the document of kind and key with the method of
// its name, and returns the command it issued (retry, skip, move,
// request), or a zero Command for the other actions.
func (c *Client) Apply(ctx context.Context, kind, key string, a Action) (statemachine.Command, error) {
	if err := a.Check(); err != nil {
		return statemachine.Command{}, err
	}
	switch a.Name {
	case ActionPause:
		return statemachine.Command{}, c.Pause(ctx, kind, key, a.Reason)
	case ActionResume:
		return statemachine.Command{}, c.Resume(ctx, kind, key)
	case ActionRemoveFinalizer:
		return statemachine.Command{}, c.RemoveFinalizer(ctx, kind, key, a.Finalizer, a.Force)
	case ActionRetry:
		return c.Retry(ctx, kind, key)
	case ActionSkip:
		return c.Skip(ctx, kind, key, a.Step)
	case ActionMove:
		return c.Move(ctx, kind, key, a.Phase)
	}
	return c.Request(ctx, kind, key, a.Request)
}
