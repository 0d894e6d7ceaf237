package main

import (
	"context"
	"errors"
	"fmt"

	"petstore/store"
	"petstore/store/postgres"
	"petstore/store/postgres/pgtest"
)

// postgresStore starts a private PostgreSQL cluster with PostgreSQL's
// durable defaults (fsync and synchronous commits on, as the bbolt rows
// fsync every commit), seeds it as the small store is seeded, starts the
// binary on it with --database and adds the rows of single pets, creates
// and orders. Without PostgreSQL's binaries the rows are skipped, with a
// note saying how to get them.
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
	url, err := cluster.NewDatabase(ctx)
	if err != nil {
		return err
	}
	db, err := postgres.Open(ctx, url, store.Options{})
	if err != nil {
		return err
	}
	catID, _, err := b.seedStore(ctx, db, "PostgreSQL", b.cfg.pets)
	if err != nil {
		return fmt.Errorf("PostgreSQL: %w", err)
	}
	p, _, err := b.startPetstore(ctx, "petstore on PostgreSQL", nil, "--database", url, "--admin-token", b.adminToken)
	if err != nil {
		return err
	}
	jobs, err := b.apiJobs(ctx, p, newClient(b.cfg.connections), b.cfg.pets, catID, onPostgres)
	if err != nil {
		return fmt.Errorf("PostgreSQL: %w", err)
	}
	b.jobs = append(b.jobs, jobs...)
	return nil
}

// postgresReport adds the PostgreSQL rows, each judged against the bbolt
// row of the same request measured in the same run.
func (b *bench) postgresReport(r *report) {
	if b.pgSkipped != "" {
		r.lines = append(r.lines, line{label: "PostgreSQL rows", on: "skipped: " + b.pgSkipped, verdict: "skipped"})
		return
	}
	l := b.loads
	r.load(labelPGGetPet, l[labelPGGetPet], cpuVs(l[labelPGGetPet], l[labelGetPet], "bbolt", "", 0))
	r.load(labelPGPostPets, l[labelPGPostPets], rpsVs(l[labelPGPostPets], l[labelPostPets], "bbolt", "", 0))
	r.load(labelPGOrders, l[labelPGOrders], rpsVs(l[labelPGOrders], l[labelOrders], "bbolt", "", 0))
	r.notes = append(r.notes, fmt.Sprintf("PostgreSQL rows: the same requests against a server started with --database on a private PostgreSQL cluster on this machine with its durable defaults (fsync, synchronous commits), seeded with %s pets; CPU/req is the petstore process's only, PostgreSQL's own processes are not counted",
		humanCount(b.cfg.pets)))
}
