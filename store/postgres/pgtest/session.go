package pgtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

// Session is one connection of a test's own to a database, beside the
// service's pool, without the test importing the driver itself.
type Session struct{ conn *pgx.Conn }

// Connect opens a session that closes when the test ends.
func Connect(tb testing.TB, dbURL string) *Session {
	tb.Helper()
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close(context.Background()) })
	return &Session{conn}
}

// Exec runs one SQL command (BEGIN and ROLLBACK included).
func (s *Session) Exec(ctx context.Context, sql string) error {
	_, err := s.conn.Exec(ctx, sql)
	return err
}

// Int64s runs a query whose one column is an integer.
func (s *Session) Int64s(ctx context.Context, sql string) ([]int64, error) {
	rows, err := s.conn.Query(ctx, sql)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}
