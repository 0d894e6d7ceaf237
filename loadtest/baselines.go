package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	"github.com/labstack/echo/v4"
	bolt "go.etcd.io/bbolt"

	"petstore/handlers/listen"
)

// baselinePet is the answer of the Echo baseline: the size and shape of a
// pet, encoded on every request as the real handler does.
type baselinePet struct {
	ID         int64  `json:"id"`
	Name       string `json:"name"`
	CategoryID int64  `json:"categoryId"`
	Status     string `json:"status"`
}

// echoBaselinePath is what the Echo baseline row requests.
const echoBaselinePath = "/pets/1"

// serveEchoBaseline serves the Echo baseline on addr until killed: one Echo
// handler, no middleware, no validation, no store, behind an http.Server
// with the timeouts listen.NewHTTPServer sets, answering a small JSON object.
// It is what GET /pets/{id} would cost if Petstore added nothing to Echo.
func serveEchoBaseline(addr string) error {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	pet := baselinePet{ID: 1, Name: "Rex", CategoryID: 1, Status: "available"}
	e.GET("/pets/:petId", func(c echo.Context) error { return c.JSON(http.StatusOK, pet) })
	e.GET("/readyz", func(c echo.Context) error { return c.NoContent(http.StatusOK) })
	// The same server settings as the service's, so that only the handler
	// differs.
	srv := listen.NewHTTPServer(e, nil, nil)
	srv.Addr = addr
	return srv.ListenAndServe()
}

// fsyncBaseline is the write path with nothing shared: sequential
// db.Update calls, each putting one ~60-byte value and committing (and
// fsyncing) on its own, on a fresh file with the store's bbolt options.
type fsyncBaseline struct {
	db *bolt.DB
	n  int
}

func openFsyncBaseline(dir string) (*fsyncBaseline, error) {
	db, err := bolt.Open(filepath.Join(dir, "fsync-baseline.db"), 0o600, &bolt.Options{
		Timeout:      time.Second,
		FreelistType: bolt.FreelistMapType,
	})
	if err != nil {
		return nil, err
	}
	return &fsyncBaseline{db: db}, nil
}

var (
	fsyncBucket = []byte("pets")
	fsyncValue  = []byte(`{"id":1,"name":"Rex","categoryId":1,"status":"available"}..`) // 60 bytes
)

// run puts for d, one transaction each; each put counts as a request.
func (f *fsyncBaseline) run(ctx context.Context, d time.Duration) (*loadResult, error) {
	res := &loadResult{}
	start := time.Now()
	for time.Since(start) < d && ctx.Err() == nil {
		t0 := time.Now()
		err := f.db.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists(fsyncBucket)
			if err != nil {
				return err
			}
			var k [8]byte
			binary.BigEndian.PutUint64(k[:], uint64(f.n+1))
			return b.Put(k[:], fsyncValue)
		})
		if err != nil {
			return nil, fmt.Errorf("bbolt baseline: %w", err)
		}
		res.lats = append(res.lats, time.Since(t0))
		f.n++
	}
	res.elapsed = time.Since(start)
	res.requests = int64(len(res.lats))
	return res, ctx.Err()
}
