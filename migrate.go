package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"

	"petstore/store"
	"petstore/store/boltstore"
	"petstore/store/postgres"
)

// runMigrate is "petstore migrate": it copies --data's bbolt file into
// --database's empty PostgreSQL database, leaving the file as it was. With
// --to-data it goes the way back (migrateback.go).
func runMigrate(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	var cfg config
	flags := newFlags("petstore migrate", `Usage:
  petstore migrate --data FILE --database URL
  petstore migrate --to-data FILE --database URL

Copies everything a bbolt data file holds into an empty PostgreSQL database:
every entity with its id, the API keys and the admin token (their hashes),
the revocations of API keys (a backup or dump restored afterwards does not
bring a revoked key back), the domains, the certificates and the ACME
account, the webhooks with their signing secrets, the events kept, the
deliveries (pending ones go on being attempted) and the kept answers of
Idempotency-Keys. The file is left as it was.

With --to-data it goes the way back: everything the PostgreSQL database
holds into a new bbolt file (a missing or empty one; it is written beside
it and renamed when complete). The database's events are numbered again
after the file's own, the clients' cursors of the database's events
resume where they would have, and deliveries go on under the webhook-id
they were sent under. The database is left as it was, unless the restore
marks of an instance (--restore-marks) show it restored from an older
dump: then it first continues after them, as that instance would at
start.

Every flag has an environment variable, named beside it in parentheses.
`, stdout)
	move := flags.group("Flags")
	move.String(&cfg.data, "data", "./petstore.db", "the bbolt data `file` to copy (stop the service that uses it first)")
	move.String(&cfg.database, "database", "", "postgres:// `URL` of the empty PostgreSQL database to copy it into (with --to-data: to copy from)")
	var toData string
	move.String(&toData, "to-data", "", "the new bbolt data `file` to copy the database of --database into, the way back (stop the instances that use the database first)")
	move.String(&cfg.restoreMarks, "restore-marks", "", "with --to-data: an instance's restore marks `file` (copied from its host), applied to the database before the copy, so that a dump restored since does not give acknowledged ids out again or bring revoked keys back").
		DefaultMeans("restore-marks.json in systemd's $STATE_DIRECTORY")
	var badText string
	move.String(&badText, "bad-text", "stop", "what to do with text PostgreSQL cannot store (U+0000, invalid UTF-8), which bbolt kept: stop (name every such record and copy nothing) or replace (name each, and copy it with U+FFFD in place of the bad characters)")
	given, err := flags.parse(args, getenv, false)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	} else if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if toData != "" {
		if given["data"] {
			return errors.New("migrate: --data copies a file into the database, --to-data the database into a new file: give one of them")
		}
		if err := runMigrateBack(ctx, cfg.database, defaultMarks(cfg.restoreMarks, cfg.database, getenv), toData, stdout); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		return nil
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
	stream := &moveStream{from: from, what: "the data file", toPostgres: true, fix: badText == "replace", out: stdout}
	fmt.Fprintf(stdout, "copying %s into %s, in one transaction...\n", cfg.data, cfg.dataDescription())
	if err := to.Import(ctx, stream); err != nil {
		return fmt.Errorf("migrate: %w", moveError(err))
	}
	stream.copied(cfg.data, cfg.dataDescription())
	fmt.Fprintln(stdout, "; start the service with --database (PETSTORE_DATABASE) and without --data")
	return nil
}

// The kinds of record a move carries, in stream order, with their names
// in progress lines and reports.
const (
	kindCategories = iota
	kindPets
	kindInventory
	kindOrders
	kindAPIKeys
	kindDomains
	kindKV
	kindWebhooks
	kindEvents
	kindDeliveries
	kindAnswers
	kinds
)

var (
	kindNames = [kinds]string{"categories", "pets", "inventory entries", "orders", "API keys", "domains",
		"files of certificates and the ACME account", "webhooks with their signing keys", "events", "deliveries", "kept answers of Idempotency-Keys"}
	// kindFields are the kinds' fields in store.Totals.
	kindFields = [kinds]string{"Categories", "Pets", "Inventory", "Orders", "APIKeys", "Domains", "KV", "Webhooks", "Events", "Deliveries", "Answers"}
	kindTypes  = [kinds]reflect.Type{reflect.TypeFor[*store.Category](), reflect.TypeFor[*store.Pet](), reflect.TypeFor[*store.InventoryItem](),
		reflect.TypeFor[*store.Order](), reflect.TypeFor[*store.StoredAPIKey](), reflect.TypeFor[*store.Domain](), reflect.TypeFor[*store.KVEntry](),
		reflect.TypeFor[*store.Webhook](), reflect.TypeFor[*store.StoredEvent](), reflect.TypeFor[*store.Delivery](), reflect.TypeFor[*store.StoredAnswer]()}
)

// countKinds names every kind's count, none left out: "3 categories, 0
// pets, ...".
func countKinds(n [kinds]int64) string {
	parts := make([]string, kinds)
	for k := range kinds {
		parts[k] = fmt.Sprintf("%d %s", n[k], kindNames[k])
	}
	return strings.Join(parts, ", ")
}

// moveStream is the source as migrate gives it to the target: towards
// PostgreSQL each record passes checkText, and stdout tells each kind's
// progress every tenth.
type moveStream struct {
	from store.Streamer
	// what names the source in messages.
	what       string
	toPostgres bool
	fix        bool
	out        io.Writer
	// Of the stream's latest run (a database reruns its transaction, and
	// its stream, from Totals): records per kind, how many passed, bad
	// text, the admin token.
	total, done [kinds]int64
	bad         badRecords
	adminToken  bool
	revocations int
	// renumbered counts events PostgreSQL numbered, which a file renumbers.
	renumbered int64
}

