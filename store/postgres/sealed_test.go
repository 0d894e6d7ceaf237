package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"petstore/store"
	"petstore/store/postgres/pgtest"
	"petstore/store/storetest"
)

// From the table alone (as a dump holds it), an admin answer kept for a
// guessable Idempotency-Key cannot be found by a guess nor opened; another
// instance, given the key and the token, replays it.
func TestSealedAnswersResistGuessesFromTheTable(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	storetest.SealedAgainstGuesses(t, openAt(t, url), func() []storetest.KeptRow {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		rows, err := conn.Query(ctx, `SELECT scope, key, fingerprint, answer FROM idempotency_keys`)
		if err != nil {
			t.Fatal(err)
		}
		kept, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (storetest.KeptRow, error) {
			var k storetest.KeptRow
			return k, r.Scan(&k.Scope, &k.Key, &k.Fingerprint, &k.Answer)
		})
		if err != nil {
			t.Fatal(err)
		}
		return kept
	}, func() store.Store { return openAt(t, url) })
}
