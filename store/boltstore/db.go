// Package boltstore is the store in one bbolt file, owned by one instance:
// the default, which needs no database.
package boltstore

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"petstore/bounded"
	"petstore/store"
)

// maxGroup caps the writes committed in one transaction, so that one
// commit's latency stays bounded however deep the queue.
const maxGroup = 512

// openTimeout bounds the wait for bbolt's file lock, so that a second process
// started on the same file fails at once instead of hanging.
const openTimeout = time.Second

// DB is the one bbolt file that holds every entity of the service. All its
// methods are safe for concurrent use.
type DB struct {
	bolt *bolt.DB
	path string
	now  func() time.Time

	// commit runs a write transaction: db.group, so that concurrent writers
	// share fsyncs; benchmarks swap it.
	commit func(*writeReq) error
	// queue feeds the committer; closeMu guards sending on it against
	// Close, and committed is closed when the committer has stopped.
	queue     chan *writeReq
	closeMu   sync.RWMutex
	closed    bool
	committed chan struct{}
	// pets caches hot pets' JSON: every commit calls pets.committed, and a
	// write that changes or deletes a pet forgets it after its commit.
	pets *petCache
	// commits and grouped count the committer's transactions and writes.
	commits, grouped atomic.Int64
	// fault is the storage failure of the last write (nil once one
	// commits), which fails Ping; probing lets one Ping try a write.
	fault   atomic.Pointer[error]
	probing atomic.Bool
	// stuck is set when a failed transaction kept bbolt's writer lock (see
	// update), changed when the file changed under this process
	// (changedUnder); writes fail at once from then on. opened is the file
	// as opened, lastTx the last transaction committed.
	stuck, changed atomic.Pointer[error]
	opened         os.FileInfo
	lastTx         atomic.Int64
	// damaged is set by the first transaction that panicked, until the
	// process ends; onDamaged is told once.
	damaged   atomic.Pointer[error]
	onDamaged atomic.Pointer[func(error)]

	// API keys by the SHA-256 of their secret, and the admin token's hash,
	// so that authenticating a request costs no transaction.
	keysMu    sync.RWMutex
	keys      map[[32]byte]store.StoredAPIKey
	adminHash atomic.Pointer[[]byte]

	// Certmagic locks held by this process; the channel is closed on
	// unlock to wake up waiters.
	locksMu sync.Mutex
	locks   map[string]chan struct{}

	deliveryLeases leases

	// The restore marks, kept beside the file (restore.go).
	marks         *store.Marks
	restored      *store.Restored
	log           *slog.Logger
	marksFailures store.RepeatedFailure
	marksStop     context.CancelFunc
	marksDone     chan struct{}
}

// Bucket names (keys.go has their layout).
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
	bktDomains              = []byte("domains") // by normalised name
)

// allBuckets is every bucket Open creates.
var allBuckets = [][]byte{
	bktPets, bktCategories, bktOrders, bktInventory, bktAPIKeys, bktMeta,
	bktCerts, bktCertLocks, bktAPIKeysByHash,
	bktPetsByStatus, bktPetsByCategory, bktPetsByCategoryStatus,
	bktOrdersByPet, bktOrdersByComplete, bktOrdersByPetComplete,
	bktDomains,
	bktEvents, bktEventsMoved, bktEventsWas,
	bktKept, bktKeptByExpiry,
	bktVersions,
	bktWebhooks, bktDeliveries, bktDeliveriesWebhook, bktDeliveriesDue,
}

// Open opens (creating it if needed) the bbolt file at path. It refuses a
// file that is not a complete bbolt file (checkFile), or that another
// process holds.
func Open(path string, opts store.Options) (*DB, error) {
	if err := checkFile(path); err != nil {
		return nil, err
	}
	var bdb *bolt.DB
	err := refuseDamaged(func() (err error) {
		bdb, err = bolt.Open(path, 0o600, &bolt.Options{
			Timeout: openTimeout,
			// The hashmap freelist keeps allocation O(1) as the file fragments,
			// where the array one degrades with size.
			FreelistType: bolt.FreelistMapType,
			// Growing the file re-maps it, which waits for every open read
			// transaction, a running backup included. Reserving address space
			// (not memory, not disk) keeps writes going during a backup.
			InitialMmapSize: 1 << 30,
		})
		return err
	})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("data file %s is in use by another process (is another petstore running on it?)", path)
	} else if err != nil {
		return nil, fmt.Errorf("data file %s: %w", path, err)
	}
	db := &DB{
		bolt:      bdb,
		path:      path,
		now:       opts.Now,
		log:       cmp.Or(opts.Logger, slog.New(slog.DiscardHandler)),
		keys:      make(map[[32]byte]store.StoredAPIKey),
		locks:     make(map[string]chan struct{}),
		queue:     make(chan *writeReq, maxGroup),
		committed: make(chan struct{}),
		pets:      newPetCache(),
		deliveryLeases: leases{until: map[int64]time.Time{}, fresh: bounded.New[int64, *freshDelivery](maxFresh, nil),
			hooks: bounded.New[int64, decodedWebhook](maxDecodedWebhooks, nil)},
	}
	if db.now == nil {
		db.now = time.Now
	}
	db.commit = db.group
	db.opened, _ = os.Stat(path)
	err = refuseDamaged(func() error {
		if err := db.init(); err != nil {
			return err
		}
		return db.openMarks()
	})
	if err != nil {
		bdb.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	marksCtx, stop := context.WithCancel(context.Background())
	db.marksStop, db.marksDone = stop, make(chan struct{})
	go func() {
		defer close(db.marksDone)
		store.EveryTick(marksCtx, marksEvery, db.observeMarks)
	}()
	go db.committer()
	return db, nil
}

