package handlers_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"petstore/handlers"
	"petstore/store"
)

// BenchmarkAPI measures the full Echo stack (routing, validation, store,
// JSON) in process, with request validation on and off, so the cost of
// validation shows as the difference between the two.
func BenchmarkAPI(b *testing.B) {
	for _, validate := range []bool{true, false} {
		name := "validation=on"
		if !validate {
			name = "validation=off"
		}
		b.Run(name, func(b *testing.B) {
			ts := newTestServer(b, func(c *handlers.Config) { c.SkipValidation = !validate })
			var cat store.Category
			ts.do("POST", "/categories", `{"name":"dogs"}`).wantStatus(201).decode(&cat)
			var pet store.Pet
			ts.do("POST", "/pets", fmt.Sprintf(`{"name":"Rex","categoryId":%d}`, cat.ID)).wantStatus(201).decode(&pet)
			getPath := fmt.Sprintf("/pets/%d", pet.ID)
			newPet := fmt.Sprintf(`{"name":"Bench","categoryId":%d,"status":"available"}`, cat.ID)

			b.Run("GET /pets/{id}", func(b *testing.B) {
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						rec := httptest.NewRecorder()
						req := httptest.NewRequest(http.MethodGet, getPath, nil)
						req.Host = "localhost"
						ts.srv.ServeHTTP(rec, req)
						if rec.Code != 200 {
							b.Fatalf("status %d: %s", rec.Code, rec.Body)
						}
					}
				})
			})
			b.Run("POST /pets", func(b *testing.B) {
				b.ReportAllocs()
				// Many concurrent writers, as a loaded server has: their
				// fsyncs are shared through the store's batching.
				b.SetParallelism(32)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						req := httptest.NewRequest(http.MethodPost, "/pets", strings.NewReader(newPet))
						req.Host = "localhost"
						req.Header.Set("Content-Type", "application/json")
						req.Header.Set("X-API-Key", ts.apiKey)
						rec := httptest.NewRecorder()
						ts.srv.ServeHTTP(rec, req)
						if rec.Code != 201 {
							b.Fatalf("status %d: %s", rec.Code, rec.Body)
						}
					}
				})
			})
		})
	}
}
