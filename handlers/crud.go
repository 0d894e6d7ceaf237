package handlers

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"petstore/store"
)

// The operations that only hand an id or a page to the store.

// getByID answers 200 with what get finds for the path parameter param,
// its ETag made from version, under the read's conditions (304, 412).
func getByID[T any](param string, get func(context.Context, int64) (T, error), version func(*T) int64) echo.HandlerFunc {
	return func(c echo.Context) error {
		id, err := pathID(c, param)
		if err != nil {
			return err
		}
		v, err := get(c.Request().Context(), id)
		if err != nil {
			return preconditionFailed(condition(c), err)
		}
		if done, err := readConditions(c, version(&v)); done {
			return err
		}
		return respond(c, http.StatusOK, v)
	}
}

// createFrom is a create's write (keyed): decode reads the body into a
// new record, save stores it with the Idempotency-Key.
func createFrom[T any](decode func(echo.Context, *T) error, save func(context.Context, *T, *store.IdempotentWrite) error) func(echo.Context, *store.IdempotentWrite) (T, none, error) {
	return func(c echo.Context, key *store.IdempotentWrite) (rec T, _ none, err error) {
		if err = decode(c, &rec); err == nil {
			err = save(c.Request().Context(), &rec, key)
		}
		return rec, none{}, err
	}
}

// replaceByID answers a PUT by the path parameter param: decode reads the
// body, the record gets the id, replace writes it under the request's
// conditions (412 when not met), and the answer is it as stored, with its
// ETag. fields gives a record's id and version.
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

// deleteIfMatch is deleteByID with the request's conditions (412 when not
// met).
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

// deleteByID answers 204 once del has done its work for param.
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

// listPage answers a page of list's items. records: If-Match is judged on
// their list as on them (the admin API's reads ignore it).
func listPage[T any](records bool, list func(context.Context, store.Page) ([]T, int64, error)) echo.HandlerFunc {
	return func(c echo.Context) error {
		p, err := page(c)
		if err != nil {
			return err
		}
		items, next, err := list(c.Request().Context(), p)
		if err != nil {
			return err
		}
		if records {
			// The admin lists, whose document declares no If-Match, are not judged.
			if done, err := readConditions(c, aList); done {
				return err
			}
		}
		return respondList(c, items, next)
	}
}