// refuseDamaged runs fn, which opens the file: bbolt panics on a damaged
// page that checkFile does not read (the freelist, a bucket's), which
// becomes the start's one-line refusal instead of a goroutine dump.
func refuseDamaged(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("it is damaged (%v); restore it from a backup", p)
		}
	}()
	return fn()
}

// init creates the buckets and loads the in-memory caches.
func (db *DB) init() error {
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		// Lock records left by a process that died holding them: with the
		// file lock held, no other process holds one.
		if err := tx.DeleteBucket(bktCertLocks); err != nil && !errors.Is(err, berrors.ErrBucketNotFound) {
			return err
		}
		for _, name := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("create bucket %s: %w", name, err)
			}
		}
		return forgetWeaklySealed(tx)
	})
	if err != nil {
		return err
	}
	return db.loadCredentials()
}

// loadCredentials reads the API keys and the admin token's hash.
func (db *DB) loadCredentials() error {
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

// Close closes the file after the writes already queued are committed.
// Writes already answered are on disk; later ones fail.
func (db *DB) Close() error {
	db.closeMu.Lock()
	if !db.closed {
		db.closed = true
		close(db.queue)
	}
	db.closeMu.Unlock()
	<-db.committed
	db.closeMu.Lock()
	if db.marksStop != nil {
		db.marksStop()
		<-db.marksDone
		db.marksStop = nil
		db.observeMarks()
	}
	db.closeMu.Unlock()
	if stuck := db.stuck.Load(); stuck != nil {
		// bbolt's Close would wait for the writer lock forever.
		return fmt.Errorf("store: %s left open: %w", db.path, *stuck)
	}
	return db.bolt.Close()
}

// OnChange does nothing: no other instance changes the file.
func (db *DB) OnChange(func()) {}

func (db *DB) Path() string { return db.path }

// Ping reports whether the store can serve reads and writes. While the
// last write failed (a read-only or full disk), it tries a write of its
// own: a store that nobody writes to while it is not ready would otherwise
// never find out that it recovered.
func (db *DB) Ping(ctx context.Context) error {
	if err := db.Damaged(); err != nil {
		return err
	}
	if changed := db.changed.Load(); changed != nil {
		return *changed
	}
	err := db.read(ctx, func(tx *bolt.Tx) error {
		if tx.Bucket(bktPets) == nil {
			return errors.New("store: pets bucket missing")
		}
		return nil
	})
	if err != nil {
		return err
	}
	fault := db.fault.Load()
	if fault == nil {
		return nil
	}
	// A small write may still fit in pages the file already has, so the
	// probe alone would say ready while every larger write fails.
	if free, full := db.noRoom(); full && diskFull(*fault) {
		return store.ErrorWithCause(fmt.Errorf("%d bytes free: %w", free, *fault), store.EINSUFFICIENTSTORAGE, "writes fail: the disk is full")
	}
	if !db.probing.CompareAndSwap(false, true) {
		return fmt.Errorf("store: writes fail: %w", *fault)
	}
	defer db.probing.Store(false)
	err = db.write(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket(bktMeta).Put(metaWriteProbe, []byte(db.timestamp().Format(time.RFC3339)))
	})
	if err != nil {
		return fmt.Errorf("store: writes fail: %w", err)
	}
	return nil
}

// panicError describes a panic recovered from a transaction; a fault is
// told apart, as the runtime calls it a nil dereference.
func panicError(kind string, p any) error {
	if fault, ok := p.(interface{ Addr() uintptr }); ok {
		return fmt.Errorf("store: %s transaction faulted on the mapped data file at %#x (was the file cut, or did its disk fail?)", kind, fault.Addr())
	}
	return fmt.Errorf("store: %s transaction panicked: %v", kind, p)
}

