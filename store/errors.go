package store

import (
	"errors"
	"fmt"
)

// Error codes. They are the API's error codes too: handlers map each one to an
// HTTP status in a single table, so a code is defined here once and nowhere else.
const (
	ENOTFOUND          = "not_found"
	ECONFLICT          = "conflict"
	EINSUFFICIENTSTOCK = "insufficient_stock"
	EUNPROCESSABLE     = "unprocessable"
	EINVALID           = "invalid_request"
	EPLANREQUIRED      = "plan_required"
	EDOMAINEXISTS      = "domain_exists"
	ENOCNAMETARGET     = "cname_target_unknown" // started without --domain or --cname-target
	// ENOACMEDNSZONE: a wildcard domain needs the service's ACME DNS zone
	// (--acme-dns-zone), and it was started without one.
	ENOACMEDNSZONE = "acme_dns_zone_unknown"
	EINTERNAL      = "internal"
	// EINSUFFICIENTSTORAGE: the disk is full; the write was not made.
	EINSUFFICIENTSTORAGE = "insufficient_storage"
	// ENOTSUPPORTED: the store cannot do this (a backup of PostgreSQL is
	// pg_dump's job).
	ENOTSUPPORTED = "not_supported"
	// EGONE: what the cursor points after is no longer kept.
	EGONE = "gone"
	// EUNAVAILABLE: the database did not answer in time, or could not be
	// reached; nothing is known to have been written, and a retry may work.
	EUNAVAILABLE = "database_unavailable"
)

// Error is an application error: a machine-readable code and a message that is
// safe to show to the client. Anything that is not an *Error is internal.
type Error struct {
	Code    string
	Message string
	// cause is the failure behind the code, for the server's log only.
	cause error
}

func (e *Error) Error() string {
	if e.cause != nil {
		return e.Code + ": " + e.Message + ": " + e.cause.Error()
	}
	return e.Code + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.cause }

func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorWithCause builds an *Error whose cause, a failure the client must not
// see, goes to the server's log.
func ErrorWithCause(cause error, code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), cause: cause}
}

// ErrorCode returns the code of an application error, or EINTERNAL for any
// other non-nil error (and "" for nil).
func ErrorCode(err error) string {
	var e *Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &e):
		return e.Code
	default:
		return EINTERNAL
	}
}

// ErrorMessage returns the client-safe message of an application error. Other
// errors may carry internals, so they get a generic message.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}
