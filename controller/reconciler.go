package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
)

// Reconciler drives the object named by a key towards its intent. It reads
// the newest state itself: the key is all it is given, never the event that
// queued it, so it must do the same work whatever happened. (Its context
// says why it runs, for people debugging: [TriggersFrom].)
type Reconciler interface {
	// Reconcile is called with one key at a time: the same key is never
	// reconciled by two workers at once. The returned Result and error decide
	// what happens next (see [Result]). ctx carries the per-reconcile
	// timeout, a logger (see [LoggerFrom]), the reconcile's span when the
	// controller traces ([Config.TracerProvider]) and, under a [Manager] that
	// elects a leader or shards keys, the fence of the lease that entitles
	// this replica to the key (see store.WithFence); it is cancelled when
	// that lease is lost or a graceful shutdown runs out of time.
	Reconcile(ctx context.Context, key string) (Result, error)
}

// ReconcilerFunc adapts a function to a [Reconciler].
type ReconcilerFunc func(ctx context.Context, key string) (Result, error)

// Reconcile calls f(ctx, key).
func (f ReconcilerFunc) Reconcile(ctx context.Context, key string) (Result, error) {
	return f(ctx, key)
}

// Result says what a successful reconcile wants next. The zero Result means
// done: the key is reconciled again only when a source queues it again.
//
// A non-nil error overrides the Result: the key is retried after the delay
// the rate limiter returns, unless the error matches [ErrTerminal] (see
// [Terminal]), in which case it is recorded and not retried.
type Result struct {
	// RequeueAfter, when positive, queues the key again after this long, and
	// resets its retry backoff. Use it to poll progress that no source
	// reports.
	RequeueAfter time.Duration

	// Trigger says why the key is queued again after RequeueAfter (a timer,
	// a health check): it is among the triggers of the reconcile that
	// follows ([TriggersFrom]). The zero Trigger means [TriggerRequeue]. It
	// is ignored without RequeueAfter, and with an error: a retry's trigger
	// is [TriggerRetry].
	Trigger Trigger
}

// ErrTerminal matches every error made by [Terminal].
var ErrTerminal = errors.New("controller: terminal error")

// Terminal marks err as terminal: a reconcile that returns it is not retried
// until a source queues the key again. The error is logged and counted in
// controller_runtime_terminal_reconcile_errors_total. The returned error
// matches both [ErrTerminal] and err with errors.Is and errors.As. Terminal(nil)
// returns an error that matches ErrTerminal alone.
func Terminal(err error) error {
	return &terminalError{err: err}
}

type terminalError struct{ err error }

func (e *terminalError) Error() string {
	if e.err == nil {
		return ErrTerminal.Error()
	}
	return "terminal: " + e.err.Error()
}

func (e *terminalError) Unwrap() []error {
	if e.err == nil {
		return []error{ErrTerminal}
	}
	return []error{ErrTerminal, e.err}
}

// RetryAfter marks err as a failure to retry after d instead of after the
// rate limiter's delay: a reconciler that keeps its own backoff (the
// [Driver] keeps it in the document's status, so that it survives restarts)
// or that was told when to come back (a Retry-After header). The failure is
// logged and counted like any other error, and the key's rate-limiter count
// is forgotten. The returned error matches err with errors.Is and errors.As.
// A [Terminal] error wins over RetryAfter: it is not retried. A step of a
// driven machine may return it too: its retry time becomes now + d.
func RetryAfter(err error, d time.Duration) error {
	return &retryAfterError{err: err, after: max(d, 0)}
}

type retryAfterError struct {
	err   error
	after time.Duration
}

func (e *retryAfterError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("retry after %v", e.after)
	}
	return e.err.Error()
}

func (e *retryAfterError) Unwrap() error { return e.err }

type loggerKey struct{}

// LoggerFrom returns the logger of the reconcile that ctx was handed to: the
// controller's [Config.Logger] with the fields controller, key and
// reconcileID, and traceID and spanID (the reconcile's span) when the
// controller traces. It returns a no-op logger when the controller has no logger or
// ctx does not come from a reconcile.
func LoggerFrom(ctx context.Context) *zap.Logger {
	if l, ok := ctx.Value(loggerKey{}).(*zap.Logger); ok {
		return l
	}
	return zap.NewNop()
}

// ReconcileIDFrom returns the id of the reconcile that ctx was handed to:
// the reconcileID field of its log lines, the tend.reconcile.id attribute of
// its span and the ReconcileID of the history entries it records. It
// returns "" when ctx does not come from a reconcile.
func ReconcileIDFrom(ctx context.Context) string {
	if info := reconcileFrom(ctx); info != nil {
		return info.id
	}
	return ""
}

// WithLogger returns ctx carrying l as the logger [LoggerFrom] returns: for
// a reconciler that hands the code it calls a logger of its own (one that
// scrubs secrets, say).
func WithLogger(ctx context.Context, l *zap.Logger) context.Context {
	return context.WithValue(ctx, loggerKey{}, l)
}
