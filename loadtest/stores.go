// The small and the big store: seeding them, starting the server on them,
// and their rows' jobs.

package main

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash/fnv"
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

// seedable is a store with its bulk import (outside store.Store).
type seedable interface {
	store.Store
	ImportPets(ctx context.Context, categoryID int64, n int, status store.PetStatus) error
}

// seedStore gives the new store db what the service's first start leaves
// (the admin token), one category and n available pets (ids 1..n) by bulk
// import, and closes it. It returns the category's id and the seeding's
// time; where names db in the progress line.
func (b *bench) seedStore(ctx context.Context, db seedable, where string, n int) (int64, time.Duration, error) {
	b.progress("importing %s pets into %s with store.ImportPets", humanCount(n), where)
	t := time.Now()
	cat := store.Category{Name: "loadtest", Description: "pets of the load benchmark"}
	err := db.CreateCategory(ctx, &cat, nil)
	if err == nil {
		err = db.ImportPets(ctx, cat.ID, n, store.StatusAvailable)
	}
	if err == nil {
		_, err = db.EnsureAdminToken(ctx, b.adminToken)
	}
	err = cmp.Or(err, db.Close())
	if err != nil {
		return 0, 0, fmt.Errorf("importing %s pets: %w", humanCount(n), err)
	}
	return cat.ID, time.Since(t), nil
}

func (b *bench) importStore(ctx context.Context, path string, n int) (int64, time.Duration, error) {
	db, err := boltstore.Open(path, store.Options{})
	if err != nil {
		return 0, 0, err
	}
	return b.seedStore(ctx, db, path, n)
}

// smallServer starts bin as name on a new file of cfg.pets pets in b.dir,
// with the admin token and args; p.catID is their category.
func (b *bench) smallServer(ctx context.Context, name, bin, file string, args ...string) (p *proc, imported time.Duration, err error) {
	data := filepath.Join(b.dir, file)
	catID, imported, err := b.importStore(ctx, data, b.cfg.pets)
	if err != nil {
		return nil, 0, err
	}
	p, err = b.startPetstore(ctx, name, bin, nil, append([]string{"--data", data, "--admin-token", b.adminToken}, args...)...)
	if p != nil {
		p.catID = catID
	}
	return p, imported, err
}

// smallStore starts the server on a new file of cfg.pets pets, measures its
// time to ready and idle RSS, and adds its rows' jobs.
func (b *bench) smallStore(ctx context.Context) error {
	p, imported, err := b.smallServer(ctx, fmt.Sprintf("petstore (%s pets)", humanCount(b.cfg.pets)), b.bin, "small.db")
	if err != nil {
		return err
	}
	b.smallProc, b.smallImport, b.smallReady = p, imported, p.ready
	if b.idleRSS, err = b.settleRSS(ctx, p); err != nil {
		return err
	}
	jobs, err := b.smallJobs(ctx, p, "")
	if err != nil {
		return err
	}
	// -vs's revision gets a small store of its own, seeded by this
	// revision's store (older binaries read the file), and every row of
	// this one: what else a process serves changes what a row costs.
	return b.addBeside(ctx, jobs, "-vs", b.cfg.vs, &b.vsRev, func(o otherRevision) ([]job, error) {
		p, _, err := b.smallServer(ctx, fmt.Sprintf("petstore %s (%s pets)", o.rev, humanCount(b.cfg.pets)), o.bin, "small-vs.db")
		if err != nil {
			return nil, err
		}
		return b.smallJobs(ctx, p, ", "+o.rev)
	})
}

// smallJobs returns the jobs of the small store's rows sent to p, their
// labels ending with suffix.
func (b *bench) smallJobs(ctx context.Context, p *proc, suffix string) ([]job, error) {
	jobs, err := b.apiJobs(ctx, p, suffix, true)
	if err != nil {
		return nil, err
	}
	jobs = append(jobs, b.pageJobs(ctx, p, b.cfg.pets, suffix)...)
	return append(jobs, b.httpJob(labelSite+suffix, p, get("/"))), nil
}

// apiJobs makes an API key through p's API and gives the first
// cfg.stockPets pets full stock (the store holds pets 1..cfg.pets of
// category p.catID). It returns the jobs reading a random pet, creating
// one, ordering a stocked one, and with keyed creating one with an
// Idempotency-Key, labels ending with suffix.
func (b *bench) apiJobs(ctx context.Context, p *proc, suffix string, keyed bool) ([]job, error) {
	b.progress("through the API of %s: an API key, stock for %d pets", p.name, b.cfg.stockPets)
	api := p.api()
	var key struct {
		Secret string `json:"secret"`
	}
	if _, err := api.do(ctx, "POST", "/admin/api-keys", http.Header{"Authorization": {"Bearer " + b.adminToken}}, `{"name":"loadtest"}`, 201, &key); err != nil {
		return nil, fmt.Errorf("seeding: %w", err)
	}
	api.apiKey = key.Secret
	orderBodies := make([][]byte, b.cfg.stockPets)
	for i := range orderBodies {
		id := i + 1
		if _, err := api.do(ctx, "PUT", fmt.Sprintf("/store/inventory/%d", id), nil, fmt.Sprintf(`{"quantity":%d}`, store.MaxStock), 200, nil); err != nil {
			return nil, fmt.Errorf("seeding stock: %w", err)
		}
		orderBodies[i] = fmt.Appendf(nil, `{"petId":%d,"quantity":1}`, id)
	}
	getPaths := make([]string, b.cfg.pets)
	for i := range getPaths {
		getPaths[i] = "/pets/" + strconv.Itoa(i+1)
	}
	newPet := fmt.Appendf(nil, `{"name":"Bench","categoryId":%d,"status":"available"}`, p.catID)
	getPet := workload{method: "GET", next: func(r *mrand.Rand) (string, []byte) {
		return getPaths[r.IntN(len(getPaths))], nil
	}}
	postPet := workload{method: "POST", apiKey: api.apiKey, next: func(*mrand.Rand) (string, []byte) {
		return "/pets", newPet
	}}
	order := workload{method: "POST", apiKey: api.apiKey, next: func(r *mrand.Rand) (string, []byte) {
		return "/store/orders", orderBodies[r.IntN(len(orderBodies))]
	}}
	jobs := []job{
		b.httpJob(labelGetPet+suffix, p, getPet),
		b.httpJob(labelPostPets+suffix, p, postPet),
		b.httpJob(labelOrders+suffix, p, order),
	}
	if keyed {
		w := postPet
		w.keyed = true
		jobs = append(jobs, b.httpJob(labelPostPetsKeyed+suffix, p, w))
	}
	return jobs, nil
}

