package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"

	"petstore/store"
	"petstore/store/boltstore"
	"petstore/store/postgres"
)

// runUnrevoke is "petstore unrevoke": for an operator who restores an
// older dump, or puts back an older data file, on purpose to bring a
// revoked API key back. Without it the service revokes the key again
// after the restore (store/postgres/restore.go, store/boltstore/restore.go).
func runUnrevoke(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	var cfg config
	flags := newFlags("petstore unrevoke", `Usage:
  petstore unrevoke --database URL KEY_ID...
  petstore unrevoke --data FILE KEY_ID...

Forgets the revocations of these API keys (their ids), so that a restore
made on purpose brings them back instead of the service revoking them
again. With --database, run it before the restore, with the instances
running: each forgets them at its next poll. With --data, stop the service
first. Every flag has an environment variable, named beside it in
parentheses.
`, stdout)
	f := flags.group("Flags")
	f.String(&cfg.data, "data", "", "the bbolt data `file` whose revocations to forget (the service stopped)")
	f.String(&cfg.database, "database", "", "postgres:// `URL` of the database whose instances forget them")
	if _, err := flags.parse(args, getenv, true); errors.Is(err, flag.ErrHelp) {
		return nil
	} else if err != nil {
		return fmt.Errorf("unrevoke: %w", err)
	}
	if (cfg.data == "") == (cfg.database == "") {
		return errors.New("unrevoke: give one of --data (a bbolt file) and --database (a postgres:// URL)")
	}
	if flags.fs.NArg() == 0 {
		return errors.New("unrevoke: name the ids of the keys whose revocations to forget")
	}
	var ids []int64
	for _, a := range flags.fs.Args() {
		id, err := strconv.ParseInt(a, 10, 64)
		if err != nil || id <= 0 {
			return fmt.Errorf("unrevoke: %q is not a key id (a positive integer)", a)
		}
		ids = append(ids, id)
	}
	var n int
	var err error
	if cfg.data != "" {
		n, err = boltstore.Unrevoke(cfg.data, ids)
	} else {
		if !isPostgresURL(cfg.database) {
			return errors.New("unrevoke: --database must be a postgres:// URL")
		}
		var db *postgres.DB
		db, err = postgres.Open(ctx, cfg.database, store.Options{})
		if err != nil {
			return fmt.Errorf("unrevoke: opening the database %s: %w", cfg.dataDescription(), err)
		}
		defer db.Close()
		n, err = db.UnrevokeAPIKeys(ctx, ids)
	}
	if err != nil {
		return fmt.Errorf("unrevoke: %w", err)
	}
	_, err = fmt.Fprintf(stdout, "forgot %d of the %d revocations named\n", n, len(ids))
	return err
}
