package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"petstore/store"
)

// Import copies what another store streams (a PostgreSQL database going
// back to one file) into this empty file, in one transaction, keeping
// every id, version and sequence: the way back of petstore migrate, and
// what its round trip is tested with. It refuses a file that holds
// anything already, and events that PostgreSQL numbered (their ids, which
// clients hold as cursors, have no place among a file's): nothing is
// copied then.
func (db *DB) Import(ctx context.Context, from store.Streamer) error {
	for {
		err := db.bolt.Update(func(tx *bolt.Tx) error {
			if err := refuseNonEmpty(tx); err != nil {
				return err
			}
			in := &importer{ctx: ctx, tx: tx}
			if err := from.Stream(ctx, in); err != nil {
				return err
			}
			return in.finish()
		})
		if errors.Is(err, errStreamAgain) {
			continue // the source read its snapshot again: so does this
		}
		if err != nil {
			return fmt.Errorf("copying into %s: %w", db.path, err)
		}
		return db.bolt.View(func(tx *bolt.Tx) error {
			if err := db.loadAPIKeys(tx); err != nil {
				return err
			}
			if h := tx.Bucket(bktMeta).Get(metaAdminHash); h != nil {
				h = bytes.Clone(h)
				db.adminHash.Store(&h)
			}
			return nil
		})
	}
}

var errStreamAgain = errors.New("the source started its stream again")

// refuseNonEmpty answers ECONFLICT, naming what it found, when the file
// holds any record a stream gives.
func refuseNonEmpty(tx *bolt.Tx) error {
	for _, b := range streamedBuckets {
		if k, _ := tx.Bucket(b).Cursor().First(); k != nil {
			return store.Errorf(store.ECONFLICT, "the target file is not empty (bucket %s holds records): the move copies into an empty file only", b)
		}
	}
	return nil
}

// importer is Import's Sink: it writes each record with its index entries
// and version, and keeps the largest ids seen for the sequences.
type importer struct {
	ctx     context.Context
	tx      *bolt.Tx
	started bool
	last    store.LastIDs
	rest    store.Rest
}

func (in *importer) Totals(store.Totals) error {
	if in.started {
		return errStreamAgain
	}
	in.started = true
	return nil
}

func (in *importer) Record(r any) error {
	if err := in.ctx.Err(); err != nil {
		return err
	}
	tx := in.tx
	switch r := r.(type) {
	case *store.Category:
		in.last.Categories = max(in.last.Categories, r.ID)
		if err := putJSON(tx.Bucket(bktCategories), r.ID, r); err != nil {
			return err
		}
		return putVersion(tx, versionCategory, r.ID, r.Version)
	case *store.Pet:
		in.last.Pets = max(in.last.Pets, r.ID)
		if err := putPet(tx.Bucket(bktPets), r); err != nil {
			return err
		}
		if err := putIndexEntries(tx, petIndexEntries(r)); err != nil {
			return err
		}
		return putVersion(tx, versionPet, r.ID, r.Version)
	case *store.InventoryItem:
		return putInventory(tx.Bucket(bktInventory), r)
	case *store.Order:
		in.last.Orders = max(in.last.Orders, r.ID)
		if err := putOrder(tx.Bucket(bktOrders), r); err != nil {
			return err
		}
		if err := putIndexEntries(tx, orderIndexEntries(r)); err != nil {
			return err
		}
		return putVersion(tx, versionOrder, r.ID, r.Version)
	case *store.StoredAPIKey:
		in.last.APIKeys = max(in.last.APIKeys, r.ID)
		if err := putJSON(tx.Bucket(bktAPIKeys), r.ID, r); err != nil {
			return err
		}
		return tx.Bucket(bktAPIKeysByHash).Put(bytes.Clone(r.SHA256), itob(r.ID))
	case *store.Domain:
		return putDomain(tx.Bucket(bktDomains), r)
	case *store.KVEntry:
		v := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(r.Value)), uint64(r.Modified.UnixNano()))
		return tx.Bucket(bktCerts).Put([]byte(r.Key), append(v, r.Value...))
	case *store.Webhook:
		in.last.Webhooks = max(in.last.Webhooks, r.ID)
		return putJSON(tx.Bucket(bktWebhooks), r.ID, r)
	case *store.StoredEvent:
		if r.ID.Tx != 0 {
			return store.Errorf(store.EUNPROCESSABLE, "event %s was numbered by PostgreSQL: a file cannot keep its id, which clients may hold as a cursor; nothing was copied", r.ID)
		}
		in.last.Events = max(in.last.Events, int64(r.ID.Seq))
		k, v := encodeEvent(r.ID.Seq, r.CreatedAt, r.Target, r.Type, r.Data)
		return tx.Bucket(bktEvents).Put(k, v)
	case *store.Delivery:
		if r.EventID.Tx != 0 {
			return store.Errorf(store.EUNPROCESSABLE, "delivery %d is of event %s, numbered by PostgreSQL: a file cannot keep its id; nothing was copied", r.ID, r.EventID)
		}
		in.last.Deliveries = max(in.last.Deliveries, r.ID)
		if err := tx.Bucket(bktDeliveriesWebhook).Put(appendID(itob(r.WebhookID), r.ID), empty); err != nil {
			return err
		}
		return putDelivery(tx, &deliveryRecord{Delivery: *r})
	case *store.StoredAnswer:
		k := append(append([]byte(r.Scope), 0), r.Key...)
		if err := tx.Bucket(bktKept).Put(k, encodeKept(r.KeptAnswer)); err != nil {
			return err
		}
		ik := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(k)), uint64(r.ExpiresAt.UnixNano()))
		return tx.Bucket(bktKeptByExpiry).Put(append(ik, k...), empty)
	}
	return fmt.Errorf("import: a record of type %T", r)
}

