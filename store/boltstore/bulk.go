package boltstore

import (
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"petstore/store"
)

// importChunk is how many pets ImportPets writes per transaction: large
// enough that the commit (and its fsync) is a small part of the cost, small
// enough that the dirty pages of one transaction stay a few tens of MB. A
// variable so that tests can make chunks small.
var importChunk = 50_000

// ImportPets creates n pets of the given status (empty means available) in
// category categoryID, named "pet 1" to "pet n" in creation order, each with
// its inventory entry (quantity 0) and index entries: exactly what n calls
// of CreatePet would store, written in a few large transactions instead of n
// small ones. It is meant for seeding large stores (load tests, fixtures).
//
// Each transaction is committed on its own: when a later one fails or ctx is
// cancelled between two, the pets of the earlier ones stay, all consistent.
func (db *DB) ImportPets(ctx context.Context, categoryID int64, n int, status store.PetStatus) error {
	in, err := store.PetImportTemplate(categoryID, n, status)
	if err != nil {
		return err
	}
	for done := 0; done < n; {
		if err := ctx.Err(); err != nil {
			return err
		}
		chunk := min(importChunk, n-done)
		// One plain transaction, not db.write: nothing else is worth
		// batching with it, and a failure (such as a missing category, an
		// *Error returned as it is) rolls back only this chunk.
		err := db.bolt.Update(func(tx *bolt.Tx) error {
			for i := range chunk {
				p := in
				p.Name = fmt.Sprintf("pet %d", done+i+1)
				if err := createPet(tx, &p); err != nil {
					return err
				}
			}
			return nil
		})
		db.pets.committed()
		if err != nil {
			return err
		}
		done += chunk
	}
	return nil
}
