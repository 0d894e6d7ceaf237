package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
)

// DefaultBatchDelay is how long a group of writes stays open for others to
// join its transaction (and its fsync) once its first write is waiting. It is
// short because a commit costs about 0.4 ms on this disk: bbolt's default of
// 10 ms measured 7 times slower under load. (While every goroutine sleeps,
// Go's timers round it up to about 1 ms; group keeps lone writes clear of it.)
const DefaultBatchDelay = 200 * time.Microsecond

// openTimeout bounds the wait for bbolt's file lock, so that a second process
// started on the same file fails at once instead of hanging.
const openTimeout = time.Second

// Options tunes a DB. The zero value is what production uses.
type Options struct {
	// BatchDelay is bbolt's MaxBatchDelay; 0 means DefaultBatchDelay.
	BatchDelay time.Duration
	// Now is the clock for timestamps the store assigns; nil means time.Now.
	Now func() time.Time
}

// DB is the one bbolt file that holds every entity of the service. All its
// methods are safe for concurrent use.
type DB struct {
	bolt *bolt.DB
	path string
	now  func() time.Time

	// commit runs a write transaction: db.group, so that concurrent writers
	// share fsyncs; benchmarks swap it to measure the difference.
	commit func(func(*bolt.Tx) error) error
	// writers counts the writes in progress, for group.
	writers atomic.Int64

	// API keys by the SHA-256 of their secret, so that authenticating a
	// request costs a hash and a map lookup instead of a transaction.
	keysMu sync.RWMutex
	keys   map[[32]byte]apiKeyRecord

	// The admin token's hash, cached for the same reason.
	adminMu   sync.RWMutex
	adminHash []byte

	// Certmagic locks held by this process, by name; the channel is closed on
	// unlock to wake up waiters.
	locksMu sync.Mutex
	locks   map[string]chan struct{}
}

// Bucket names. Entity buckets map an 8-byte big-endian id to the entity's
// JSON; index buckets hold keys only (see keys.go for their layout).
var (
	bktPets                 = []byte("pets")
	bktCategories           = []byte("categories")
	bktOrders               = []byte("orders")
	bktInventory            = []byte("inventory")
	bktAPIKeys              = []byte("apikeys")
	bktMeta                 = []byte("meta")
	bktCerts                = []byte("certmagic")
	bktCertLocks            = []byte("certmagic_locks")
	bktAPIKeysByHash        = []byte("idx_apikeys_hash")
	bktPetsByStatus         = []byte("idx_pets_status")
	bktPetsByCategory       = []byte("idx_pets_category")
	bktPetsByCategoryStatus = []byte("idx_pets_category_status")
	bktOrdersByPet          = []byte("idx_orders_pet")
	bktOrdersByComplete     = []byte("idx_orders_complete")
	bktOrdersByPetComplete  = []byte("idx_orders_pet_complete")
)

var allBuckets = [][]byte{
	bktPets, bktCategories, bktOrders, bktInventory, bktAPIKeys, bktMeta,
	bktCerts, bktCertLocks, bktAPIKeysByHash,
	bktPetsByStatus, bktPetsByCategory, bktPetsByCategoryStatus,
	bktOrdersByPet, bktOrdersByComplete, bktOrdersByPetComplete,
}

// Open opens (creating it if needed) the bbolt file at path. It fails after
// about a second if another process holds the file.
func Open(path string, opts Options) (*DB, error) {
	bdb, err := bolt.Open(path, 0o600, &bolt.Options{
		Timeout: openTimeout,
		// The hashmap freelist keeps allocation O(1) as the file fragments,
		// where the array one degrades with size.
		FreelistType: bolt.FreelistMapType,
	})
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	bdb.MaxBatchDelay = opts.BatchDelay
	if bdb.MaxBatchDelay <= 0 {
		bdb.MaxBatchDelay = DefaultBatchDelay
	}
	db := &DB{
		bolt:  bdb,
		path:  path,
		now:   opts.Now,
		keys:  make(map[[32]byte]apiKeyRecord),
		locks: make(map[string]chan struct{}),
	}
	if db.now == nil {
		db.now = time.Now
	}
	db.commit = db.group
	if err := db.init(); err != nil {
		bdb.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return db, nil
}

// init creates the buckets and loads the in-memory caches.
func (db *DB) init() error {
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		for _, name := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("create bucket %s: %w", name, err)
			}
		}
		return clearCertLocks(tx)
	})
	if err != nil {
		return err
	}
	return db.bolt.View(func(tx *bolt.Tx) error {
		if err := db.loadAPIKeys(tx); err != nil {
			return err
		}
		db.loadAdminHash(tx)
		return nil
	})
}

// Close closes the file. Writes already answered are on disk.
func (db *DB) Close() error {
	return db.bolt.Close()
}

// Path is the file's path, as given to Open.
func (db *DB) Path() string { return db.path }

// Ping reports whether the store can serve reads, for readiness probes.
func (db *DB) Ping(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return db.bolt.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bktPets) == nil {
			return errors.New("store: pets bucket missing")
		}
		return nil
	})
}

// group commits fn with whatever other writes are in progress, through
// bolt.Batch. A write that finds no other in progress commits at once
// instead: Batch would make it wait out MaxBatchDelay for company that is not
// coming, and Go's timers cannot wait less than about a millisecond on an
// idle process, which made a lone write 4 times slower here. Under load
// writers overlap, so nearly all of them still go through Batch.
func (db *DB) group(fn func(*bolt.Tx) error) error {
	defer db.writers.Add(-1)
	if db.writers.Add(1) == 1 {
		return db.bolt.Update(fn)
	}
	return db.bolt.Batch(fn)
}

// write runs fn in a batched, fsynced write transaction.
//
// bbolt's Batch runs fn in a transaction shared with other writers, may run it
// more than once, and rolls back the whole group when one fn fails. So an
// application failure (an *Error) must not fail the transaction: write turns
// it into a successful, write-less run and returns it to the caller after the
// commit. For that to be correct, fn must return an *Error only before it has
// written anything; any other error is a storage failure and aborts the group
// (bbolt then re-runs the others without fn).
func (db *DB) write(ctx context.Context, fn func(tx *bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var appErr *Error
	err := db.commit(func(tx *bolt.Tx) error {
		appErr = nil // fn may be re-run: only the last run counts
		err := fn(tx)
		if e, ok := err.(*Error); ok {
			appErr = e
			return nil
		}
		return err
	})
	if err != nil {
		return err
	}
	if appErr != nil {
		return appErr
	}
	return nil
}

// read runs fn in a read transaction.
func (db *DB) read(ctx context.Context, fn func(tx *bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return db.bolt.View(fn)
}

// timestamp is the store's notion of now: UTC, whole seconds, no monotonic
// reading, so that a value read back equals the one written.
func (db *DB) timestamp() time.Time {
	return db.now().UTC().Truncate(time.Second)
}
