package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"sort"
	"time"
)

// The rules every implementation of the store keeps the same way.

// Secret prefixes: a leaked secret says what it is (secret scanners, logs),
// and an API key cannot be mistaken for the admin token.
const (
	AdminTokenPrefix = "pat_"
	APIKeyPrefix     = "psk_"
)

// NewSecret returns prefix followed by 256 random bits in unpadded base64url.
func NewSecret(prefix string) (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return prefix + base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// AdminTokenOrNew returns the given admin token, or a new one when none is
// given, with the SHA-256 hash that is stored in its place. Stores draw it
// before their transaction so that every run of it stores the same token.
func AdminTokenOrNew(given string) (token string, hash [sha256.Size]byte, err error) {
	token = given
	if token == "" {
		if token, err = NewSecret(AdminTokenPrefix); err != nil {
			return "", hash, err
		}
	}
	return token, sha256.Sum256([]byte(token)), nil
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
	case p.Plan != PlanFree && p.Plan != PlanPro && p.Plan != PlanEnterprise:
		return Errorf(EINVALID, "plan %q is not one of free, pro, enterprise", p.Plan)
	case !isDNSLabel(p.Slug):
		return Errorf(EINVALID, "slug %q is not a DNS label (1 to 63 lowercase letters, digits and inner hyphens)", p.Slug)
	}
	return nil
}

func isDNSLabel(s string) bool {
	if len(s) < 1 || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// DomainCursor is a place in the list of domains, which is ordered by when
// they were added, then by name: the last domain of a page.
type DomainCursor struct {
	AddedAt time.Time
	Name    string
}

func (d Domain) cursor() DomainCursor { return DomainCursor{AddedAt: d.AddedAt, Name: d.Name} }

// before reports whether c comes before d in the list.
func (c DomainCursor) before(d DomainCursor) bool {
	if !c.AddedAt.Equal(d.AddedAt) {
		return c.AddedAt.Before(d.AddedAt)
	}
	return c.Name < d.Name
}

// SortDomains puts domains in the order of Admin.Domains: by when they were
// added, then by name.
func SortDomains(ds []Domain) {
	sort.Slice(ds, func(i, j int) bool { return ds[i].cursor().before(ds[j].cursor()) })
}

// PageOfDomains cuts one page out of all the domains, in the order of
// Domains: what DomainsPage answers, for every store.
func PageOfDomains(all []Domain, limit int, after *DomainCursor) ([]Domain, *DomainCursor) {
	start := 0
	if after != nil {
		start = sort.Search(len(all), func(i int) bool { return after.before(all[i].cursor()) })
	}
	page := all[start:]
	if n := (Page{Limit: limit}).Size(); len(page) > n {
		page = page[:n]
		next := page[n-1].cursor()
		return page, &next
	}
	return page, nil
}

// DomainsPageOf answers DomainsPage for a store whose domains are listed
// by all: domains are few, so it reads them all; a cursor stays valid when
// its domain is removed.
func DomainsPageOf(ctx context.Context, all func(context.Context) ([]Domain, error), limit int, after *DomainCursor) ([]Domain, *DomainCursor, error) {
	domains, err := all(ctx)
	if err != nil {
		return nil, nil, err
	}
	page, next := PageOfDomains(domains, limit, after)
	return page, next, nil
}

// Size is the page size actually used: DefaultPageSize for 0, otherwise
// Limit clamped to 1..MaxPageSize.
func (p Page) Size() int {
	switch {
	case p.Limit == 0:
		return DefaultPageSize
	case p.Limit < 1:
		return 1
	case p.Limit > MaxPageSize:
		return MaxPageSize
	}
	return p.Limit
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
