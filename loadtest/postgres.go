package main

import (
	"context"
	"errors"
	"fmt"

	"petstore/store"
	"petstore/store/postgres"
	"petstore/store/postgres/pgtest"
)

// Keys of the PostgreSQL rows' results.
const (
	keyPGGetPet   = "pg-get-pet"
	keyPGPostPets = "pg-post-pets"
	keyPGOrders   = "pg-orders"
)

// Labels of the PostgreSQL rows, beside the bbolt rows of the same requests.
const (
	labelPGGetPet   = "GET /pets/{id}, PostgreSQL"
	labelPGPostPets = "POST /pets (durable), PostgreSQL"
	labelPGOrders   = "POST /store/orders (durable), PostgreSQL"
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
	n := b.cfg.pets
	b.progress("importing %s pets into PostgreSQL with store.ImportPets", humanCount(n))
	catID, err := seedPostgres(ctx, url, n, b.adminToken)
	if err != nil {
		return err
	}
	p, err := b.startProc("petstore on PostgreSQL", b.bin, "--listen", "ADDR", "--database", url, "--rate-limit", "0", "--admin-token", b.adminToken)
	if err != nil {
		return err
	}
	if _, err := p.waitReady(ctx, "/readyz", readyTimeout); err != nil {
		return err
	}
	client := newClient(b.cfg.connections)
	api := &apiClient{client: client.Client, base: p.base()}
	ids, err := b.seedThroughAPI(ctx, api, n)
	if err != nil {
		return fmt.Errorf("PostgreSQL: %w", err)
	}
	getPet, postPet, order := b.apiWorkloads(ids, catID, api.apiKey)
	b.jobs = append(b.jobs,
		b.httpJob(keyPGGetPet, labelPGGetPet, p, client, getPet),
		b.httpJob(keyPGPostPets, labelPGPostPets, p, client, postPet),
		b.httpJob(keyPGOrders, labelPGOrders, p, client, order),
	)
	return nil
}

// seedPostgres creates one category and n pets (ids 1..n) and sets the
// admin token, as importStore does for a data file. It returns the
// category's id.
func seedPostgres(ctx context.Context, url string, n int, adminToken string) (int64, error) {
	db, err := postgres.Open(ctx, url, store.Options{})
	if err != nil {
		return 0, err
	}
	defer db.Close()
	cat := store.Category{Name: "loadtest", Description: "pets of the load benchmark"}
	if err := db.CreateCategory(ctx, &cat); err != nil {
		return 0, err
	}
	if err := db.ImportPets(ctx, cat.ID, n, store.StatusAvailable); err != nil {
		return 0, fmt.Errorf("importing %s pets into PostgreSQL: %w", humanCount(n), err)
	}
	if _, err := db.EnsureAdminToken(ctx, adminToken); err != nil {
		return 0, err
	}
	return cat.ID, nil
}

// postgresReport adds the PostgreSQL rows, each judged against the bbolt
// row of the same request measured in the same run.
func (b *bench) postgresReport(r *report) {
	if b.pgSkipped != "" {
		r.lines = append(r.lines, line{label: "PostgreSQL rows", on: "skipped: " + b.pgSkipped, verdict: "skipped"})
		return
	}
	get, post, orders := b.loads[keyGetPet], b.loads[keyPostPets], b.loads[keyOrders]
	pgGet, pgPost, pgOrders := b.loads[keyPGGetPet], b.loads[keyPGPostPets], b.loads[keyPGOrders]
	var postRPS, ordersRPS float64
	if post != nil {
		postRPS = post.rps()
	}
	if orders != nil {
		ordersRPS = orders.rps()
	}
	r.load(labelPGGetPet, pgGet, cpuVs(pgGet, get, "bbolt", "", 0))
	r.load(labelPGPostPets, pgPost, rpsVs(pgPost, postRPS, "bbolt", "", 0))
	r.load(labelPGOrders, pgOrders, rpsVs(pgOrders, ordersRPS, "bbolt", "", 0))
	r.notes = append(r.notes, fmt.Sprintf("PostgreSQL rows: the same requests against a server started with --database on a private PostgreSQL cluster on this machine with its durable defaults (fsync, synchronous commits), seeded with %s pets; CPU/req is the petstore process's only, PostgreSQL's own processes are not counted",
		humanCount(b.cfg.pets)))
}
