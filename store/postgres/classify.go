package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"petstore/store"
)

// What went wrong with the database is read from pgx's errors in one
// place, classify: by SQLSTATE, and by pgx's tests of the client's own
// failures. No error text is read: a Postgres-compatible database or a
// proxy may word things its own way; an unknown code is left as it is.

// kind is what a failure means for the store.
type kind int

const (
	asIs       kind = iota // not the database's failure to serve
	badText                // U+0000, invalid UTF-8
	constraint             // that no rule of the store caught first
	busy                   // it answered but could not serve now
	timedOut               // the client's deadline passed
	lost                   // the connection could not be made or is gone
)

// classify says what err means, and the SQLSTATE that the metrics count
// it under ("08" for a connection lost on the client's side).
func classify(err error) (k kind, sqlstate string, counted bool) {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		code := pgErr.Code
		switch {
		case code == "22021" || code == "22P05":
			return badText, code, true
		case inClass(code, "23"):
			return constraint, code, true
		case code == "57014": // query_canceled: the statement timeout
			return busy, code, true
		case inClass(code, "08", "57"): // connection exception, operator intervention
			return lost, code, true
		case inClass(code, "53", "58", "40", "55", "25", "XX", "28", "3D") || code == "42501" || code == "42P01":
			// From 28 on: the operator's change refuses the service (its
			// login, its database, a privilege, a table dropped by a restore
			// under way), whatever the request.
			return busy, code, true
		}
		return asIs, code, true
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err):
		return timedOut, "08", true
	case isConnectionFailure(err):
		return lost, "08", true
	}
	return asIs, "", false
}

// inClass says that code, a SQLSTATE, is of one of the classes; a code of
// another length (a proxy's own) is of none.
func inClass(code string, classes ...string) bool {
	return len(code) == 5 && slices.ContainsFunc(classes, func(c string) bool { return strings.HasPrefix(code, c) })
}

// isConnectionFailure says that the database could not be reached, or that
// the connection broke or timed out on the client's side: a socket's
// errors come as *net.OpError; any net.Error would take a file's errno too
// (a move's target on a full disk) for the connection's.
func isConnectionFailure(err error) bool {
	var connectErr *pgconn.ConnectError
	var netErr *net.OpError
	return errors.As(err, &connectErr) || errors.As(err, &netErr) || pgconn.Timeout(err) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, pgconn.ErrConnClosed) || pgconn.SafeToRetry(err)
}

// noEffect says that a statement failed without effect: nothing was sent,
// the server ended the session, or it rolled the statement back for a
// deadlock or a serialization failure.
func noEffect(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return slices.Contains([]string{"57P01", "57P02", "57P03", "40001", "40P01"}, pgErr.Code)
	}
	return pgconn.SafeToRetry(err)
}

// retryable says that PostgreSQL asks for the transaction to be run again.
func retryable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40001" || pgErr.Code == "40P01")
}

// fail turns a failure to reach or use the database in time into
// database_unavailable, with the cause for the log, and a broken
// constraint into its 4xx; it leaves every other error as it was.
func (c *conns) fail(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	var se *store.Error
	if errors.As(err, &se) || errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	if ctx.Err() != nil {
		// The caller gave up: not the database's fault.
		return err
	}
	k, code, counted := classify(err)
	if counted {
		c.health.metrics.sqlstate(code)
	}
	switch k {
	case badText:
		return store.ErrorWithCause(err, store.EINVALID, "a text value holds a character that the database cannot store (such as U+0000)")
	case constraint:
		var pgErr *pgconn.PgError
		errors.As(err, &pgErr)
		switch code {
		case "23505":
			return store.ErrorWithCause(pgErr, store.ECONFLICT, "the record exists already")
		case foreignKey:
			return store.ErrorWithCause(pgErr, store.EUNPROCESSABLE, "the record refers to one that does not exist")
		}
		return store.ErrorWithCause(pgErr, store.EINVALID, "a value breaks a rule of the database")
	case lost:
		// A restart or a failover killed the idle others too, and each
		// would fail one request.
		c.pool.Reset()
		return c.unavailable(ctx, err)
	case busy, timedOut:
		return c.unavailable(ctx, err)
	}
	return err
}

func (c *conns) unavailable(ctx context.Context, err error) error {
	why := reason(err, c.t)
	c.health.failed(why)
	return store.ErrorWithCause(fmt.Errorf("database %s: %s: %w", c.name, why, err), store.EUNAVAILABLE,
		"the database is unavailable (%s); retry after the seconds in Retry-After", why)
}

func reason(err error, t Timeouts) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		what := pgErr.Message
		switch pgErr.Code {
		case "57014":
			what = fmt.Sprintf("a statement ran past the statement timeout of %v (a lock held too long?)", t.Statement)
		case "53300":
			what = "no connection slot is left (max_connections)"
		case "25006":
			what = "the database is read-only (a standby, a primary being demoted, or default_transaction_read_only set)"
		case "40001", "40P01":
			what = "a serialization failure or deadlock persisted through the retries"
		case "55P03":
			what = "a lock was held longer than the wait allowed (a restore or a migration under way?)"
		case "57P01", "57P02", "57P03":
			what = "the database is shutting down or starting up"
		case "3D000":
			what = "the URL's database does not exist"
		case "42P01":
			what = "a table the service uses does not exist (a restore under way without --single-transaction?)"
		case "42501":
			what = "the service's role lacks a privilege it needs (a grant or an owner changed?)"
		default:
			if inClass(pgErr.Code, "28") {
				what = "the database refused the service's login (its password, its role's LOGIN or pg_hba.conf)"
			}
		}
		return fmt.Sprintf("%s (SQLSTATE %s)", what, pgErr.Code)
	}
	var connectErr *pgconn.ConnectError
	switch {
	case errors.As(err, &connectErr):
		return "cannot connect: " + connectCause(err, t)
	case errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err):
		return "no answer in time (the statement or transaction timeout)"
	}
	return "the connection failed"
}

func violates(err error, code string) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == code
}

const foreignKey = "23503"

// dataError says that a statement failed on the data it was given, not on
// the database.
func dataError(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && inClass(pgErr.Code, "22", "23")
}

// connectCause says why a connection could not be made, in words that
// name no host or address (clients read them).
func connectCause(err error, t Timeouts) string {
	var dnsErr *net.DNSError
	switch {
	case errors.As(err, &dnsErr):
		return "the database host's name does not resolve"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "the connection was refused (no server listens at the URL's host and port)"
	// pgx gives this refusal no type of its own: its words are read.
	case strings.Contains(err.Error(), "server refused TLS connection"):
		return "the server does not offer TLS, which the URL's sslmode requires"
	case errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err):
		return fmt.Sprintf("no answer within the connect timeout (%v per host)", t.Connect)
	}
	return fmt.Sprintf("the connection failed (each host tried for at most %v)", t.Connect)
}
