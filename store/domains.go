package store

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Domains are keyed by their normalised name; settings live in the meta
// bucket. Both are few (a project has a handful of domains, a platform at
// most thousands), so lists load them whole.
var (
	bktDomains   = []byte("domains")
	metaSettings = []byte("settings")
)

func init() { allBuckets = append(allBuckets, bktDomains) }

// AddDomain stores a new domain. EDOMAINEXISTS when the name is attached.
func (db *DB) AddDomain(ctx context.Context, d *Domain) error {
	if d.AddedAt.IsZero() {
		d.AddedAt = db.timestamp()
	}
	var exists bool
	err := db.write(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bktDomains)
		if exists = b.Get([]byte(d.Name)) != nil; exists {
			return nil
		}
		return putDomain(b, d)
	})
	if err == nil && exists {
		return Errorf(EDOMAINEXISTS, "%s is attached already", d.Name)
	}
	return err
}

// Domain returns one domain by its normalised name.
func (db *DB) Domain(ctx context.Context, name string) (Domain, error) {
	var d Domain
	err := db.read(ctx, func(tx *bolt.Tx) error {
		var err error
		d, err = getDomain(tx.Bucket(bktDomains), name)
		return err
	})
	return d, err
}

// Domains returns every attached domain, oldest first (by name among those
// added in the same second).
func (db *DB) Domains(ctx context.Context) ([]Domain, error) {
	var out []Domain
	err := db.read(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket(bktDomains).ForEach(func(k, v []byte) error {
			var d Domain
			if err := json.Unmarshal(v, &d); err != nil {
				return corrupt(fmt.Errorf("domain %s: %w", k, err))
			}
			out = append(out, d)
			return nil
		})
	})
	sort.Slice(out, func(i, j int) bool { return out[i].cursor().before(out[j].cursor()) })
	return out, err
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

// DomainsPage returns at most limit domains (1..MaxPageSize, 0 for
// DefaultPageSize) that come after the cursor (nil for the first page), in
// the order of Domains, and the cursor of the next page (nil on the last).
// Domains are few, so it reads them all; a cursor stays valid when its
// domain is removed.
func (db *DB) DomainsPage(ctx context.Context, limit int, after *DomainCursor) ([]Domain, *DomainCursor, error) {
	all, err := db.Domains(ctx)
	if err != nil {
		return nil, nil, err
	}
	page, next := PageOfDomains(all, limit, after)
	return page, next, nil
}

// PageOfDomains cuts one page out of all the domains, in the order of
// Domains: what DomainsPage answers, for every store.
func PageOfDomains(all []Domain, limit int, after *DomainCursor) ([]Domain, *DomainCursor) {
	start := 0
	if after != nil {
		start = sort.Search(len(all), func(i int) bool { return after.before(all[i].cursor()) })
	}
	page := all[start:]
	if n := (Page{Limit: limit}).limit(); len(page) > n {
		page = page[:n]
		next := page[n-1].cursor()
		return page, &next
	}
	return page, nil
}

// UpdateDomain applies fn to a domain and saves it in one transaction. fn may
// run more than once, each time on a fresh copy; its error is returned as
// it is and nothing is saved. ENOTFOUND when the domain is not attached
// (it may have been removed meanwhile).
func (db *DB) UpdateDomain(ctx context.Context, name string, fn func(*Domain) error) (Domain, error) {
	var d Domain
	var fnErr error
	err := db.write(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bktDomains)
		var err error
		if d, fnErr = getDomain(b, name); fnErr != nil {
			if ErrorCode(fnErr) == EINTERNAL {
				return fnErr
			}
			return nil
		}
		if fnErr = fn(&d); fnErr != nil {
			return nil
		}
		d.Name = name
		err = putDomain(b, &d)
		return err
	})
	if err == nil {
		err = fnErr
	}
	if err != nil {
		return Domain{}, err
	}
	return d, nil
}

// RemoveDomain detaches a domain and, in the same transaction, drops the
// redirects from or to it and clears it as primary: settings never name a
// domain that is gone.
func (db *DB) RemoveDomain(ctx context.Context, name string) error {
	var missing bool
	err := db.write(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bktDomains)
		if missing = b.Get([]byte(name)) == nil; missing {
			return nil
		}
		if err := b.Delete([]byte(name)); err != nil {
			return err
		}
		s, err := getSettings(tx)
		if err != nil {
			return err
		}
		kept := s.Domains.Redirects[:0]
		for _, r := range s.Domains.Redirects {
			if r.From != name && r.To != name {
				kept = append(kept, r)
			}
		}
		s.Domains.Redirects = kept
		if s.Domains.Primary == name {
			s.Domains.Primary = ""
		}
		return putSettings(tx, &s)
	})
	if err == nil && missing {
		return Errorf(ENOTFOUND, "domain %s is not attached", name)
	}
	return err
}

// Settings returns the project's settings (empty when never saved).
func (db *DB) Settings(ctx context.Context) (Settings, error) {
	var s Settings
	err := db.read(ctx, func(tx *bolt.Tx) error {
		var err error
		s, err = getSettings(tx)
		return err
	})
	return s, err
}

// UpdateSettings applies fn to the settings and saves them in one
// transaction, so that checks fn makes against the attached domains hold
// when the settings are saved. fn may run more than once; its error is
// returned as it is and nothing is saved.
func (db *DB) UpdateSettings(ctx context.Context, fn func(s *Settings, attached map[string]Domain) error) (Settings, error) {
	var s Settings
	var fnErr error
	err := db.write(ctx, func(tx *bolt.Tx) error {
		var err error
		if s, err = getSettings(tx); err != nil {
			return err
		}
		attached := map[string]Domain{}
		err = tx.Bucket(bktDomains).ForEach(func(k, v []byte) error {
			var d Domain
			if err := json.Unmarshal(v, &d); err != nil {
				return corrupt(fmt.Errorf("domain %s: %w", k, err))
			}
			attached[d.Name] = d
			return nil
		})
		if err != nil {
			return err
		}
		if fnErr = fn(&s, attached); fnErr != nil {
			return nil
		}
		return putSettings(tx, &s)
	})
	if err == nil {
		err = fnErr
	}
	if err != nil {
		return Settings{}, err
	}
	return s, nil
}

func getDomain(b *bolt.Bucket, name string) (Domain, error) {
	data := b.Get([]byte(name))
	if data == nil {
		return Domain{}, Errorf(ENOTFOUND, "domain %s is not attached", name)
	}
	var d Domain
	if err := json.Unmarshal(data, &d); err != nil {
		return Domain{}, corrupt(fmt.Errorf("domain %s: %w", name, err))
	}
	return d, nil
}

func putDomain(b *bolt.Bucket, d *Domain) error {
	if d.Records == nil {
		d.Records = []DNSRecord{}
	}
	data, err := json.Marshal(d)
	if err != nil {
		return err
	}
	return b.Put([]byte(d.Name), data)
}

func getSettings(tx *bolt.Tx) (Settings, error) {
	var s Settings
	if data := tx.Bucket(bktMeta).Get(metaSettings); data != nil {
		if err := json.Unmarshal(data, &s); err != nil {
			return Settings{}, corrupt(fmt.Errorf("settings: %w", err))
		}
	}
	if s.Domains.Redirects == nil {
		s.Domains.Redirects = []Redirect{}
	}
	return s, nil
}

func putSettings(tx *bolt.Tx, s *Settings) error {
	data, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return tx.Bucket(bktMeta).Put(metaSettings, data)
}