// pageJobs checks the first page of p's pets 1..n and one 90% deep, and
// returns the jobs reading them, labels ending with suffix. Creates add
// pets after the last, so these pages stay the same.
func (b *bench) pageJobs(ctx context.Context, p *proc, n int, suffix string) []job {
	api := p.api()
	first := "/pets?limit=" + strconv.Itoa(pageLimit)
	after := int64(n) * 9 / 10
	deep := first + "&cursor=" + encodeCursor(after)
	if suffix != "" {
		// Another revision (-vs) may write its cursors otherwise.
		deep = b.followLinks(ctx, api, first, after)
	} else {
		b.checkPage(ctx, api, first, 1)
		b.checkPage(ctx, api, deep, after+1)
	}
	return []job{
		b.httpJob(pageRow(n, false)+suffix, p, get(first)),
		b.httpJob(pageRow(n, true)+suffix, p, get(deep)),
	}
}

// bigStore imports the large store, times the server's starts on it to
// ready, reads its idle RSS and adds the jobs of its first and deep pages.
func (b *bench) bigStore(ctx context.Context) error {
	n := b.cfg.bigPets
	if n == 0 {
		return nil // -big-pets 0: skipped
	}
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
		if p, err = b.startPetstore(ctx, name, b.bin, nil, "--data", data); err != nil {
			return err
		}
		b.progress("start %d of %d on %s pets: ready in %v", i+1, b.cfg.readyStarts, humanCount(n), p.ready.Round(100*time.Microsecond))
		b.bigReady = append(b.bigReady, p.ready)
	}
	if b.bigIdleRSS, err = b.settleRSS(ctx, p); err != nil {
		return err
	}
	b.jobs = append(b.jobs, b.pageJobs(ctx, p, n, "")...)
	return nil
}

// checkPage fetches a list page once and checks it holds exactly the
// pageLimit pets from pet from on, and that its Link cursor is the one
// computed here: deep pages use a computed cursor, so a change of its
// format must show here, not as a different row.
func (b *bench) checkPage(ctx context.Context, api *apiClient, path string, from int64) {
	want := make([]int64, pageLimit)
	for i := range want {
		want[i] = from + int64(i)
	}
	got, h, err := petIDs(ctx, api, path)
	if err != nil {
		b.fail("checking %s: %v", path, err)
		return
	}
	if !slices.Equal(got, want) {
		b.fail("GET %s: pets %v, want %v", path, got, want)
		return
	}
	wantLink := "cursor=" + encodeCursor(want[len(want)-1])
	if link := h.Get("Link"); !strings.Contains(link, wantLink) {
		b.fail("GET %s: Link %q does not hold %s: has the cursor format changed (handlers/cursor.go encodeCursor)?", path, link, wantLink)
	}
}

// followLinks follows Link headers from path until a page ends with the pet
// after, and returns the next page's path.
func (b *bench) followLinks(ctx context.Context, api *apiClient, path string, after int64) string {
	for path != "" {
		ids, h, err := petIDs(ctx, api, path)
		if err != nil {
			b.fail("following the pages' links: %v", err)
			return path
		}
		path = ""
		if link := h.Get("Link"); strings.HasPrefix(link, "<") && strings.Contains(link, `rel="next"`) {
			path, _, _ = strings.Cut(link[1:], ">")
		}
		if len(ids) > 0 && ids[len(ids)-1] >= after {
			break
		}
	}
	if path == "" {
		b.fail("following the pages' links: no page ends with pet %d", after)
	}
	return path
}

func petIDs(ctx context.Context, api *apiClient, path string) ([]int64, http.Header, error) {
	var pets []struct {
		ID int64 `json:"id"`
	}
	h, err := api.do(ctx, "GET", path, nil, "", 200, &pets)
	ids := make([]int64, len(pets))
	for i, p := range pets {
		ids[i] = p.ID
	}
	return ids, h, err
}

// encodeCursor is handlers/cursor.go's cursor of GET /pets without
// filters; a change there shows in checkPage.
func encodeCursor(after int64) string {
	h := fnv.New32a()
	h.Write([]byte("/pets\x00"))
	k := binary.BigEndian.AppendUint64(nil, uint64(after))
	k = binary.BigEndian.AppendUint32(append(k, 0xff), h.Sum32())
	return base64.RawURLEncoding.EncodeToString(k)
}
