package handlers

import (
	"encoding/base64"
	"encoding/binary"
	"hash/fnv"
	"net/url"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"petstore/store"
)

// A cursor holds a page's last item (an id or a domain's added time, and
// a domain's name) and its list: a hash of the path and every filter. A
// cursor taken to another list or filters would skip or repeat items, so
// it is refused. Layout: 8 bytes of number, cursorMark (never in UTF-8, so
// no older cursor reads as one), 4 bytes of binding, the name.

const cursorMark = 0xff

var errBadCursor = apiError(store.EINVALID, "query parameter \"cursor\": not a cursor this service issued; follow the Link header of the previous page")

var errForeignCursor = apiError(store.EINVALID, "query parameter \"cursor\": belongs to another list or to other filters (a cursor continues the request it came from); start again without a cursor, or follow the Link header of the previous page")

// cursorBinding is the list that the request asks for, as 4 bytes.
func cursorBinding(c echo.Context) uint32 {
	q := c.Request().URL.Query()
	q.Del("cursor")
	q.Del("limit")
	h := fnv.New32a()
	h.Write([]byte(c.Path()))
	h.Write([]byte{0})
	h.Write([]byte(q.Encode())) // sorted by name: the order of the filters does not matter
	return h.Sum32()
}

// encodeCursor encodes the last item of a page for the list of c's request.
func encodeCursor(c echo.Context, n int64, name string) string {
	b := binary.BigEndian.AppendUint64(make([]byte, 0, 13+len(name)), uint64(n))
	b = append(b, cursorMark)
	b = binary.BigEndian.AppendUint32(b, cursorBinding(c))
	return base64.RawURLEncoding.EncodeToString(append(b, name...))
}

// decodeCursor reads an encodeCursor cursor, refusing one of another list
// or filters.
func decodeCursor(c echo.Context, s string) (n int64, name string, err error) {
	b, decErr := base64.RawURLEncoding.DecodeString(s)
	if decErr != nil || len(b) < 13 || b[8] != cursorMark || !utf8.Valid(b[13:]) {
		return 0, "", errBadCursor
	}
	if binary.BigEndian.Uint32(b[9:13]) != cursorBinding(c) {
		return 0, "", errForeignCursor
	}
	return int64(binary.BigEndian.Uint64(b)), string(b[13:]), nil
}

// setNextPage puts the next page's URL in a Link header: the request's
// path and query with param (the cursor, or after) moved on to value.
func setNextPage(c echo.Context, param, value string) {
	q := c.Request().URL.Query()
	q.Set(param, value)
	u := url.URL{Path: c.Request().URL.Path, RawQuery: q.Encode()}
	c.Response().Header().Set("Link", "<"+u.String()+`>; rel="next"`)
}
