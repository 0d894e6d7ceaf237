package handlers

import (
	"bytes"
	"slices"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/labstack/echo/v4"

	"petstore/store"
)

// refuseUnstorableText answers 400 naming the first path parameter, query
// parameter or body string (member names included) that holds text one of
// the stores cannot keep (store.UnstorableText): the same request must get
// the same answer on bbolt and on PostgreSQL, and a bbolt file must hold
// nothing that could not move to PostgreSQL.
func refuseUnstorableText(c echo.Context) error {
	names, values := c.ParamNames(), c.ParamValues()
	for i, n := range names {
		if i < len(values) {
			if why := store.UnstorableText(values[i]); why != "" {
				return apiError(store.EINVALID, "path parameter %q: %s", n, why)
			}
		}
	}
	query := c.QueryParams()
	keys := make([]string, 0, len(query))
	for k := range query {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
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

// nulEscape is how U+0000 appears in JSON: a raw NUL is not allowed in a
// JSON string, and the decoder refuses invalid UTF-8 before this runs.
var nulEscape = []byte(`\u0000`)

// refuseUnstorableJSON names the first string of a JSON document that holds
// U+0000. Most bodies hold no such escape and cost one scan of their bytes.
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
