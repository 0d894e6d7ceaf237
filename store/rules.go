package store

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// The rules every implementation of the store keeps the same way.

// Secret prefixes: a leaked secret says what it is (secret scanners, logs),
// and an API key cannot be mistaken for the admin token.
const (
	AdminTokenPrefix = "pat_"
	APIKeyPrefix     = "psk_"
)

// NewSecret returns prefix followed by 256 random bits in unpadded base64url.
func NewSecret(prefix string) string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return prefix + base64.RawURLEncoding.EncodeToString(b[:])
}

// NewAPIKey draws a new API key's secret, and returns the key as stored
// (the secret's SHA-256) and the secret.
func NewAPIKey(name string, createdAt time.Time) (StoredAPIKey, string) {
	secret := NewSecret(APIKeyPrefix)
	hash := sha256.Sum256([]byte(secret))
	prefix := secret[len(APIKeyPrefix) : len(APIKeyPrefix)+8]
	return StoredAPIKey{APIKey: APIKey{Name: name, Prefix: prefix, CreatedAt: createdAt}, SHA256: hash[:]}, secret
}

// AdminTokenOrNew returns the given admin token, or a new one, with its
// SHA-256. Stores draw it before their transaction so that every run of
// it stores the same token.
func AdminTokenOrNew(given string) (token string, hash [sha256.Size]byte) {
	token = given
	if token == "" {
		token = NewSecret(AdminTokenPrefix)
	}
	return token, sha256.Sum256([]byte(token))
}

// MaxDeploys is how many deploys the project keeps, newest first.
const MaxDeploys = 20

// AddDeploy puts d first, as the newest deploy, and keeps the newest
// MaxDeploys.
func (p *Project) AddDeploy(d Deploy) {
	p.Deploys = append([]Deploy{d}, p.Deploys...)
	if len(p.Deploys) > MaxDeploys {
		p.Deploys = p.Deploys[:MaxDeploys]
	}
}

// DefaultProject is the project of an instance whose settings were never saved.
func DefaultProject() Project {
	return Project{Name: "Petstore", Slug: "petstore", Plan: PlanFree, Deploys: []Deploy{}}
}

// ValidateProject guards what other parts rely on: the plan gates custom
// domains, and the slug becomes a DNS label of the default address.
func ValidateProject(p *Project) error {
	switch {
	case p.Name == "":
		return Errorf(EINVALID, "name is required")
	case !slices.Contains(plans, p.Plan):
		return Errorf(EINVALID, "plan %q is not one of %s", p.Plan, strings.Join(plans, ", "))
	case !dnsLabel.MatchString(p.Slug):
		return Errorf(EINVALID, "slug %q is not a DNS label (1 to 63 lowercase letters, digits and inner hyphens)", p.Slug)
	}
	return nil
}

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// DomainCursor is a place in the list of domains, which is ordered by when
// they were added, then by name: the last domain of a page.
type DomainCursor struct {
	AddedAt time.Time
	Name    string
}

func (d Domain) cursor() DomainCursor { return DomainCursor{AddedAt: d.AddedAt, Name: d.Name} }

// compare orders cursors as the list of domains is ordered.
func (c DomainCursor) compare(d DomainCursor) int {
	return cmp.Or(c.AddedAt.Compare(d.AddedAt), strings.Compare(c.Name, d.Name))
}

// SortDomains puts domains in the order of Admin.Domains: by when they were
// added, then by name.
func SortDomains(ds []Domain) {
	slices.SortFunc(ds, func(a, b Domain) int { return a.cursor().compare(b.cursor()) })
}

// DomainsPageOf answers DomainsPage from all the domains, which are few;
// a cursor stays valid when its domain is removed.
func DomainsPageOf(ctx context.Context, all func(context.Context) ([]Domain, error), limit int, after *DomainCursor) ([]Domain, *DomainCursor, error) {
	page, err := all(ctx)
	if err != nil {
		return nil, nil, err
	}
	if after != nil {
		page = page[sort.Search(len(page), func(i int) bool { return after.compare(page[i].cursor()) < 0 }):]
	}
	if n := (Page{Limit: limit}).Size(); len(page) > n {
		next := page[n-1].cursor()
		return page[:n], &next, nil
	}
	return page, nil, nil
}

// Size is the page size actually used: DefaultPageSize for 0, otherwise
// Limit clamped to 1..MaxPageSize.
func (p Page) Size() int {
	if p.Limit == 0 {
		return DefaultPageSize
	}
	return min(max(p.Limit, 1), MaxPageSize)
}

// NormalizeOrder applies a new order's default quantity (1) and refuses
// what no store may keep: an order with no pet, or a quantity out of bounds.
func NormalizeOrder(o Order) (Order, error) {
	if o.PetID <= 0 {
		return o, Errorf(EINVALID, "petId is required")
	}
	if o.Quantity == 0 {
		o.Quantity = 1
	}
	if o.Quantity < 1 || o.Quantity > MaxOrderQuantity {
		return o, Errorf(EINVALID, "quantity must be between 1 and %d, got %d", MaxOrderQuantity, o.Quantity)
	}
	return o, nil
}

// NormalizePet applies a pet's default status (available) and refuses a
// status that is not one of the three.
func NormalizePet(p Pet) (Pet, error) {
	if p.Status == "" {
		p.Status = StatusAvailable
	}
	if !p.Status.Valid() {
		return p, InvalidStatus(p.Status)
	}
	return p, nil
}

// InvalidStatus is the error for a pet status, in a pet or a filter, that
// is not one of the three.
func InvalidStatus(s PetStatus) *Error {
	return Errorf(EINVALID, "status %q is not one of available, pending, sold", s)
}

