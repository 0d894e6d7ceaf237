package boltstore

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"

	"petstore/store"
)

// Stream gives everything the file holds, as of one read transaction, one
// record at a time.
func (db *DB) Stream(ctx context.Context, to store.Sink) error {
	return db.read(ctx, func(tx *bolt.Tx) error {
		// A bucket Open does not make (a newer version's) would be left behind.
		err := tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
			if slices.ContainsFunc(allBuckets, func(b []byte) bool { return bytes.Equal(b, name) }) {
				return nil
			}
			return store.Errorf(store.EINVALID, "the data file holds a bucket %q that this version does not know (did a newer version write it?); nothing was copied: move it with that version", name)
		})
		if err != nil {
			return err
		}
		totals := store.Totals{
			Categories: countKeys(tx, bktCategories), Pets: countKeys(tx, bktPets), Inventory: countKeys(tx, bktInventory),
			Orders: countKeys(tx, bktOrders), APIKeys: countKeys(tx, bktAPIKeys), Domains: countKeys(tx, bktDomains), KV: countKeys(tx, bktCerts),
			Webhooks: countKeys(tx, bktWebhooks), Events: countKeys(tx, bktEvents), Deliveries: countKeys(tx, bktDeliveries), Answers: countKeys(tx, bktKept),
		}
		if err := to.Totals(totals); err != nil {
			return err
		}
		for _, stream := range []func() error{
			func() error { return streamRecords(ctx, tx, categoryTable, to) },
			func() error { return streamRecords(ctx, tx, petTable, to) },
			func() error { return streamRecords(ctx, tx, inventoryTable, to) },
			func() error { return streamRecords(ctx, tx, orderTable, to) },
			func() error { return streamRecords(ctx, tx, apiKeyTable, to) },
			func() error {
				domains, err := allDomains(tx) // a handful: a project's own
				for i := 0; err == nil && i < len(domains); i++ {
					err = to.Record(&domains[i])
				}
				return err
			},
			func() error {
				return each(ctx, tx, bktCerts, to, func(k, v []byte) (any, error) {
					e, ok := decodeKV(k, v)
					if !ok {
						return nil, fmt.Errorf("key %q: a record of %d bytes has no modification time", k, len(v))
					}
					return &e, nil
				})
			},
			func() error { return streamRecords(ctx, tx, webhookTable, to) }, // whole, secrets included
			func() error {
				was := wasBucket(tx)
				return each(ctx, tx, bktEvents, to, func(k, v []byte) (any, error) {
					e, target, err := decodeEvent(k, v)
					return &store.StoredEvent{Event: e, Target: target, Was: wasID(was, e.ID.Seq)}, err
				})
			},
			func() error {
				return each(ctx, tx, bktDeliveries, to, func(k, v []byte) (any, error) {
					var r deliveryRecord
					if err := json.Unmarshal(v, &r); err != nil {
						return nil, fmt.Errorf("delivery %x: %w", k, err)
					}
					r.ID, r.EventID = btoi(k), store.EventID{Seq: r.EventSeq}
					return &r.Delivery, nil
				})
			},
			func() error {
				return each(ctx, tx, bktKept, to, func(k, v []byte) (any, error) {
					scope, key, ok := bytes.Cut(k, []byte{0})
					if !ok {
						return nil, fmt.Errorf("kept answer %q: no scope", k)
					}
					kept, err := decodeKept(v)
					return &store.StoredAnswer{Scope: string(scope), Key: string(key), KeptAnswer: kept}, err
				})
			},
		} {
			if err := stream(); err != nil {
				return err
			}
		}
		rest := store.Rest{
			Dispatched:       store.EventID{Seq: dispatched(tx)},
			Revocations:      db.marks.Revocations(),
			AdminTokenSHA256: tx.Bucket(bktMeta).Get(metaAdminHash),
			VersionFloor:     int64(tx.Bucket(bktVersions).Sequence()),
		}
		for _, c := range counters {
			*c.last(&rest.LastIDs) = int64(tx.Bucket(c.bucket).Sequence())
		}
		if rest.Project, err = getProject(tx); err != nil {
			return err
		}
		if rest.Settings, err = getSettings(tx); err != nil {
			return err
		}
		return to.Rest(rest)
	})
}

// streamedBuckets are the buckets whose records Stream gives; every other
// bucket is in derivedBuckets (TestStreamCoversEveryBucket).
var streamedBuckets = [][]byte{
	bktCategories, bktPets, bktInventory, bktOrders, bktAPIKeys, bktDomains, bktCerts,
	bktWebhooks, bktEvents, bktDeliveries, bktKept,
	bktMeta, // the admin token, the project, the settings, the deploys' sequence, the fan-out's place
}

// derivedBuckets are what a move need not carry: what the records
// rebuild, and the locks of running processes.
var derivedBuckets = [][]byte{
	bktCertLocks, bktAPIKeysByHash,
	bktPetsByStatus, bktPetsByCategory, bktPetsByCategoryStatus,
	bktOrdersByPet, bktOrdersByComplete, bktOrdersByPetComplete,
	bktKeptByExpiry, bktVersions, bktDeliveriesWebhook, bktDeliveriesDue,
	bktEventsMoved, bktEventsWas,
}

func countKeys(tx *bolt.Tx, bucket []byte) int64 { return int64(countPrefix(tx.Bucket(bucket), nil)) }

func streamRecords[T any](ctx context.Context, tx *bolt.Tx, t table[T], to store.Sink) error {
	return each(ctx, tx, t.bucket, to, func(k, v []byte) (any, error) {
		if len(k) != 8 {
			return nil, fmt.Errorf("bucket %s: key %x is not an id", t.bucket, k)
		}
		rec, err := t.decode(btoi(k), v)
		t.setVersion(tx, &rec)
		return &rec, err
	})
}

func each(ctx context.Context, tx *bolt.Tx, bucket []byte, to store.Sink, decode func(k, v []byte) (any, error)) error {
	return tx.Bucket(bucket).ForEach(func(k, v []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		r, err := decode(k, v)
		if err != nil {
			return err
		}
		return to.Record(r)
	})
}

var _ store.Streamer = (*DB)(nil)
