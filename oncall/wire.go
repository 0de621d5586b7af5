package oncall

import (
	"context"
	"errors"
	"net/http"

	"github.com/tendhq/tend/registry"
	"github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// Errors of the [Server], which a [Remote] returns too.
var (
	// ErrUnauthorized: the request carried no bearer token, or not the
	// server's, and no authorizer let it in.
	ErrUnauthorized = errors.New("oncall: unauthorized: a bearer token is missing or wrong")
	// ErrForbidden: the request is not allowed: the server is read-only,
	// its authorizer said no, or a browser's request came from another
	// site.
	ErrForbidden = errors.New("oncall: forbidden")
)

// wireErrors are the errors that keep their identity across the wire: the
// Server answers the first row whose error the failure matches with its
// status and code, and a Remote returns an error matching that row's
// error (and the errors of also). A new sentinel needs one row, above any
// row it matches too.
var wireErrors = []struct {
	code   string
	status int
	err    error
	also   []error
}{
	{"unauthorized", http.StatusUnauthorized, ErrUnauthorized, nil},
	{"forbidden", http.StatusForbidden, ErrForbidden, nil},
	{"not-driven", http.StatusNotFound, ErrNotDriven, []error{registry.ErrUnregistered}},
	{"removed", http.StatusNotFound, ErrRemoved, nil},
	{"held-in-fault", http.StatusConflict, statemachine.ErrHeldInFault, nil},
	{"terminating", http.StatusConflict, statemachine.ErrTerminating, []error{statemachine.ErrIntentRefused}},
	{"intent-refused", http.StatusConflict, statemachine.ErrIntentRefused, nil},
	{"no-selection", http.StatusBadRequest, ErrNoSelection, nil},
	{"invalid-action", http.StatusBadRequest, ErrInvalidAction, nil},
	{"invalid-config", http.StatusBadRequest, ErrInvalidConfig, nil},
	{"served", http.StatusConflict, ErrServed, nil},
	{"unregistered", http.StatusNotFound, registry.ErrUnregistered, nil},
	{"not-found", http.StatusNotFound, store.ErrNotFound, nil},
	{"unknown-kind", http.StatusNotFound, store.ErrUnknownKind, nil},
	{"conflict", http.StatusConflict, store.ErrConflict, nil},
	{"invalid", http.StatusBadRequest, store.ErrInvalid, nil},
	{"deadline", http.StatusGatewayTimeout, context.DeadlineExceeded, nil},
}

// wireError is an error as the Server writes it.
type wireError struct {
	Code  string `json:"code"`
	Error string `json:"error"`
}

// encodeError returns the status and body the Server answers err with;
// known is false for an error of no row (a 500).
func encodeError(err error) (status int, body wireError, known bool) {
	for _, row := range wireErrors {
		if errors.Is(err, row.err) {
			return row.status, wireError{Code: row.code, Error: err.Error()}, true
		}
	}
	return http.StatusInternalServerError, wireError{Code: "internal", Error: err.Error()}, false
}

// remoteError is an error a Server answered with: its text is the
// server's, and it matches the error of its code's row.
type remoteError struct {
	msg string
	err error
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.err }

// decodeError returns the error a Server's answer body stands for.
func decodeError(body wireError) error {
	for _, row := range wireErrors {
		if row.code == body.Code {
			return &remoteError{msg: body.Error, err: errors.Join(append([]error{row.err}, row.also...)...)}
		}
	}
	return &remoteError{msg: body.Error}
}
