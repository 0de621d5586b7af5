package oncall

import (
	"context"
	"errors"
	"net/http"

	"github.com/tendhq/tend/registry"
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
// error. A new sentinel needs one row, above any row it matches too.
var wireErrors = []struct {
	code   string
	status int
	err    error
}{
	{"unauthorized", http.StatusUnauthorized, ErrUnauthorized},
	{"forbidden", http.StatusForbidden, ErrForbidden},
	{"no-selection", http.StatusBadRequest, ErrNoSelection},
	{"invalid-action", http.StatusBadRequest, ErrInvalidAction},
	{"invalid-config", http.StatusBadRequest, ErrInvalidConfig},
	{"served", http.StatusConflict, ErrServed},
	{"unregistered", http.StatusNotFound, registry.ErrUnregistered},
	{"not-found", http.StatusNotFound, store.ErrNotFound},
	{"unknown-kind", http.StatusNotFound, store.ErrUnknownKind},
	{"conflict", http.StatusConflict, store.ErrConflict},
	{"invalid", http.StatusBadRequest, store.ErrInvalid},
	{"deadline", http.StatusGatewayTimeout, context.DeadlineExceeded},
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
			return &remoteError{msg: body.Error, err: row.err}
		}
	}
	return &remoteError{msg: body.Error}
}
