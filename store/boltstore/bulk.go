package boltstore

import (
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"petstore/store"
)

// importChunk is how many pets ImportPets writes per transaction, so that
// its dirty pages stay bounded; tests make it small.
var importChunk = 50_000

// ImportPets creates n pets named "pet 1" to "pet n", in a few large
// transactions; when one fails, the pets of the earlier ones stay.
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
		// Not db.write: nothing else is worth batching with it.
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
