// The small and the big store: importing their pets, starting the server on
// them, and the paging checks and jobs that read them.

package main

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"petstore/store"
	"petstore/store/boltstore"
)

// importStore creates a data file holding one category and n pets
// (available, ids 1..n) with store.ImportPets, and the admin token: a store
// as it is after its first start. It returns the category's id.
func (b *bench) importStore(ctx context.Context, path string, n int) (int64, time.Duration, error) {
	b.progress("importing %s pets into %s with store.ImportPets", humanCount(n), path)
	t := time.Now()
	db, err := boltstore.Open(path, store.Options{})
	if err != nil {
		return 0, 0, err
	}
	cat := store.Category{Name: "loadtest", Description: "pets of the load benchmark"}
	err = db.CreateCategory(ctx, &cat)
	if err == nil {
		err = db.ImportPets(ctx, cat.ID, n, store.StatusAvailable)
	}
	if err == nil {
		_, err = db.EnsureAdminToken(ctx, b.adminToken)
	}
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, 0, fmt.Errorf("importing %s pets: %w", humanCount(n), err)
	}
	return cat.ID, time.Since(t), nil
}

// smallStore starts the server on a new file of cfg.pets pets, measures its
// time to ready and idle RSS, and adds the jobs of single pets, first and
// deep pages, the site, orders and creates.
func (b *bench) smallStore(ctx context.Context) error {
	n := b.cfg.pets
	data := filepath.Join(b.dir, "small.db")
	catID, d, err := b.importStore(ctx, data, n)
	if err != nil {
		return err
	}
	b.smallImport = d
	p, err := b.startPetstore(fmt.Sprintf("petstore (%s pets)", humanCount(n)), data, "--admin-token", b.adminToken)
	if err != nil {
		return err
	}
	b.smallProc = p
	if b.smallReady, err = p.waitReady(ctx, "/readyz", readyTimeout); err != nil {
		return err
	}
	if b.idleRSS, err = b.settleRSS(ctx, p); err != nil {
		return err
	}
	client := newClient(b.cfg.connections)
	api := &apiClient{client: client.Client, base: p.base()}

	// Through the API: an API key for the writes, stock for the orders.
	b.progress("through the API: an API key, stock for %d pets", b.cfg.stockPets)
	ids, err := b.seedThroughAPI(ctx, api, n)
	if err != nil {
		return err
	}

	// The pages the list rows ask for, checked once. Creates during the run
	// add pets after the last, so these pages stay the same.
	first := "/pets?limit=" + strconv.Itoa(pageLimit)
	deepIdx := n * 9 / 10
	deep := first + "&cursor=" + encodeCursor(ids[deepIdx-1])
	b.checkPage(ctx, api, first, ids[:pageLimit])
	b.checkPage(ctx, api, deep, ids[deepIdx:deepIdx+pageLimit])

	getPet, postPet, order := b.apiWorkloads(ids, catID, api.apiKey)
	b.jobs = append(b.jobs,
		b.httpJob(keyGetPet, "GET /pets/{id}", p, client, getPet),
		b.httpJob(keyFirstPage, fmt.Sprintf("GET /pets?limit=%d first page, %s pets", pageLimit, humanCount(n)), p, client, get(first)),
		b.httpJob(keyDeepPage, fmt.Sprintf("GET /pets?limit=%d 90%% deep, %s pets", pageLimit, humanCount(n)), p, client, get(deep)),
		b.httpJob(keySite, "GET / (the site)", p, client, get("/")),
		b.httpJob(keyPostPets, "POST /pets", p, client, postPet),
		b.httpJob(keyOrders, "POST /store/orders", p, client, order),
	)
	return nil
}

// seedThroughAPI creates an API key for the writes on api and gives the
// first cfg.stockPets pets full stock. The store holds the n pets imported
// in order into a new store, so their ids are 1..n; it returns them.
func (b *bench) seedThroughAPI(ctx context.Context, api *apiClient, n int) ([]int64, error) {
	var key struct {
		Secret string `json:"secret"`
	}
	if err := api.call(ctx, "POST", "/admin/api-keys", http.Header{"Authorization": {"Bearer " + b.adminToken}}, `{"name":"loadtest"}`, 201, &key); err != nil {
		return nil, fmt.Errorf("seeding: %w", err)
	}
	api.apiKey = key.Secret
	ids := idRange(1, n)
	for _, id := range ids[:b.cfg.stockPets] {
		if err := api.call(ctx, "PUT", fmt.Sprintf("/store/inventory/%d", id), nil, fmt.Sprintf(`{"quantity":%d}`, store.MaxStock), 200, nil); err != nil {
			return nil, fmt.Errorf("seeding stock: %w", err)
		}
	}
	return ids, nil
}

