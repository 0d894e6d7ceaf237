package pgtest

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// TerminateOthers ends every other connection to the database at dbURL,
// as an administrator or a failover would, and returns how many it ended.
func TerminateOthers(ctx context.Context, dbURL string) (int, error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var killed int
	err = conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&killed)
	return killed, err
}
