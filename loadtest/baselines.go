package main

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"petstore/server"
	"petstore/store/boltstore/bolttest"
)

// baselinePet is the Echo baseline's answer, a pet's size and shape,
// encoded per request as the real handler does.
type baselinePet struct {
	ID         int64  `json:"id"`
	Name       string `json:"name"`
	CategoryID int64  `json:"categoryId"`
	Status     string `json:"status"`
}

const echoBaselinePath = "/pets/1"

// serveEchoBaseline serves the Echo baseline on addr until killed: one Echo
// handler, no middleware, validation or store, behind the service's
// http.Server settings: what GET /pets/{id} costs with nothing added.
func serveEchoBaseline(addr string) error {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	pet := baselinePet{ID: 1, Name: "Rex", CategoryID: 1, Status: "available"}
	e.GET("/pets/:petId", func(c echo.Context) error { return c.JSON(http.StatusOK, pet) })
	e.GET("/readyz", func(c echo.Context) error { return c.NoContent(http.StatusOK) })
	// The service's server settings, so that only the handler differs.
	srv := server.NewHTTPServer(e, nil, nil, server.DefaultHeaderTimeout)
	srv.Addr = addr
	return srv.ListenAndServe()
}

// fsyncJob times bare bbolt's durable write path (bolttest.FsyncBaseline)
// as a job's slice: puts for d, one transaction each, each counted as a
// request.
func fsyncJob(f *bolttest.FsyncBaseline) func(ctx context.Context, d time.Duration) (*loadResult, error) {
	return func(ctx context.Context, d time.Duration) (*loadResult, error) {
		res := &loadResult{}
		start := time.Now()
		for time.Since(start) < d && ctx.Err() == nil {
			t0 := time.Now()
			if err := f.Put(); err != nil {
				return nil, err
			}
			res.lats = append(res.lats, time.Since(t0))
		}
		res.elapsed = time.Since(start)
		res.requests = int64(len(res.lats))
		return res, ctx.Err()
	}
}
