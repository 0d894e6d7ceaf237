package store

import (
	"context"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// MaxDeploys is how many deploys the project keeps, newest first.
const MaxDeploys = 20

var metaProject = []byte("project")

// defaultProject is the project of an instance whose settings were never saved.
func defaultProject() Project {
	return Project{Name: "Petstore", Slug: "petstore", Plan: PlanFree, Deploys: []Deploy{}}
}

// Project returns the project's settings.
func (db *DB) Project(ctx context.Context) (Project, error) {
	var p Project
	err := db.read(ctx, func(tx *bolt.Tx) error {
		var err error
		p, err = getProject(tx)
		return err
	})
	return p, err
}

// UpdateProject applies fn to the project's settings and saves them, in one
// transaction. fn may run more than once, each time on a fresh copy; an error
// from it is returned as it is, and nothing is saved.
func (db *DB) UpdateProject(ctx context.Context, fn func(*Project) error) (Project, error) {
	var p Project
	var fnErr error
	err := db.write(ctx, func(tx *bolt.Tx) error {
		fnErr = nil
		var err error
		if p, err = getProject(tx); err != nil {
			return err
		}
		if fnErr = fn(&p); fnErr != nil {
			return nil
		}
		if err := validateProject(&p); err != nil {
			return err
		}
		return putProject(tx, &p)
	})
	if err == nil {
		err = fnErr
	}
	if err != nil {
		return Project{}, err
	}
	return p, nil
}

// RecordDeploy adds a deploy to the project with a new id (and the current
// time when d.At is zero), keeping the newest MaxDeploys.
func (db *DB) RecordDeploy(ctx context.Context, d Deploy) (Deploy, error) {
	if d.At.IsZero() {
		d.At = db.timestamp()
	}
	var rec Deploy
	err := db.write(ctx, func(tx *bolt.Tx) error {
		p, err := getProject(tx)
		if err != nil {
			return err
		}
		rec = d
		// The meta bucket's sequence numbers deploys and nothing else.
		if rec.ID, err = nextID(tx.Bucket(bktMeta)); err != nil {
			return err
		}
		p.Deploys = append([]Deploy{rec}, p.Deploys...)
		if len(p.Deploys) > MaxDeploys {
			p.Deploys = p.Deploys[:MaxDeploys]
		}
		return putProject(tx, &p)
	})
	if err != nil {
		return Deploy{}, err
	}
	return rec, nil
}

func getProject(tx *bolt.Tx) (Project, error) {
	data := tx.Bucket(bktMeta).Get(metaProject)
	if data == nil {
		return defaultProject(), nil
	}
	var p Project
	if err := json.Unmarshal(data, &p); err != nil {
		return Project{}, fmt.Errorf("decode project: %w", err)
	}
	if p.Deploys == nil {
		p.Deploys = []Deploy{}
	}
	return p, nil
}

func putProject(tx *bolt.Tx, p *Project) error {
	data, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return tx.Bucket(bktMeta).Put(metaProject, data)
}

// validateProject guards what other parts rely on: the plan gates custom
// domains, and the slug becomes a DNS label of the default address.
func validateProject(p *Project) error {
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