// PetImportTemplate checks an ImportPets call and returns the pet each
// imported pet starts from: its category and normalized status.
func PetImportTemplate(categoryID int64, n int, status PetStatus) (Pet, error) {
	in, err := NormalizePet(Pet{CategoryID: categoryID, Status: status})
	if err != nil {
		return in, err
	}
	if n < 0 {
		return in, Errorf(EINVALID, "cannot import %d pets", n)
	}
	return in, nil
}

// The refusals below are worded once, so that both stores answer alike.

// NotFound answers for a record that is not there: "pet 3 not found".
func NotFound(what string, id int64) *Error {
	return Errorf(ENOTFOUND, "%s %d not found", what, id)
}

// CategoryMissing refuses a pet in a category that does not exist.
func CategoryMissing(id int64) *Error {
	return Errorf(EUNPROCESSABLE, "category %d does not exist", id)
}

// CategoryInUse refuses to delete a category that n pets belong to.
func CategoryInUse(id int64, n int) *Error {
	pets := "pets"
	if n == 1 {
		pets = "pet"
	}
	return Errorf(ECONFLICT, "category %d still has %d %s", id, n, pets)
}

// CheckStock refuses a stock out of bounds.
func CheckStock(qty int) error {
	if qty < 0 || qty > MaxStock {
		return Errorf(EINVALID, "quantity must be between 0 and %d, got %d", MaxStock, qty)
	}
	return nil
}

// OrderedPetMissing refuses an order for a pet that does not exist.
func OrderedPetMissing(id int64) *Error {
	return Errorf(EUNPROCESSABLE, "pet %d does not exist", id)
}

// CheckOrderable refuses an order of qty units of a pet that is sold or
// has less stock.
func CheckOrderable(petID int64, status PetStatus, stock, qty int) error {
	if status == StatusSold {
		return Errorf(ECONFLICT, "pet %d is sold", petID)
	}
	if stock < qty {
		return Errorf(EINSUFFICIENTSTOCK, "pet %d has %d in stock, the order asks for %d", petID, stock, qty)
	}
	return nil
}

// OrderComplete refuses to cancel an order that is complete.
func OrderComplete(id int64) *Error {
	return Errorf(ECONFLICT, "order %d is complete and cannot be cancelled", id)
}

// DomainNotAttached answers for a domain that is not attached.
func DomainNotAttached(name string) *Error {
	return Errorf(ENOTFOUND, "domain %s is not attached", name)
}

// DomainAttached refuses to attach a domain twice.
func DomainAttached(name string) *Error {
	return Errorf(EDOMAINEXISTS, "%s is attached already", name)
}

// KeyMissing answers for a key of the key/value space that is not there.
func KeyMissing(key string) *Error {
	return Errorf(ENOTFOUND, "key %q does not exist", key)
}

// LockNotHeld refuses to release a lock that this process does not hold.
func LockNotHeld(name string) *Error {
	return Errorf(ECONFLICT, "lock %q is not held", name)
}

// Forget drops the redirects from or to a domain that was removed and
// clears it as primary: settings never name a domain that is gone.
func (s *Settings) Forget(name string) {
	s.Domains.Redirects = slices.DeleteFunc(s.Domains.Redirects, func(r Redirect) bool { return r.From == name || r.To == name })
	if s.Domains.Primary == name {
		s.Domains.Primary = ""
	}
}

// ByName is the domains by their names, as UpdateSettings gives them.
func ByName(ds []Domain) map[string]Domain {
	m := make(map[string]Domain, len(ds))
	for _, d := range ds {
		m[d.Name] = d
	}
	return m
}

// Both stores keep the project, the settings and each domain as JSON,
// with empty lists rather than null.

// MarshalDomain gives the JSON a domain is stored as.
func MarshalDomain(d *Domain) ([]byte, error) {
	if d.Records == nil {
		d.Records = []DNSRecord{}
	}
	return json.Marshal(d)
}

// UnmarshalDomain reads a stored domain.
func UnmarshalDomain(name string, data []byte) (Domain, error) {
	var d Domain
	if err := json.Unmarshal(data, &d); err != nil {
		return Domain{}, fmt.Errorf("domain %s: %w", name, err)
	}
	return d, nil
}

// UnmarshalProject reads the stored project: the default project when
// none was stored (data is nil or null).
func UnmarshalProject(data []byte) (Project, error) {
	p := DefaultProject()
	if err := unmarshalSingleton("project", data, &p); err != nil {
		return Project{}, err
	}
	if p.Deploys == nil {
		p.Deploys = []Deploy{}
	}
	return p, nil
}

// UnmarshalSettings reads the stored settings: empty ones when none were
// stored (data is nil or null).
func UnmarshalSettings(data []byte) (Settings, error) {
	var s Settings
	if err := unmarshalSingleton("settings", data, &s); err != nil {
		return Settings{}, err
	}
	if s.Domains.Redirects == nil {
		s.Domains.Redirects = []Redirect{}
	}
	return s, nil
}

func unmarshalSingleton(name string, data []byte, v any) error {
	if data == nil {
		return nil
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("decode %s: %w", name, err)
	}
	return nil
}

// UnstorableText says why s is text that not every store can keep, or "":
// PostgreSQL refuses U+0000 and bytes that are not UTF-8, which a bbolt
// file would keep, so that the data could never move to PostgreSQL.
func UnstorableText(s string) string {
	if !utf8.ValidString(s) {
		return "is not valid UTF-8"
	}
	if strings.IndexByte(s, 0) >= 0 {
		return "contains U+0000 (NUL), which the service does not store"
	}
	return ""
}