// apiWorkloads are the workloads every store is measured on: reading a
// random pet of ids, creating a pet in category catID, and ordering one of
// a stocked pet (the first cfg.stockPets ids); the writes send apiKey.
func (b *bench) apiWorkloads(ids []int64, catID int64, apiKey string) (getPet, postPet, order workload) {
	getPaths := make([]string, len(ids))
	for i, id := range ids {
		getPaths[i] = "/pets/" + strconv.FormatInt(id, 10)
	}
	orderBodies := make([][]byte, b.cfg.stockPets)
	for i, id := range ids[:b.cfg.stockPets] {
		orderBodies[i] = fmt.Appendf(nil, `{"petId":%d,"quantity":1}`, id)
	}
	newPet := fmt.Appendf(nil, `{"name":"Bench","categoryId":%d,"status":"available"}`, catID)
	getPet = workload{method: "GET", next: func(r *mrand.Rand) (string, []byte) {
		return getPaths[r.IntN(len(getPaths))], nil
	}}
	postPet = workload{method: "POST", apiKey: apiKey, next: func(*mrand.Rand) (string, []byte) {
		return "/pets", newPet
	}}
	order = workload{method: "POST", apiKey: apiKey, next: func(r *mrand.Rand) (string, []byte) {
		return "/store/orders", orderBodies[r.IntN(len(orderBodies))]
	}}
	return getPet, postPet, order
}

// bigStore imports the large store with the store package, times the
// server's start on it to ready (several starts), reads its idle RSS and
// adds the jobs of its first and deep pages.
func (b *bench) bigStore(ctx context.Context) error {
	n := b.cfg.bigPets
	data := filepath.Join(b.dir, "big.db")
	var err error
	if _, b.importTime, err = b.importStore(ctx, data, n); err != nil {
		return err
	}
	if st, err := os.Stat(data); err == nil {
		b.bigFileSize = st.Size()
	}

	name := fmt.Sprintf("petstore (%s pets)", humanCount(n))
	var p *proc
	for i := range b.cfg.readyStarts {
		if p != nil {
			if err := p.stop(); err != nil {
				return err
			}
		}
		if p, err = b.startPetstore(name, data); err != nil {
			return err
		}
		d, err := p.waitReady(ctx, "/readyz", readyTimeout)
		if err != nil {
			return err
		}
		b.progress("start %d of %d on %s pets: ready in %v", i+1, b.cfg.readyStarts, humanCount(n), d.Round(100*time.Microsecond))
		b.bigReady = append(b.bigReady, d)
	}
	if b.bigIdleRSS, err = b.settleRSS(ctx, p); err != nil {
		return err
	}
	client := newClient(b.cfg.connections)
	api := &apiClient{client: client.Client, base: p.base()}
	first := "/pets?limit=" + strconv.Itoa(pageLimit)
	after := int64(n) * 9 / 10 // imported ids are 1..n
	deep := first + "&cursor=" + encodeCursor(after)
	b.checkPage(ctx, api, first, idRange(1, pageLimit))
	b.checkPage(ctx, api, deep, idRange(after+1, pageLimit))
	b.jobs = append(b.jobs,
		b.httpJob(keyBigFirst, fmt.Sprintf("GET /pets?limit=%d first page, %s pets", pageLimit, humanCount(n)), p, client, get(first)),
		b.httpJob(keyBigDeep, fmt.Sprintf("GET /pets?limit=%d 90%% deep, %s pets", pageLimit, humanCount(n)), p, client, get(deep)),
	)
	return nil
}

func idRange(from int64, n int) []int64 {
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = from + int64(i)
	}
	return ids
}

// checkPage fetches a list page once and checks it holds exactly the pets
// want, and that its Link header's cursor is the one this benchmark
// computes: deep pages are requested with a computed cursor, so a change of
// the cursor format must show here, not as a silently different row.
func (b *bench) checkPage(ctx context.Context, api *apiClient, path string, want []int64) {
	var pets []struct {
		ID int64 `json:"id"`
	}
	h, err := api.do(ctx, "GET", path, nil, "", 200, &pets)
	if err != nil {
		b.fail("checking %s: %v", path, err)
		return
	}
	got := make([]int64, len(pets))
	for i, p := range pets {
		got[i] = p.ID
	}
	if !slices.Equal(got, want) {
		b.fail("GET %s: pets %v, want %v", path, got, want)
		return
	}
	wantLink := "cursor=" + encodeCursor(want[len(want)-1])
	if link := h.Get("Link"); !strings.Contains(link, wantLink) {
		b.fail("GET %s: Link %q does not hold %s: has the cursor format changed (handlers/request.go encodeCursor)?", path, link, wantLink)
	}
}

// encodeCursor is handlers/request.go's cursor: the id to start after, 8
// bytes big-endian, base64url without padding.
func encodeCursor(after int64) string {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], uint64(after))
	return base64.RawURLEncoding.EncodeToString(k[:])
}
