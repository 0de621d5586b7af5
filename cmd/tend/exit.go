package main

import (
	"errors"
	"fmt"

	"github.com/tendhq/tend/registry"

	"github.com/tendhq/tend/oncall"
	"github.com/tendhq/tend/store"
)

// The exit codes of the command (see the package documentation).
const (
	exitOK       = 0
	exitError    = 1
	exitUsage    = 2
	exitNotFound = 3
	exitRefused  = 4
	exitStuck    = 5
)

// exitCodes is the table of exit codes shown by tend --help.
const exitCodes = `Exit codes:
  0  success (stuck: nothing is stuck; wait: settled)
  1  error: the store could not be reached, a write failed… (wait: timed out)
  2  usage: unknown command or flag, wrong arguments, bad --store
  3  not found: no such kind (no controller registered it) or document,
     no machine drives the kind (an action on a history or the registry),
     or no store where --store points (wait: removed)
  4  refused: the action was not taken: not confirmed, invalid for the
     document (nothing to retry, unknown step…), a served kind's finalizer
     without --force, a memory snapshot whose process still runs without
     --force, refused by the controller (--wait), refused for any document
     of a bulk action, or refused by --server (no token, a wrong one, a
     read-only server); machine diff: the new machine would strand
     documents; wait: the intent is refused
  5  stuck found: tend stuck listed at least one document; wait: held in
     Fault`

// codedError is an error that ends the command with its exit code. Every
// error a command's RunE returns is one; an error cobra returns of its own
// (an unknown flag, a wrong number of arguments) is a usage error.
type codedError struct {
	code int
	err  error // nil: exit quietly with code
}

func (e *codedError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit code %d", e.code)
	}
	return e.err.Error()
}

func (e *codedError) Unwrap() error { return e.err }

// errNotConfirmed is returned when a mutating command was not confirmed.
var errNotConfirmed = errors.New("not confirmed")

// errNoStore is returned when the store named holds no tend store.
var errNoStore = errors.New("no tend store there")

// errLiveSnapshot is returned for an action on a memory snapshot whose
// process still runs.
var errLiveSnapshot = errors.New("refused: the snapshot is live")

// errCommandRefused is returned by --wait when the controller refused the
// command.
var errCommandRefused = errors.New("the controller refused the command")

// usageError is a mistake in the command line found by a command itself.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// classify gives err its exit code.
func classify(err error) error {
	var ce *codedError
	var ue *usageError
	switch {
	case errors.As(err, &ce):
		return err
	case errors.As(err, &ue):
		return &codedError{exitUsage, err}
	case errors.Is(err, store.ErrNotFound), errors.Is(err, registry.ErrUnregistered), errors.Is(err, oncall.ErrNotDriven), errors.Is(err, store.ErrUnknownKind),
		errors.Is(err, errNoStore):
		return &codedError{exitNotFound, err}
	case errors.Is(err, errNotConfirmed), errors.Is(err, errCommandRefused),
		errors.Is(err, oncall.ErrInvalidAction), errors.Is(err, oncall.ErrServed), errors.Is(err, errLiveSnapshot),
		errors.Is(err, oncall.ErrUnauthorized), errors.Is(err, oncall.ErrForbidden), errors.Is(err, errBulkRefused):
		return &codedError{exitRefused, err}
	}
	return &codedError{exitError, err}
}