func (in *importer) Rest(r store.Rest) error {
	in.rest = r
	in.rest.AdminTokenSHA256 = bytes.Clone(r.AdminTokenSHA256)
	return nil
}

// finish writes the singletons and continues each sequence after both the
// last id the other store gave and the largest one copied.
func (in *importer) finish() error {
	tx, r := in.tx, in.rest
	if r.Dispatched.Tx != 0 {
		return store.Errorf(store.EUNPROCESSABLE, "the fan-out has reached event %s, numbered by PostgreSQL: a file cannot keep its id; nothing was copied", r.Dispatched)
	}
	meta := tx.Bucket(bktMeta)
	if r.AdminTokenSHA256 != nil {
		if err := meta.Put(metaAdminHash, r.AdminTokenSHA256); err != nil {
			return err
		}
	}
	if err := putMetaJSON(tx, metaProject, &r.Project); err != nil {
		return err
	}
	if err := putMetaJSON(tx, metaSettings, &r.Settings); err != nil {
		return err
	}
	if r.Dispatched.Seq > 0 {
		if err := meta.Put(metaDispatched, binary.BigEndian.AppendUint64(nil, r.Dispatched.Seq)); err != nil {
			return err
		}
	}
	for _, d := range r.Project.Deploys {
		in.last.Deploys = max(in.last.Deploys, d.ID)
	}
	for _, seq := range []struct {
		bucket []byte
		a, b   int64
	}{
		{bktCategories, in.last.Categories, r.LastIDs.Categories},
		{bktPets, in.last.Pets, r.LastIDs.Pets},
		{bktOrders, in.last.Orders, r.LastIDs.Orders},
		{bktAPIKeys, in.last.APIKeys, r.LastIDs.APIKeys},
		{bktMeta, in.last.Deploys, r.LastIDs.Deploys},
		{bktWebhooks, in.last.Webhooks, r.LastIDs.Webhooks},
		{bktDeliveries, in.last.Deliveries, r.LastIDs.Deliveries},
		{bktEvents, in.last.Events, r.LastIDs.Events},
	} {
		if err := tx.Bucket(seq.bucket).SetSequence(uint64(max(seq.a, seq.b, 0))); err != nil {
			return err
		}
	}
	return nil
}

// putVersion keeps a record's version where it is past the first.
func putVersion(tx *bolt.Tx, kind byte, id, version int64) error {
	if version <= 1 {
		return nil
	}
	return tx.Bucket(bktVersions).Put(versionKey(kind, id), binary.BigEndian.AppendUint64(nil, uint64(version)))
}

var _ store.Importer = (*DB)(nil)
