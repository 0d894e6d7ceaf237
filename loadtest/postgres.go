package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

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
	if b.cfg.postgresVs == "" {
		b.jobs = append(b.jobs, jobs...)
		return nil
	}
	o, err := b.buildOther(ctx, b.cfg.postgresVs)
	if err != nil {
		return fmt.Errorf("-postgres-vs: %w", err)
	}
	b.pgVs = o.rev
	vs, err := b.postgresJobs(ctx, o.bin, "petstore "+b.pgVs+" on PostgreSQL", ", "+b.pgVs)
	if err != nil {
		return fmt.Errorf("-postgres-vs %s: %w", b.pgVs, err)
	}
	b.jobs = append(b.jobs, beside(jobs, vs)...)
	return nil
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
	p, _, err := b.startRevision(ctx, name, bin, nil, "--database", url, "--admin-token", b.adminToken)
	if err != nil {
		return nil, err
	}
	jobs, err := b.apiJobs(ctx, p, newClient(b.cfg.connections), b.cfg.pets, catID, onPostgres+suffix, false)
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL: %w", err)
	}
	for i := range jobs {
		jobs[i].slice = b.withDBCPU(jobs[i].slice)
	}
	return jobs, nil
}

// withDBCPU adds the PostgreSQL server's CPU time to each slice; rows take
// turns, so it is this row's.
func (b *bench) withDBCPU(slice func(ctx context.Context, d time.Duration) (*loadResult, error)) func(ctx context.Context, d time.Duration) (*loadResult, error) {
	return func(ctx context.Context, d time.Duration) (*loadResult, error) {
		cpu0, err := b.pgCluster.CPU()
		if err != nil {
			return nil, err
		}
		res, err := slice(ctx, d)
		if err != nil {
			return nil, err
		}
		cpu1, err := b.pgCluster.CPU()
		if err != nil {
			return nil, err
		}
		res.dbCPU, res.hasDBCPU = cpu1-cpu0, true
		return res, nil
	}
}

// dbCPUPerReq is the PostgreSQL server's CPU time per request, in µs.
func dbCPUPerReq(r *loadResult) float64 {
	if r == nil || r.requests == 0 || !r.hasDBCPU {
		return 0
	}
	return float64(r.dbCPU/time.Duration(r.requests)) / float64(time.Microsecond)
}

func dbCPU(r *loadResult) check {
	v := dbCPUPerReq(r)
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
	l := b.loads
	for _, row := range []struct {
		label, bbolt string
		vs           func(res, base *loadResult, baseName, op string, target float64) check
	}{
		{labelPGGetPet, labelGetPet, cpuVs},
		{labelPGPostPets, labelPostPets, rpsVs},
		{labelPGOrders, labelOrders, rpsVs},
	} {
		var checks []check
		if !b.cfg.onlyPostgres {
			checks = append(checks, row.vs(l[row.label], l[row.bbolt], "bbolt", "", 0))
		}
		checks = append(checks, dbCPU(l[row.label]))
		if b.pgVs != "" {
			other := row.label + ", " + b.pgVs
			checks = append(checks, row.vs(l[row.label], l[other], b.pgVs, "", 0))
			if row.label != labelPGGetPet { // GET is judged by CPU already
				checks = append(checks, cpuVs(l[row.label], l[other], b.pgVs, "", 0))
			}
			checks = append(checks, versus("PostgreSQL CPU/req vs "+b.pgVs, dbCPUPerReq(l[row.label]), dbCPUPerReq(l[other]), "", 0))
			r.load(row.label, l[row.label], checks...)
			r.load(other, l[other], check{on: "the revision of -postgres-vs", ok: l[other] != nil}, dbCPU(l[other]))
			continue
		}
		r.load(row.label, l[row.label], checks...)
	}
	r.notes = append(r.notes, fmt.Sprintf("PostgreSQL rows: the same requests against a server started with --database on a private PostgreSQL cluster on this machine with its durable defaults (fsync, synchronous commits), seeded with %s pets; CPU/req is the petstore process's only; 'PostgreSQL CPU/req' is the server's processes' (its postmaster, its children alive and ended) over the same slices",
		humanCount(b.cfg.pets)))
	if b.pgVs != "" {
		r.notes = append(r.notes, fmt.Sprintf("rows ending with %s: the binary built from -postgres-vs (%s), on a database of its own in the same cluster, seeded by this revision's store; each of its rows ran right after this revision's row of the same request, in every round",
			b.pgVs, b.cfg.postgresVs))
	}
}
