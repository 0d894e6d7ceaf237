package handlers

import (
	stdjson "encoding/json"
	"io"
	"net/http"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/labstack/echo/v4"
)

// kin-openapi decodes a JSON body with encoding/json before its schema
// check, a large part of validating a POST; this registered decoder uses
// go-json-experiment instead, to the same values with fewer allocations.
// Repeated names and invalid UTF-8 pass, for decodeBody to name.
func init() {
	openapi3filter.RegisterBodyDecoder(echo.MIMEApplicationJSON, decodeBodyForValidation)
}

// validationDecoding are the options of decodeBodyForValidation.
var validationDecoding = json.JoinOptions(
	json.WithUnmarshalers(json.UnmarshalFromFunc(numberAsJSONNumber)),
	jsontext.AllowDuplicateNames(true),
	jsontext.AllowInvalidUTF8(true),
)

// decodeBodyForValidation is an openapi3filter.BodyDecoder for JSON. It
// refuses integers with a fraction, an exponent or beyond 64 bits while
// their text is known (checkIntegers).
func decodeBodyForValidation(body io.Reader, _ http.Header, schema *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
	var v any
	if err := json.UnmarshalRead(body, &v, validationDecoding); err != nil {
		return nil, &openapi3filter.ParseError{Kind: openapi3filter.KindInvalidFormat, Cause: err}
	}
	if err := checkIntegers(v, schema, nil); err != nil {
		return nil, err
	}
	return v, nil
}

// numberAsJSONNumber decodes a number in an interface value as the
// json.Number of its text, as kin-openapi's schema check expects.
func numberAsJSONNumber(dec *jsontext.Decoder, v *any) error {
	if dec.PeekKind() != '0' {
		return json.SkipFunc
	}
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	*v = stdjson.Number(tok.String())
	return nil
}
