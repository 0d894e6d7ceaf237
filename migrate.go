package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"unicode/utf8"

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
	var badText string
	move.String(&badText, "bad-text", "stop", "what to do with text PostgreSQL cannot store (U+0000, invalid UTF-8), which bbolt kept: stop (name every such record and copy nothing) or replace (name each, and copy it with U+FFFD in place of the bad characters)")
	if _, err := parseFlags(fs, args, getenv); errors.Is(err, flag.ErrHelp) {
		return nil
	} else if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if !isPostgresURL(cfg.database) {
		return errors.New("migrate: --database (or PETSTORE_DATABASE) must be the postgres:// URL of the database to copy into")
	}
	if badText != "stop" && badText != "replace" {
		return fmt.Errorf("migrate: --bad-text must be stop or replace, not %q", badText)
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
	fmt.Fprintf(stdout, "reading %s...\n", cfg.data)
	s, err := from.Export(ctx)
	if err == nil {
		err = checkText(s, badText == "replace", stdout)
	}
	if err == nil {
		fmt.Fprintf(stdout, "writing %d records into %s...\n", len(s.Categories)+len(s.Pets)+len(s.Inventory)+len(s.Orders)+len(s.APIKeys)+len(s.Domains)+len(s.KV), cfg.dataDescription())
		err = to.Import(ctx, s)
	}
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

// checkText finds the text of s that PostgreSQL cannot store (U+0000, or
// bytes that are not UTF-8), which bbolt kept, and names each record that
// holds some. With fix, it replaces the bad characters with U+FFFD and
// carries on; without, it refuses the move.
func checkText(s *store.Snapshot, fix bool, out io.Writer) error {
	var bad []string
	walkText(reflect.ValueOf(s).Elem(), "", func(where string, v reflect.Value) {
		bad = append(bad, where)
		if fix {
			v.SetString(strings.ToValidUTF8(strings.ReplaceAll(v.String(), "\x00", "\uFFFD"), "\uFFFD"))
		}
	})
	for _, where := range bad {
		if fix {
			fmt.Fprintf(out, "replaced text PostgreSQL cannot store (U+0000 or invalid UTF-8) with U+FFFD: %s\n", where)
		} else {
			fmt.Fprintf(out, "text PostgreSQL cannot store (U+0000 or invalid UTF-8): %s\n", where)
		}
	}
	if len(bad) > 0 && !fix {
		return store.Errorf(store.EINVALID, "%d records hold text PostgreSQL cannot store, the first %s; nothing was copied: correct them through the API, or move them with --bad-text replace", len(bad), bad[0])
	}
	return nil
}

// walkText calls bad for each settable string under v that PostgreSQL
// cannot store, naming where it is: a record by its kind and id where it
// has one ("Pets 42.Name").
func walkText(v reflect.Value, where string, bad func(string, reflect.Value)) {
	switch v.Kind() {
	case reflect.String:
		if s := v.String(); (strings.ContainsRune(s, 0) || !utf8.ValidString(s)) && v.CanSet() {
			bad(where, v)
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walkText(v.Elem(), where, bad)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() {
				name := f.Name
				if where != "" {
					name = where + "." + f.Name
				}
				walkText(v.Field(i), name, bad)
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			e := v.Index(i)
			name := fmt.Sprintf("%s[%d]", where, i)
			if e.Kind() == reflect.Struct {
				if id := e.FieldByName("ID"); id.IsValid() && id.CanInt() {
					name = fmt.Sprintf("%s %d", where, id.Int())
				} else if n := e.FieldByName("Name"); n.IsValid() && n.Kind() == reflect.String {
					name = fmt.Sprintf("%s %q", where, n.String())
				} else if k := e.FieldByName("Key"); k.IsValid() && k.Kind() == reflect.String {
					name = fmt.Sprintf("%s %q", where, k.String())
				}
			}
			walkText(e, name, bad)
		}
	}
}
