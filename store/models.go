package store

import (
	"slices"
	"time"
)

// PetStatus is the one enumerated state of the API. An inventory entry always
// carries its pet's status.
type PetStatus string

// The pet statuses, as openapi.yaml's PetStatus lists them.
const (
	StatusAvailable PetStatus = "available"
	StatusPending   PetStatus = "pending"
	StatusSold      PetStatus = "sold"
)

// Valid reports whether s is one of the statuses the API defines.
func (s PetStatus) Valid() bool {
	return s == StatusAvailable || s == StatusPending || s == StatusSold
}

// Pet is an animal for sale. Its JSON form is the API's Pet schema, and it is
// stored in that form so that a read can be served without re-encoding.
type Pet struct {
	ID         int64     `json:"id"`
	Name       string    `json:"name"`
	CategoryID int64     `json:"categoryId"`
	Status     PetStatus `json:"status"`
	// Version counts the pet's writes, from 1 (see versions.go); it is
	// kept beside the pet's JSON, not in it. Lists leave it 0.
	Version int64 `json:"-"`
}

// Category groups pets (dogs, cats, rabbits).
type Category struct {
	ID          int64  `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Version counts the category's writes, as Pet.Version does.
	Version int64 `json:"-"`
}

// Order is a purchase of Quantity units of one pet. Placing it takes the
// stock; cancelling an incomplete one gives the stock back.
type Order struct {
	ID       int64      `json:"id"`
	PetID    int64      `json:"petId"`
	Quantity int        `json:"quantity"`
	ShipDate *time.Time `json:"shipDate,omitempty"`
	Complete bool       `json:"complete"`
	// Version counts the order's writes, as Pet.Version does.
	Version int64 `json:"-"`
}

// InventoryItem is the stock of one pet. Every pet has exactly one.
type InventoryItem struct {
	PetID    int64     `json:"petId"`
	Quantity int       `json:"quantity"`
	Status   PetStatus `json:"status"`
}

// Limits the store enforces itself, whatever the caller validated before.
const (
	MaxOrderQuantity = 10000
	MaxStock         = 1000000
	MaxPageSize      = 100
	DefaultPageSize  = 20
)

// Page selects one page of a list ordered by id: at most Limit items whose id
// is greater than After. Limit 0 means DefaultPageSize.
type Page struct {
	Limit int
	After int64
}

// PetFilter selects pets for ListPets. Zero fields do not filter.
type PetFilter struct {
	Status     PetStatus
	CategoryID int64
	Page
}

// OrderFilter selects orders for ListOrders. Nil or zero fields do not filter.
type OrderFilter struct {
	PetID    int64
	Complete *bool
	Page
}

// InventoryFilter selects inventory entries for ListInventory.
type InventoryFilter struct {
	Status PetStatus
	Page
}

// OrderUpdate holds the fields of an order that may change after it is
// placed. Nil fields are left as they are.
type OrderUpdate struct {
	ShipDate *time.Time
	Complete *bool
}

// APIKey is a credential for the API's writes. The secret itself is never
// stored: only its SHA-256, which is enough because secrets are 256 random bits.
type APIKey struct {
	ID        int64     `json:"id"`
	Name      string    `json:"name"`
	Prefix    string    `json:"prefix"`
	CreatedAt time.Time `json:"createdAt"`
}

// IssuedAPIKey is a new API key with its secret: the answer to its
// creation, the only time the secret is seen (an Idempotency-Key's kept
// answer holds it sealed).
type IssuedAPIKey struct {
	APIKey
	Secret string `json:"secret"`
}

// Plans of the project, lowest first.
const (
	PlanFree       = "free"
	PlanPro        = "pro"
	PlanEnterprise = "enterprise"
)

// plans lists the plans, lowest first, for ValidateProject.
var plans = []string{PlanFree, PlanPro, PlanEnterprise}

// PlanHasCustomDomains reports whether a project on plan may attach custom
// domains: Pro and above.
func PlanHasCustomDomains(plan string) bool {
	return slices.Index(plans, plan) >= slices.Index(plans, PlanPro)
}

// Project is the one project this instance serves, with its settings.
type Project struct {
	Name    string   `json:"name"`
	Slug    string   `json:"slug"`
	Plan    string   `json:"plan"`
	Deploys []Deploy `json:"deploys"`
}

// DeploySucceeded is the Status of a deploy that went out: custom domains
// need one.
const DeploySucceeded = "succeeded"

// Deploy records a start of a new binary or spec: the spec it published
// and the build that started.
type Deploy struct {
	ID         int64     `json:"id"`
	Version    string    `json:"version"`
	SpecSHA256 string    `json:"specSha256"`
	Status     string    `json:"status"`
	At         time.Time `json:"at"`
	// Build is zero in deploys recorded before builds were.
	Build DeployBuild `json:"build,omitzero"`
}

// DeployBuild is the build of the binary that a deploy started: its module
// version and the VCS revision, from Go's build information.
type DeployBuild struct {
	Version   string `json:"version"`
	Revision  string `json:"revision,omitempty"`
	Time      string `json:"time,omitempty"`
	Modified  bool   `json:"modified"`
	GoVersion string `json:"goVersion"`
}
