package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"petstore/store"
	"petstore/store/boltstore"
	"petstore/store/postgres"
)

// runMigrate is "petstore migrate": it copies the bbolt file of --data into
// the empty PostgreSQL database of --database, for a service that moves to
// several instances on one database. The file is left as it was.
func runMigrate(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("petstore migrate", flag.ContinueOnError)
	fs.SetOutput(stdout)
	var cfg config
	flags := newGroupedFlags(fs, `Usage:
  petstore migrate --data FILE --database URL

Copies every entity of a bbolt data file, with its id, the API keys and the
admin token (their hashes), the domains and the certificates into an empty
PostgreSQL database. The file is left as it was. Every flag has an
environment variable, named beside it in parentheses.
`)
	move := flags.group("Flags")
	move.String(&cfg.data, "data", "./petstore.db", "the bbolt data `file` to copy (stop the service that uses it first)")
	move.String(&cfg.database, "database", "", "postgres:// `URL` of the empty PostgreSQL database to copy it into")
	if _, err := parseFlags(fs, args, getenv); errors.Is(err, flag.ErrHelp) {
		return nil
	} else if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if !isPostgresURL(cfg.database) {
		return errors.New("migrate: --database (or PETSTORE_DATABASE) must be the postgres:// URL of the database to copy into")
	}
	if _, err := os.Stat(cfg.data); err != nil {
		return fmt.Errorf("migrate: the data file to copy: %w", err)
	}
	from, err := boltstore.Open(cfg.data, store.Options{})
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer from.Close()
	to, err := postgres.Open(ctx, cfg.database, store.Options{})
	if err != nil {
		return fmt.Errorf("migrate: opening the database %s: %w", cfg.dataDescription(), err)
	}
	defer to.Close()
	s, err := store.Copy(ctx, from, to)
	if err != nil {
		if msg := store.ErrorMessage(err); store.ErrorCode(err) != store.EINTERNAL {
			return fmt.Errorf("migrate: %s", msg)
		}
		return fmt.Errorf("migrate: %w", err)
	}
	fmt.Fprintf(stdout, "copied %s into %s: %d categories, %d pets, %d orders, %d API keys, %d domains, %d files of certificates and the ACME account, the project, the settings",
		cfg.data, cfg.dataDescription(), len(s.Categories), len(s.Pets), len(s.Orders), len(s.APIKeys), len(s.Domains), len(s.KV))
	if s.AdminTokenSHA256 != nil {
		fmt.Fprint(stdout, " and the admin token")
	}
	fmt.Fprintln(stdout, "; start the service with --database (PETSTORE_DATABASE) and without --data")
	return nil
}
