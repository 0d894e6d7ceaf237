package postgres

import (
	"context"
	"errors"
	"net"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgxpool"

	"petstore/store"
	"petstore/store/postgres/pgtest"
)

// shortCodeServer is a server of the PostgreSQL protocol, as a proxy or a
// Postgres-compatible database may be, that answers every statement with
// an error whose SQLSTATE is code, however short.
func shortCodeServer(t *testing.T, code string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				be := pgproto3.NewBackend(c, c)
				if _, err := be.ReceiveStartupMessage(); err != nil {
					return
				}
				be.Send(&pgproto3.AuthenticationOk{})
				be.Send(&pgproto3.BackendKeyData{ProcessID: 1, SecretKey: []byte{0, 0, 0, 1}})
				be.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
				if be.Flush() != nil {
					return
				}
				for {
					msg, err := be.Receive()
					if err != nil {
						return
					}
					switch msg.(type) {
					case *pgproto3.Query, *pgproto3.Sync:
						be.Send(&pgproto3.ErrorResponse{Severity: "ERROR", Code: code, Message: "an error of a proxy's own"})
						be.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
						if be.Flush() != nil {
							return
						}
					case *pgproto3.Terminate:
						return
					}
				}
			}()
		}
	}()
	return "postgres://petstore@" + ln.Addr().String() + "/petstore?sslmode=disable"
}

func testConns(t *testing.T, url string) *conns {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return &conns{pool: pool, t: DefaultTimeouts, name: "test", hosts: 1, health: &health{}, share: newShares(int(pool.Config().MaxConns))}
}

// TestShortSQLSTATE: an error whose SQLSTATE is shorter than a class (a
// proxy's own) is left as it is, counted under "other", and panics
// nowhere (conns.fail sliced it).
func TestShortSQLSTATE(t *testing.T) {
	for _, code := range []string{"", "X", "0"} {
		c := testConns(t, shortCodeServer(t, code))
		_, err := c.Exec(context.Background(), "SELECT 1")
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != code {
			t.Errorf("code %q: %v, want the server's error as it is", code, err)
		}
		if store.ErrorCode(err) == store.EUNAVAILABLE || store.ErrorCode(err) == store.EINVALID {
			t.Errorf("code %q: classified as %s", code, store.ErrorCode(err))
		}
		if n := c.health.metrics.byClass["other"]; n != 1 {
			t.Errorf("code %q: counted %d times under \"other\", want 1 (%v)", code, n, c.health.metrics.byClass)
		}
	}
}

// TestClosedConnectionIsUnavailable: a statement on a connection that pgx
// closed after an earlier failure is database_unavailable, known by
// pgconn.ErrConnClosed (not by its text), and makes the pool drop its idle
// connections.
func TestClosedConnectionIsUnavailable(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	_, closed := conn.Exec(ctx, "SELECT 1")
	if !errors.Is(closed, pgconn.ErrConnClosed) {
		t.Fatalf("a statement on a closed connection: %v, want pgconn.ErrConnClosed", closed)
	}
	if k, code, _ := classify(closed); k != lost || code != "08" {
		t.Errorf("classified %v %q, want lost under 08", k, code)
	}
	c := testConns(t, url)
	idle, err := c.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	idle.Release()
	if c.pool.Stat().IdleConns() != 1 {
		t.Fatalf("%d idle connections, want 1", c.pool.Stat().IdleConns())
	}
	err = c.fail(ctx, closed)
	if store.ErrorCode(err) != store.EUNAVAILABLE {
		t.Errorf("a closed connection: %v, want database_unavailable", err)
	}
	if n := c.pool.Stat().IdleConns(); n != 0 {
		t.Errorf("%d idle connections after a lost one, want 0 (reset)", n)
	}
	// And the classes PostgreSQL gives, by their SQLSTATE.
	for code, want := range map[string]kind{"57014": busy, "57P01": lost, "08006": lost, "23505": constraint, "22021": badText, "22003": asIs, "53300": busy, "XX000": busy, "42601": asIs,
		"42P01": busy, "42501": busy, "28P01": busy, "28000": busy, "3D000": busy} {
		if k, _, _ := classify(&pgconn.PgError{Code: code}); k != want {
			t.Errorf("SQLSTATE %s: %v, want %v", code, k, want)
		}
	}
}
