package web

import (
	"context"
	"fmt"

	"github.com/getkin/kin-openapi/openapi3"
)

// Extensions of the public document: the reference shows them and the
// handlers act on the deprecation dates.
const (
	ExtStability       = "x-stability"         // "beta" or "experimental"
	ExtSunset          = "x-deprecated-sunset" // YYYY-MM-DD
	ExtDeprecatedSince = "x-deprecated-since"  // YYYY-MM-DD
	ExtSuccessor       = "x-successor-version" // the URL that replaces a deprecated call, with its path parameters
	ExtHideTryIt       = "x-hideTryItPanel"    // true: no try-it panel
	// ExtTryItFirst names a record the try-it example body refers to:
	// {field, read, create}, the body's member and the operationIds reading
	// and creating it. The panel creates it first, from create's example,
	// when read finds none, so that examples work on a fresh store.
	ExtTryItFirst = "x-try-it-first"
)

// ParseSpec parses and validates an OpenAPI 3 document (YAML or JSON), once
// at start, for the validator and RenderReference. It records where each
// element is written, for the reference's order, which maps lose.
func ParseSpec(data []byte) (*openapi3.T, error) {
	loader := openapi3.NewLoader()
	loader.IncludeOrigin = true
	doc, err := loader.LoadFromData(data)
	if err != nil {
		return nil, fmt.Errorf("parsing the OpenAPI document: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("validating the OpenAPI document: %w", err)
	}
	return doc, nil
}
