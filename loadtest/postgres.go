package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"petstore/store"
	"petstore/store/postgres"
	"petstore/store/postgres/pgtest"
)

// postgresStore starts a private PostgreSQL cluster with durable defaults
// (as bbolt fsyncs every commit), seeds it like the small store, starts the
// binary on it and adds the rows of single pets, creates and orders, beside
// -postgres-vs's. Without PostgreSQL the rows are skipped, with a note.
func (b *bench) postgresStore(ctx context.Context) error {
	cluster, err := pgtest.Start(true)
	if errors.Is(err, pgtest.ErrNotInstalled) {
		b.pgSkipped = err.Error()
		b.progress("PostgreSQL rows skipped: %v", err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("starting a private PostgreSQL cluster: %w", err)
	}
	b.pgCluster = cluster
	jobs, err := b.postgresJobs(ctx, b.bin, "petstore on PostgreSQL", "")
	if err != nil {
		return err
	}
	return b.addBeside(ctx, jobs, "-postgres-vs", b.cfg.postgresVs, &b.pgVs, func(o otherRevision) ([]job, error) {
		return b.postgresJobs(ctx, o.bin, "petstore "+o.rev+" on PostgreSQL", ", "+o.rev)
	})
}

// postgresJobs seeds a new database with this revision's store (older
// binaries run on its schema: later migrations only add tables and
// defaulted columns), starts bin on it, and returns its rows' jobs.
func (b *bench) postgresJobs(ctx context.Context, bin, name, suffix string) ([]job, error) {
	url, err := b.pgCluster.NewDatabase(ctx)
	if err != nil {
		return nil, err
	}
	db, err := postgres.Open(ctx, url, store.Options{})
	if err != nil {
		return nil, err
	}
	catID, _, err := b.seedStore(ctx, db, "PostgreSQL", b.cfg.pets)
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL: %w", err)
	}
	p, err := b.startPetstore(ctx, name, bin, nil, "--database", url, "--admin-token", b.adminToken)
	if err != nil {
		return nil, err
	}
	p.catID, p.db = catID, b.pgCluster
	jobs, err := b.apiJobs(ctx, p, onPostgres+suffix, false)
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL: %w", err)
	}
	return jobs, nil
}

func dbCPUCheck(r *loadResult) check {
	v := micros(r.cpuPerReq(dbCPU))
	return check{on: "PostgreSQL CPU/req", value: v, ok: v > 0, unit: "µs"}
}

// revision names the commit checked out in dir, for the rows' labels.
func revision(ctx context.Context, dir string) string {
	out, err := exec.CommandContext(ctx, "git", "-C", dir, "rev-parse", "--short", "HEAD").Output()
	if rev := strings.TrimSpace(string(out)); err == nil && rev != "" {
		return rev
	}
	return filepath.Base(dir)
}

// postgresReport adds the PostgreSQL rows, each judged against the same
// run's bbolt row and -postgres-vs's row.
func (b *bench) postgresReport(r *report) {
	if b.pgSkipped != "" {
		r.lines = append(r.lines, line{label: "PostgreSQL rows", on: "skipped: " + b.pgSkipped, verdict: "skipped"})
		return
	}
	for _, label := range []string{labelPGGetPet, labelPGPostPets, labelPGOrders} {
		res := b.loads[label]
		var checks []check
		if !b.cfg.onlyPostgres {
			checks = append(checks, byKind(label, res, b.loads[strings.TrimSuffix(label, onPostgres)], "bbolt", "", 0))
		}
		checks = append(checks, dbCPUCheck(res))
		if b.pgVs == "" {
			r.load(label, res, checks...)
			continue
		}
		other := label + ", " + b.pgVs
		vs := b.loads[other]
		checks = append(checks, vsRevision(label, res, vs, b.pgVs)...)
		checks = append(checks, versus("PostgreSQL CPU/req vs "+b.pgVs, float64(res.cpuPerReq(dbCPU)), float64(vs.cpuPerReq(dbCPU)), "", 0))
		r.load(label, res, checks...)
		r.load(other, vs, check{on: "the revision of -postgres-vs", ok: vs != nil}, dbCPUCheck(vs))
	}
	r.notes = append(r.notes, fmt.Sprintf("PostgreSQL rows: the same requests against a server started with --database on a private PostgreSQL cluster on this machine with its durable defaults (fsync, synchronous commits), seeded with %s pets; CPU/req is the petstore process's only; 'PostgreSQL CPU/req' is the server's processes' (its postmaster, its children alive and ended) over the same slices",
		humanCount(b.cfg.pets)))
	if b.pgVs != "" {
		r.notes = append(r.notes, fmt.Sprintf("rows ending with %s: the binary built from -postgres-vs (%s), on a database of its own in the same cluster, seeded by this revision's store; each of its rows ran right after this revision's row of the same request, in every round",
			b.pgVs, b.cfg.postgresVs))
	}
}
