package handlers

import (
	"bytes"
	"maps"
	"slices"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/labstack/echo/v4"

	"petstore/store"
)

// refuseUnstorableText answers 400 naming the first path or query
// parameter or body string (names too) holding text a store cannot keep
// (store.UnstorableText): both stores must answer alike, and a bbolt file
// must be able to move to PostgreSQL.
func refuseUnstorableText(c echo.Context) error {
	names, values := c.ParamNames(), c.ParamValues()
	for i, n := range names {
		if why := store.UnstorableText(values[i]); why != "" {
			return apiError(store.EINVALID, "path parameter %q: %s", n, why)
		}
	}
	query := c.QueryParams()
	for _, k := range slices.Sorted(maps.Keys(query)) {
		for _, v := range query[k] {
			if why := store.UnstorableText(v); why != "" {
				return apiError(store.EINVALID, "query parameter %q: %s", k, why)
			}
		}
	}
	if b, ok := c.Request().Body.(*readBodyBytes); ok {
		return refuseUnstorableJSON(b.data)
	}
	return nil
}

// nulEscape is U+0000 in JSON: raw NULs are not allowed in strings, and
// invalid UTF-8 is refused before this runs.
var nulEscape = []byte(`\u0000`)

// refuseUnstorableJSON names a JSON document's first string holding
// U+0000; most bodies cost one scan of their bytes.
func refuseUnstorableJSON(data []byte) error {
	if !bytes.Contains(data, nulEscape) {
		return nil
	}
	dec := jsontext.NewDecoder(bytes.NewReader(data))
	for {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil // malformed JSON is the validator's and the decoder's to refuse
		}
		if tok.Kind() != '"' {
			continue
		}
		if why := store.UnstorableText(tok.String()); why != "" {
			return apiError(store.EINVALID, "%s: %s", bodyField(dec.StackPointer()), why)
		}
	}
}
