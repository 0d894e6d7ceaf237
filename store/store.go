// Package store owns persistence: the Store interface, the entity types,
// the error codes and the rules both stores (bbolt and PostgreSQL) share.
// It knows nothing of HTTP, DNS or TLS.
package store

import (
	"context"
	"log/slog"
	"time"
)

// Store is what the handlers and the domains use. It has two
// implementations: the bbolt file of one instance (boltstore), and a
// PostgreSQL database that several instances share (store/postgres). What
// only one store can do (a backup of the bbolt file) is a method of its own.
type Store interface {
	Pets
	Admin
	KeyValue
	Events
	Idempotency

	// Ping reports whether the store answers.
	Ping(ctx context.Context) error
	// Size is the size in bytes of the data, as a backup would have it.
	Size(ctx context.Context) (int64, error)
	// OnChange registers fn to run after an instance changed credentials,
	// domains, settings or the project; it may run inside a write, so it
	// must not block.
	OnChange(fn func())
	Close() error
}

// Pets are the entities of the public API. The writes of one existing
// record take the Condition it must meet (versions.go). The lists give one
// page in id order and the After of the next page (0 on the last).
type Pets interface {
	CreatePet(ctx context.Context, p *Pet, key *IdempotentWrite) error
	Pet(ctx context.Context, id int64) (Pet, error)
	// PetJSON returns the pet in its API form and its version.
	PetJSON(ctx context.Context, id int64) ([]byte, int64, error)
	ReplacePet(ctx context.Context, p *Pet, cond Condition) error
	DeletePet(ctx context.Context, id int64, cond Condition) error
	ListPets(ctx context.Context, f PetFilter) ([]Pet, int64, error)

	CreateCategory(ctx context.Context, c *Category, key *IdempotentWrite) error
	Category(ctx context.Context, id int64) (Category, error)
	ReplaceCategory(ctx context.Context, c *Category, cond Condition) error
	DeleteCategory(ctx context.Context, id int64, cond Condition) error
	ListCategories(ctx context.Context, p Page) ([]Category, int64, error)

	InventoryItem(ctx context.Context, petID int64) (InventoryItem, error)
	SetStock(ctx context.Context, petID int64, qty int, cond Condition) (InventoryItem, error)
	ListInventory(ctx context.Context, f InventoryFilter) ([]InventoryItem, int64, error)

	PlaceOrder(ctx context.Context, o *Order, key *IdempotentWrite) error
	Order(ctx context.Context, id int64) (Order, error)
	UpdateOrder(ctx context.Context, id int64, u OrderUpdate, cond Condition) (Order, error)
	CancelOrder(ctx context.Context, id int64, cond Condition) error
	ListOrders(ctx context.Context, f OrderFilter) ([]Order, int64, error)
}

// Admin is the project, its credentials and its custom domains. The
// updates apply fn in one transaction; fn may run more than once, and its
// error leaves everything as it was.
type Admin interface {
	// EnsureAdminToken stores the given admin token's hash, or, when none
	// is given nor stored, a new token's, which it returns (else "").
	EnsureAdminToken(ctx context.Context, given string) (string, error)
	CheckAdminToken(token string) bool

	CreateAPIKey(ctx context.Context, name string, key *IdempotentWrite) (APIKey, string, error)
	APIKeys(ctx context.Context, p Page) ([]APIKey, int64, error)
	RevokeAPIKey(ctx context.Context, id int64) error
	AuthenticateAPIKey(secret string) (APIKey, bool)

	Project(ctx context.Context) (Project, error)
	UpdateProject(ctx context.Context, fn func(*Project) error) (Project, error)
	RecordDeploy(ctx context.Context, d Deploy) (Deploy, error)

	AddDomain(ctx context.Context, d *Domain, key *IdempotentWrite) error
	Domain(ctx context.Context, name string) (Domain, error)
	Domains(ctx context.Context) ([]Domain, error)
	DomainsPage(ctx context.Context, limit int, after *DomainCursor) ([]Domain, *DomainCursor, error)
	UpdateDomain(ctx context.Context, name string, fn func(*Domain) error) (Domain, error)
	RemoveDomain(ctx context.Context, name string) error
	Settings(ctx context.Context) (Settings, error)
	UpdateSettings(ctx context.Context, fn func(s *Settings, attached map[string]Domain) error) (Settings, error)
}

// KeyValue is the space of certificates, their keys and the ACME account,
// with the locks that keep two instances from ordering one certificate at
// once; domains adapts it to certmagic.
type KeyValue interface {
	KVPut(ctx context.Context, key string, value []byte) error
	// KVGet answers ENOTFOUND for a missing key.
	KVGet(ctx context.Context, key string) ([]byte, error)
	KVStat(ctx context.Context, key string) (KVInfo, error)
	// KVDelete deletes key and every key under key + "/".
	KVDelete(ctx context.Context, key string) error
	// KVKeys returns the keys under prefix + "/" (every key for ""), sorted.
	KVKeys(ctx context.Context, prefix string) ([]string, error)
	Lock(ctx context.Context, name string) error
	TryLock(ctx context.Context, name string) (bool, error)
	Unlock(ctx context.Context, name string) error
}

// Options tunes a store. The zero value is what production uses.
type Options struct {
	// Now is the clock for timestamps the store assigns; nil means time.Now.
	Now func() time.Time
	// Logger is where a store logs the failures of its own background
	// work, which no caller sees returned; nil discards them.
	Logger *slog.Logger
}
