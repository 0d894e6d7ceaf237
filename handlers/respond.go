package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// Every JSON answer, success or Error, goes out through these helpers, so
// the Content-Type and the Link of the next page are set in one place; the
// answer of a POST, with its Location, is an answer (idempotency.go), made
// alike for the request and the replays of its Idempotency-Key.

// respond answers status with v as JSON.
func respond(c echo.Context, status int, v any) error {
	jsonType(c)
	if a, ok := v.(jsonAppender); ok {
		return respondEncoded(c, status, a.AppendJSON(make([]byte, 0, 128)))
	}
	return c.JSON(status, v)
}

// respondEncoded answers status with b, a JSON document already encoded
// (the store keeps each pet in its API form, so GET /pets/{id} sends it as
// stored, without a decode and an encode), and the newline that Echo's
// c.JSON ends every document with: one rule for every JSON answer.
func respondEncoded(c echo.Context, status int, b []byte) error {
	jsonType(c)
	res := c.Response()
	res.WriteHeader(status)
	if _, err := res.Write(b); err != nil {
		return err
	}
	_, err := res.Write(newline)
	return err
}

// newline ends every JSON answer.
var newline = []byte{'\n'}

// respondList answers one page of items and, when there is a next one, puts
// its URL in a Link header: the same path and query with the cursor moved on.
// An empty page is [], never null.
func respondList[T any](c echo.Context, items []T, next int64) error {
	if next > 0 {
		setNextPage(c, encodeCursor(c, next, ""))
	}
	if len(items) > 0 {
		if _, ok := any(&items[0]).(jsonAppender); ok {
			b := make([]byte, 0, 2+len(items)*96)
			b = append(b, '[')
			for i := range items {
				if i > 0 {
					b = append(b, ',')
				}
				b = any(&items[i]).(jsonAppender).AppendJSON(b)
			}
			return respondEncoded(c, http.StatusOK, append(b, ']'))
		}
	}
	if items == nil {
		items = []T{}
	}
	return respond(c, http.StatusOK, items)
}

// jsonAppender is a value that encodes itself as json.Marshal would, without
// reflection (store.Pet, the most requested resource).
type jsonAppender interface{ AppendJSON([]byte) []byte }

// jsonContentType is the Content-Type of every JSON answer, shared.
var jsonContentType = []string{echo.MIMEApplicationJSON}

// jsonType sets the answer's Content-Type to JSON without an allocation;
// Echo's JSON methods then leave it as it is.
func jsonType(c echo.Context) {
	c.Response().Header()[echo.HeaderContentType] = jsonContentType
}