func (m *moveStream) Stream(ctx context.Context, to store.Sink) error {
	return m.from.Stream(ctx, &moveSink{m: m, to: to})
}

type moveSink struct {
	m  *moveStream
	to store.Sink
}

func (s *moveSink) Totals(t store.Totals) error {
	s.m.done, s.m.bad, s.m.adminToken, s.m.renumbered = [kinds]int64{}, badRecords{}, false, 0
	var all int64
	for k, f := range kindFields {
		s.m.total[k] = reflect.ValueOf(t).FieldByName(f).Int()
		all += s.m.total[k]
	}
	fmt.Fprintf(s.m.out, "%d records to copy: %s\n", all, countKinds(s.m.total))
	return s.to.Totals(t)
}

func (s *moveSink) Record(r any) error {
	m := s.m
	k := slices.Index(kindTypes[:], reflect.TypeOf(r))
	if k < 0 {
		// A kind this command does not know would be lost: refuse the move.
		return store.Errorf(store.EINTERNAL, "%s holds a record of type %T that petstore migrate cannot copy; nothing was copied", m.what, r)
	}
	if m.toPostgres {
		checkText(r, recordName(kindFields[k], m.done[k], reflect.ValueOf(r).Elem()), m.fix, m.out, &m.bad)
	} else if e, ok := r.(*store.StoredEvent); ok && e.ID.Tx != 0 {
		m.renumbered++
	}
	m.done[k]++
	if total := m.total[k]; total > 0 && m.done[k]*10/total != (m.done[k]-1)*10/total {
		fmt.Fprintf(m.out, "%s: %d of %d (%d%%)\n", kindNames[k], m.done[k], total, m.done[k]*100/total)
	}
	if m.bad.n > 0 && !m.fix {
		// Nothing is copied: the rest is only read for its bad text.
		return nil
	}
	return s.to.Record(r)
}

func (s *moveSink) Rest(r store.Rest) error {
	m := s.m
	if m.toPostgres {
		checkText(&r, "", m.fix, m.out, &m.bad)
	}
	if m.bad.n > 0 && !m.fix {
		return store.Errorf(store.EINVALID, "%d records hold text PostgreSQL cannot store, the first %s; nothing was copied: correct them through the API, or move them with --bad-text replace", m.bad.n, m.bad.first)
	}
	m.adminToken = r.AdminTokenSHA256 != nil
	m.revocations = len(r.Revocations)
	return s.to.Rest(r)
}

// moveError is a failed move's error: a refusal as its message says it.
func moveError(err error) error {
	if store.ErrorCode(err) != store.EINTERNAL {
		return errors.New(store.ErrorMessage(err))
	}
	return err
}

// copied starts the summary of a move from from into to that succeeded.
func (m *moveStream) copied(from, to string) {
	fmt.Fprintf(m.out, "copied %s into %s: %s, the project, the settings", from, to, countKinds(m.done))
	if m.adminToken {
		fmt.Fprint(m.out, " and the admin token")
	}
	if m.revocations > 0 {
		fmt.Fprintf(m.out, "; %d revocations of API keys, which a backup or dump restored afterwards does not undo", m.revocations)
	}
}

// badRecords counts the records with bad text a move found and names the
// first.
type badRecords struct {
	n     int
	first string
}

// recordName names a record in reports: kind and id ("Pets 42"), its name
// or key, or its place.
func recordName(kind string, i int64, e reflect.Value) string {
	if e.Kind() == reflect.Struct {
		if id := e.FieldByName("ID"); id.IsValid() && id.CanInt() {
			return fmt.Sprintf("%s %d", kind, id.Int())
		}
		for _, f := range []string{"Name", "Key"} {
			if n := e.FieldByName(f); n.IsValid() && n.Kind() == reflect.String {
				return fmt.Sprintf("%s %q", kind, n.String())
			}
		}
	}
	return fmt.Sprintf("%s[%d]", kind, i)
}

// checkText finds a record's text that PostgreSQL cannot store (U+0000,
// invalid UTF-8) and bbolt kept, names it, and adds it to bad. With fix
// it replaces the bad characters with U+FFFD in place.
func checkText(r any, name string, fix bool, out io.Writer, bad *badRecords) {
	counted := false
	walkText(reflect.ValueOf(r).Elem(), name, func(where string, v reflect.Value) {
		if !counted {
			counted = true
			if bad.n++; bad.n == 1 {
				bad.first = where
			}
		}
		if fix {
			v.SetString(strings.ToValidUTF8(strings.ReplaceAll(v.String(), "\x00", "\uFFFD"), "\uFFFD"))
			fmt.Fprintf(out, "replaced text PostgreSQL cannot store (U+0000 or invalid UTF-8) with U+FFFD: %s\n", where)
		} else {
			fmt.Fprintf(out, "text PostgreSQL cannot store (U+0000 or invalid UTF-8): %s\n", where)
		}
	})
}

// walkText calls bad for each settable string under v that PostgreSQL
// cannot store, naming where it is ("Pets 42.Name").
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
			walkText(v.Index(i), recordName(where, int64(i), v.Index(i)), bad)
		}
	}
}
