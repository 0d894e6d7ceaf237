package handlers

import (
	"errors"
	"io"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/labstack/echo/v4"

	"petstore/store"
)

// decodeBody decodes the JSON body into v in one pass. After validation it
// still refuses what the schema cannot express and a lenient decoder would
// quietly change: integers beyond the Go type, duplicate names, invalid
// UTF-8 and unpaired surrogates (RFC 7493), and, with validation off,
// unknown members.
func decodeBody(c echo.Context, v any) error {
	// readBody has read it (empty when there was none).
	var raw []byte
	if b, ok := c.Request().Body.(*readBodyBytes); ok {
		raw = b.data
	}
	if err := json.Unmarshal(raw, v, json.RejectUnknownMembers(true)); err != nil {
		return decodeError(err)
	}
	return nil
}

// given sets *field to v when the body had the member (v not nil).
func given[T any](field *T, v *T) {
	if v != nil {
		*field = *v
	}
}

// decodeError names the body field a decoding error is about.
func decodeError(err error) error {
	var (
		syn *jsontext.SyntacticError
		sem *json.SemanticError
	)
	switch {
	case errors.As(err, &syn) && errors.Is(syn.Err, jsontext.ErrDuplicateName):
		return apiError(store.EINVALID, "%s: member %q appears more than once", bodyField(syn.JSONPointer.Parent()), syn.JSONPointer.LastToken())
	case errors.As(err, &syn):
		return apiError(store.EINVALID, "%s: malformed JSON or text that is not valid UTF-8 (invalid bytes or an unpaired surrogate escape such as \\ud800)", bodyField(syn.JSONPointer))
	case errors.As(err, &sem) && errors.Is(sem.Err, json.ErrUnknownName):
		return apiError(store.EINVALID, "%s: unknown field", bodyField(sem.JSONPointer))
	case errors.As(err, &sem):
		return apiError(store.EINVALID, "%s: must be %s", bodyField(sem.JSONPointer), typeName(sem.GoType))
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return apiError(store.EINVALID, "body: malformed JSON")
	default:
		return err
	}
}

// bodyField is a JSON pointer as messages name fields: body.shipDate.
func bodyField(p jsontext.Pointer) string {
	return "body" + strings.ReplaceAll(string(p), "/", ".")
}

// typeName says in a client's words what a Go type accepts.
func typeName(t reflect.Type) string {
	if t == nil {
		return "a JSON value of the documented type"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeFor[time.Time]() {
		return dateTimeHint
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int64, reflect.Int32:
		// Reached only without validation, which names the field's range.
		return "a whole number, written in digits only: no fraction, no exponent"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	default:
		return "a JSON value of the documented type"
	}
}

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

// page reads limit and cursor. A cursor is the previous page's last id,
// encoded so that clients treat it as opaque.
func page(c echo.Context) (store.Page, error) {
	var p store.Page
	var err error
	if p.Limit, err = pageLimit(c); err != nil {
		return p, err
	}
	if raw := c.QueryParam("cursor"); raw != "" {
		after, name, err := decodeCursor(c, raw)
		if err != nil {
			return p, err
		}
		if name != "" || after < 1 {
			return p, errBadCursor
		}
		p.After = after
	}
	return p, nil
}

// pageLimit reads limit: 0 when it is absent, for the default.
func pageLimit(c echo.Context) (int, error) {
	raw := c.QueryParam("limit")
	if raw == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 || n > store.MaxPageSize {
		return 0, apiError(store.EINVALID, "query parameter \"limit\": must be an integer from 1 to %d", store.MaxPageSize)
	}
	return n, nil
}
