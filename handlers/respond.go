package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// Every JSON answer goes out through these helpers, so that Content-Type
// and the next page's Link are set in one place.

func respond(c echo.Context, status int, v any) error {
	jsonType(c)
	if a, ok := v.(jsonAppender); ok {
		return respondEncoded(c, status, a.AppendJSON(make([]byte, 0, 128)))
	}
	return c.JSON(status, v)
}

// respondEncoded answers status with b, JSON already encoded (a pet as
// stored), and the newline Echo's c.JSON ends every document with.
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

var newline = []byte{'\n'}

// respondList answers one page of items, the next page's URL in a Link
// header when there is one. An empty page is [], never null.
func respondList[T any](c echo.Context, items []T, next int64) error {
	if next > 0 {
		setNextPage(c, "cursor", encodeCursor(c, next, ""))
	}
	if len(items) > 0 {
		if _, ok := any(&items[0]).(jsonAppender); ok {
			b := append(make([]byte, 0, 2+len(items)*96), '[')
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

// jsonAppender encodes itself as json.Marshal would, without reflection.
type jsonAppender interface{ AppendJSON([]byte) []byte }

// jsonContentType is the Content-Type of every JSON answer, shared.
var jsonContentType = []string{echo.MIMEApplicationJSON}

// jsonType sets a JSON Content-Type without allocating; Echo's JSON
// methods then keep it.
func jsonType(c echo.Context) {
	c.Response().Header()[echo.HeaderContentType] = jsonContentType
}
