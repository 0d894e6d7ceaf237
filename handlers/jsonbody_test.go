package handlers_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"testing"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/go-json-experiment/json/jsontext"

	_ "petstore/handlers" // registers the JSON body decoder
)

// TestValidationDecoderAgreesWithKinOpenAPI holds the JSON body decoder the
// handlers register with kin-openapi to kin-openapi's own (encoding/json
// with UseNumber), on every body TestBodiesFollowTheValidator replays and
// a few more: the same error or the same value, except that data after the
// document is refused (kin-openapi's ignores it), and that with repeated
// member names or invalid UTF-8, which decodeBody refuses later, only
// success is asked for.
func TestValidationDecoderAgreesWithKinOpenAPI(t *testing.T) {
	registered := openapi3filter.RegisteredBodyDecoder("application/json")
	if registered == nil {
		t.Fatal("no JSON body decoder registered")
	}
	var bodies [][]byte
	for _, bo := range bodyOperations(t) {
		bodies = append(bodies, exampleBody(t, bo.op))
		bodies = append(bodies, awkwardBodies(t, bo.op)...)
	}
	for _, s := range []string{
		`{"a":{"x":1},"a":{"y":2}}`, `{"n":1e400}`, `{"n":-0.0}`, `{"n":123456789012345678901234567890}`,
		`[1,"a",null,true,{"b":[2.5e-3]}]`, `12`, `"x"`, " null ", `{"a":"\ud800\udc00"}`, `{"a":1} x`, `{"a":1}{}`,
	} {
		bodies = append(bodies, []byte(s))
	}
	trailing := 0
	for _, body := range bodies {
		want, wantErr := openapi3filter.JSONBodyDecoder(bytes.NewReader(body), http.Header{}, nil, nil)
		got, err := registered(bytes.NewReader(body), http.Header{}, nil, nil)
		switch {
		case wantErr != nil:
			if err == nil {
				t.Errorf("%q: kin-openapi's decoder refuses it (%v), the registered one gives %#v", body, wantErr, got)
			}
		case !json.Valid(body): // a document, then more
			trailing++
			if err == nil {
				t.Errorf("%q: data after the document is not refused", body)
			}
		case err != nil:
			t.Errorf("%q: kin-openapi's decoder gives %#v, the registered one refuses it: %v", body, want, err)
		case jsontext.Value(body).IsValid() && !reflect.DeepEqual(got, want):
			t.Errorf("%q: decoded as %#v, kin-openapi's decoder gives %#v", body, got, want)
		}
		if err != nil {
			var parseErr *openapi3filter.ParseError
			if !errors.As(err, &parseErr) || parseErr.Kind != openapi3filter.KindInvalidFormat {
				t.Errorf("%q: error %T %v, want an openapi3filter.ParseError of KindInvalidFormat", body, err, err)
			}
		}
	}
	if trailing == 0 {
		t.Error("no body with data after the document was tried")
	}
}
