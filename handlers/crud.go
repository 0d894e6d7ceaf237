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
func getByID[T any](param string, get func(context.Context, int64) (T, error)) echo.HandlerFunc {
	return func(c echo.Context) error {
		id, err := pathID(c, param)
		if err != nil {
			return err
		}
		v, err := get(c.Request().Context(), id)
		if err != nil {
			return err
		}
		return respond(c, http.StatusOK, v)
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
