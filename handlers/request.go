package handlers

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"

	"github.com/labstack/echo/v4"

	"petstore/store"
)

// decodeBody reads the JSON body into v. The validator has already checked
// it against the schema; decoding still refuses what the schema cannot
// express, such as integers beyond int64.
func decodeBody(c echo.Context, v any) error {
	dec := json.NewDecoder(c.Request().Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return apiError(store.EINVALID, "body: more than one JSON value")
	}
	return nil
}

// pathID parses an id path parameter.
func pathID(c echo.Context, name string) (int64, error) {
	return parseID(name, c.Param(name))
}

func parseID(name, raw string) (int64, error) {
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id < 1 {
		return 0, apiError(store.EINVALID, "%s: must be a positive integer within int64 range", name)
	}
	return id, nil
}

// queryID parses an optional id query parameter; absent is 0.
func queryID(c echo.Context, name string) (int64, error) {
	raw := c.QueryParam(name)
	if raw == "" {
		return 0, nil
	}
	return parseID(name, raw)
}

// page reads limit and cursor. A cursor is the last id of the previous page,
// encoded so that clients treat it as opaque and take it from the Link header.
func page(c echo.Context) (store.Page, error) {
	var p store.Page
	if raw := c.QueryParam("limit"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > store.MaxPageSize {
			return p, apiError(store.EINVALID, "query parameter \"limit\": must be an integer from 1 to %d", store.MaxPageSize)
		}
		p.Limit = n
	}
	if raw := c.QueryParam("cursor"); raw != "" {
		after, ok := decodeCursor(raw)
		if !ok {
			return p, apiError(store.EINVALID, "query parameter \"cursor\": not a cursor this service issued; follow the Link header of the previous page")
		}
		p.After = after
	}
	return p, nil
}

func encodeCursor(after int64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(after))
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func decodeCursor(s string) (int64, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 8 {
		return 0, false
	}
	after := int64(binary.BigEndian.Uint64(b))
	return after, after > 0
}

// listResponse writes one page and, when there is a next one, its URL in a
// Link header: the same path and query with the cursor moved on.
func listResponse[T any](c echo.Context, items []T, next int64) error {
	if next > 0 {
		q := c.Request().URL.Query()
		q.Set("cursor", encodeCursor(next))
		u := url.URL{Path: c.Request().URL.Path, RawQuery: q.Encode()}
		c.Response().Header().Set("Link", fmt.Sprintf(`<%s>; rel="next"`, u.String()))
	}
	if items == nil {
		items = []T{}
	}
	return c.JSON(200, items)
}

// created answers 201 with the new resource and its Location.
func created(c echo.Context, location string, v any) error {
	c.Response().Header().Set(echo.HeaderLocation, location)
	return c.JSON(201, v)
}