// minFreeSpace is the free space a store degraded by a full disk waits for
// before it tries writing again.
const minFreeSpace = 1 << 20

// noRoom reports whether the data file's disk has less than minFreeSpace
// free, and how much.
func (db *DB) noRoom() (int64, bool) {
	free, ok := freeSpace(filepath.Dir(db.path))
	return free, ok && free < minFreeSpace
}

func diskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

var metaWriteProbe = []byte("write_probe")

// Damaged returns why the data file is damaged, or nil.
func (db *DB) Damaged() error {
	if d := db.damaged.Load(); d != nil {
		return *d
	}
	return nil
}

// OnDamaged registers fn to be told, once, of Damaged; it must not block.
func (db *DB) OnDamaged(fn func(error)) {
	db.onDamaged.Store(&fn)
	if err := db.Damaged(); err != nil {
		fn(err)
	}
}

func (db *DB) markDamaged(cause error) {
	err := fmt.Errorf("the data file %s is damaged (%w): restore it from a backup, then restart the service", db.path, cause)
	if db.damaged.CompareAndSwap(nil, &err) {
		if fn := db.onDamaged.Load(); fn != nil {
			(*fn)(err)
		}
	}
}

// update is bbolt's Update, made safe to call from the committer: a panic
// (bbolt's assertions, or a fault in the mapped file) becomes the error of
// the transaction, which is rolled back. It records whether the store can
// write. When the rollback after a panic panics as well (the freelist page
// may be what is damaged), bbolt's writer lock stays held and every later
// write would wait forever: from then on update fails at once instead.
func (db *DB) update(fn func(*bolt.Tx) error) (err error) {
	if stuck := cmp.Or(db.stuck.Load(), db.changed.Load()); stuck != nil {
		return *stuck
	}
	if fi, err := os.Stat(db.path); errors.Is(err, fs.ErrNotExist) || err == nil && db.opened != nil && !os.SameFile(fi, db.opened) {
		return db.changedUnder("its path names another file now, or none")
	}
	defer func() {
		switch {
		case err == nil:
			// Nor does a write that fit in the file's free pages end a full
			// disk (Ping).
			if f := db.fault.Load(); f != nil && diskFull(*f) {
				if _, full := db.noRoom(); full {
					break
				}
			}
			db.fault.Store(nil)
		case err != errRefused: // a refusal's rollback says nothing of the disk
			db.fault.Store(&err)
		}
	}()
	tx, err := db.bolt.Begin(true)
	if err != nil {
		return err
	}
	defer func() {
		if p := recover(); p != nil {
			err = panicError("write", p)
			db.markDamaged(err)
			if !rollbackAfterPanic(tx) {
				err = fmt.Errorf("%w; its rollback failed too, so the store takes no more writes until a restart", err)
				db.stuck.Store(&err)
			}
		}
	}()
	if id := int64(tx.ID()); id <= db.lastTx.Load() {
		_ = tx.Rollback()
		return db.changedUnder(fmt.Sprintf("its last transaction is %d, this process committed %d", id-1, db.lastTx.Load()))
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	id := int64(tx.ID())
	if err = tx.Commit(); err == nil {
		db.lastTx.Store(id)
	}
	return err
}

// changedUnder refuses every write from now on: the data file was put back
// (copied or moved over) under this process, which would give out its ids
// again, or acknowledge writes that a restart loses. A restart opens the
// file put back and finds the restore (openMarks).
func (db *DB) changedUnder(why string) error {
	err := fmt.Errorf("store: the data file %s changed under the running service (%s): was a backup put back without stopping it? Writes are refused until a restart", db.path, why)
	if db.changed.CompareAndSwap(nil, &err) {
		db.log.Error(err.Error())
	}
	return *db.changed.Load()
}

// rollbackAfterPanic rolls back a write transaction that panicked, and
// reports whether that released bbolt's writer lock.
func rollbackAfterPanic(tx *bolt.Tx) (released bool) {
	defer func() {
		if recover() != nil {
			released = false
		}
	}()
	_ = tx.Rollback() // ErrTxClosed when Commit rolled back itself before the panic
	return true
}

// read runs fn in a read transaction. A page of the mapped file that is gone
// (the file was cut) or damaged is an error, not a crash.
func (db *DB) read(ctx context.Context, fn func(tx *bolt.Tx) error) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			err = panicError("read", p)
			db.markDamaged(err)
		}
	}()
	return db.bolt.View(fn)
}

// timestamp is the store's notion of now: UTC, whole seconds, no monotonic
// reading, so that a value read back equals the one written.
func (db *DB) timestamp() time.Time {
	return db.now().UTC().Truncate(time.Second)
}

var _ store.Store = (*DB)(nil)
