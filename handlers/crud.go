package handlers

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"petstore/store"
)

// The operations that only hand an id or a page to the store and answer
// what it returns; the others are beside their resource.

// getByID answers 200 with what get finds for the id path parameter param.
// With version (nil for a record that has none), it carries the record's
// ETag, and answers 304 to an If-None-Match that names it.
func getByID[T any](param string, get func(context.Context, int64) (T, error), version func(*T) int64) echo.HandlerFunc {
	return func(c echo.Context) error {
		id, err := pathID(c, param)
		if err != nil {
			return err
		}
		v, err := get(c.Request().Context(), id)
		if err != nil {
			return err
		}
		if version != nil && notModified(c, version(&v)) {
			return c.NoContent(http.StatusNotModified)
		}
		return respond(c, http.StatusOK, v)
	}
}

// createFrom is the write of a POST that creates a record (keyed):
// decode reads the body into a new record, and save stores it with the
// request's Idempotency-Key.
func createFrom[T any](decode func(echo.Context, *T) error, save func(context.Context, *T, *store.IdempotentWrite) error) func(echo.Context, *store.IdempotentWrite) (T, none, error) {
	return func(c echo.Context, key *store.IdempotentWrite) (rec T, _ none, err error) {
		if err = decode(c, &rec); err == nil {
			err = save(c.Request().Context(), &rec, key)
		}
		return rec, none{}, err
	}
}

// replaceByID answers a PUT of a record by the id path parameter param:
// decode reads the body into a new record, which gets the id, and replace
// writes it under the request's If-Match and If-None-Match (412 when they
// are not met); the answer is the record as stored, with its ETag. fields
// gives a record's id and version.
func replaceByID[T any](param string, decode func(echo.Context, *T) error, replace func(context.Context, *T, store.Condition) error, fields func(*T) (id, version *int64)) echo.HandlerFunc {
	return func(c echo.Context) error {
		id, err := pathID(c, param)
		if err != nil {
			return err
		}
		var rec T
		if err := decode(c, &rec); err != nil {
			return err
		}
		recID, version := fields(&rec)
		*recID = id
		cond := condition(c)
		if err := replace(c.Request().Context(), &rec, cond); err != nil {
			return preconditionFailed(cond, err)
		}
		setETag(c, *version)
		return respond(c, http.StatusOK, &rec)
	}
}

// deleteIfMatch is deleteByID for a record with a version: an If-Match or
// If-None-Match makes the deletion conditional (412 when it is not met).
func deleteIfMatch(param string, del func(context.Context, int64, store.Condition) error) echo.HandlerFunc {
	return func(c echo.Context) error {
		id, err := pathID(c, param)
		if err != nil {
			return err
		}
		cond := condition(c)
		if err := del(c.Request().Context(), id, cond); err != nil {
			return preconditionFailed(cond, err)
		}
		return c.NoContent(http.StatusNoContent)
	}
}

// deleteByID answers 204 once del has done its work for the id path
// parameter param.
func deleteByID(param string, del func(context.Context, int64) error) echo.HandlerFunc {
	return func(c echo.Context) error {
		id, err := pathID(c, param)
		if err != nil {
			return err
		}
		if err := del(c.Request().Context(), id); err != nil {
			return err
		}
		return c.NoContent(http.StatusNoContent)
	}
}

// listPage answers the page of list that limit and cursor ask for.
func listPage[T any](list func(context.Context, store.Page) ([]T, int64, error)) echo.HandlerFunc {
	return func(c echo.Context) error {
		p, err := page(c)
		if err != nil {
			return err
		}
		items, next, err := list(c.Request().Context(), p)
		if err != nil {
			return err
		}
		return respondList(c, items, next)
	}
}
