package boltstore

import (
	"context"
	"slices"

	bolt "go.etcd.io/bbolt"

	"petstore/store"
)

func (db *DB) CreatePet(ctx context.Context, p *store.Pet, key *store.IdempotentWrite) error {
	return create(ctx, db, p, *p, key, func(tx *bolt.Tx, rec *store.Pet) error {
		if err := createPet(tx, rec); err != nil {
			return err
		}
		return db.emit(tx, store.EventPetCreated, rec)
	}, store.NormalizePet)
}

func (db *DB) Pet(ctx context.Context, id int64) (store.Pet, error) {
	return petTable.read(ctx, db, id)
}

// PetJSON returns the pet's stored JSON, which is its API form, so that a
// read needs neither decode nor encode. Hot pets come from memory
// (petcache.go); callers must not modify the bytes.
func (db *DB) PetJSON(ctx context.Context, id int64) ([]byte, int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	if v, ok := db.pets.get(id); ok {
		return v.json, v.version, nil
	}
	gen := db.pets.generation() // before the transaction begins
	var out cachedPet
	err := db.read(ctx, func(tx *bolt.Tx) error {
		k := idKey(id)
		v := tx.Bucket(bktPets).Get(k[:])
		if v == nil {
			return store.NotFound("pet", id)
		}
		// v is only valid inside the transaction.
		out.json = append(make([]byte, 0, len(v)), v...)
		out.version = getVersion(tx, versionPet, id)
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	db.pets.fill(id, out, gen)
	return out.json, out.version, nil
}

// ReplacePet replaces the pet p.ID with p; its inventory entry takes the
// new status.
func (db *DB) ReplacePet(ctx context.Context, p *store.Pet, cond store.Condition) error {
	in, err := store.NormalizePet(*p)
	if err != nil {
		return err
	}
	defer db.pets.forget(in.ID) // after the commit, before the answer
	err = db.write(ctx, func(tx *bolt.Tx) error {
		old, version, err := petTable.getAt(tx, cond, in.ID)
		if err != nil {
			return err
		}
		if in.CategoryID != old.CategoryID && !exists(tx.Bucket(bktCategories), in.CategoryID) {
			return store.CategoryMissing(in.CategoryID)
		}
		// Checks done; from here on only writes.
		in.Version = version + 1
		if err := petTable.replace(tx, &old, &in); err != nil {
			return err
		}
		if in.Status != old.Status {
			it, err := inventoryTable.get(tx, in.ID)
			if err != nil {
				return corrupt(err)
			}
			it.Status = in.Status
			if err := putInventory(tx.Bucket(bktInventory), &it); err != nil {
				return err
			}
		}
		return db.emit(tx, store.EventPetUpdated, &in)
	})
	if err == nil {
		*p = in
	}
	return err
}

// DeletePet deletes a pet and its inventory entry; its orders stay.
func (db *DB) DeletePet(ctx context.Context, id int64, cond store.Condition) error {
	defer db.pets.forget(id) // after the commit, before the answer
	return db.write(ctx, func(tx *bolt.Tx) error {
		old, _, err := petTable.getAt(tx, cond, id)
		if err != nil {
			return err
		}
		if err := petTable.remove(tx, id, &old); err != nil {
			return err
		}
		if err := tx.Bucket(bktInventory).Delete(itob(id)); err != nil {
			return err
		}
		return db.emit(tx, store.EventPetDeleted, store.DeletedData(id))
	})
}

func (db *DB) ListPets(ctx context.Context, f store.PetFilter) ([]store.Pet, int64, error) {
	if f.Status != "" && !f.Status.Valid() {
		return nil, 0, store.InvalidStatus(f.Status)
	}
	var index, prefix []byte
	switch {
	case f.Status != "" && f.CategoryID != 0:
		index, prefix = bktPetsByCategoryStatus, slices.Concat(itob(f.CategoryID), statusPrefix(f.Status))
	case f.Status != "":
		index, prefix = bktPetsByStatus, statusPrefix(f.Status)
	case f.CategoryID != 0:
		index, prefix = bktPetsByCategory, itob(f.CategoryID)
	}
	return petTable.page(ctx, db, index, prefix, f.Page)
}

func createPet(tx *bolt.Tx, p *store.Pet) error {
	if !exists(tx.Bucket(bktCategories), p.CategoryID) {
		return store.CategoryMissing(p.CategoryID)
	}
	if err := petTable.insert(tx, p); err != nil {
		return err
	}
	return putInventory(tx.Bucket(bktInventory), &store.InventoryItem{PetID: p.ID, Status: p.Status})
}

// petIndexEntries lists p's index keys (keys.go), in one allocation:
// bbolt's Put and Delete let their key escape.
func petIndexEntries(p *store.Pet) [3]indexEntry {
	s := p.Status
	k := make([]byte, 0, 2*len(s)+42)
	k = appendID(append(append(k, s...), 0), p.ID)
	byStatus := len(k)
	k = appendID(appendID(k, p.CategoryID), p.ID)
	byCategory := len(k)
	k = appendID(append(append(appendID(k, p.CategoryID), s...), 0), p.ID)
	return [3]indexEntry{
		{bktPetsByStatus, k[:byStatus]},
		{bktPetsByCategory, k[byStatus:byCategory]},
		{bktPetsByCategoryStatus, k[byCategory:]},
	}
}
