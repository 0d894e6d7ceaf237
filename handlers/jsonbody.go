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
// check, a large part of what validating a POST costs. Its registry of body
// decoders takes another: this one decodes with go-json-experiment, the
// handlers' decoder, to the same values (numbers as json.Number, so that
// 64-bit integers keep every digit) with fewer allocations. Like
// kin-openapi's, it lets repeated member names and invalid UTF-8 through:
// decodeBody refuses those with messages that say which member. Unlike it,
// it refuses data after the document, which decodeBody refuses anyway.
// kin-openapi's registry is the process's, so the registration is too.
func init() {
	openapi3filter.RegisterBodyDecoder(echo.MIMEApplicationJSON, decodeBodyForValidation)
}

// validationDecoding are the options of decodeBodyForValidation.
var validationDecoding = json.JoinOptions(
	json.WithUnmarshalers(json.UnmarshalFromFunc(numberAsJSONNumber)),
	jsontext.AllowDuplicateNames(true),
	jsontext.AllowInvalidUTF8(true),
)

// decodeBodyForValidation is an openapi3filter.BodyDecoder for JSON.
// Integer fields written with a fraction or an exponent, or beyond 64
// bits, are refused here, where their text is still known (checkIntegers).
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

// numberAsJSONNumber decodes a JSON number held by an interface value as
// the json.Number of its text, as encoding/json's UseNumber does, which is
// what kin-openapi's schema check expects; other values are left to the
// default.
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
