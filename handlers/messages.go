package handlers

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// Validation messages say what a field takes as the API reference says it,
// from the field's schema. kin-openapi's own reasons name the Go format's
// range, print bounds as 1e+06, quote format regexps, and name one
// missing field at a time.

// dateTimeHint is how every message about a date-time says what one is.
const dateTimeHint = "a date-time in RFC 3339, for example 2026-12-01T10:00:00Z"

// wholeNumber says which integers the schema takes, within its format's.
func wholeNumber(s *openapi3.Schema) string {
	// Without a format, an integer is kept in 64 bits, as int64 is.
	lo, hi := float64(math.MinInt64), float64(math.MaxInt64)
	if s.Format == "int32" {
		lo, hi = math.MinInt32, math.MaxInt32
	}
	if s.Min != nil {
		lo = math.Max(lo, math.Ceil(*s.Min))
	}
	if s.Max != nil {
		hi = math.Min(hi, math.Floor(*s.Max))
	}
	return fmt.Sprintf("a whole number from %s to %s", boundText(lo, s.Format != "int32"), boundText(hi, s.Format != "int32"))
}

// boundText prints a bound in digits, the 64-bit limits exactly.
func boundText(v float64, wide bool) string {
	switch {
	case wide && v <= math.MinInt64:
		return strconv.FormatInt(math.MinInt64, 10)
	case wide && v >= math.MaxInt64:
		return strconv.FormatInt(math.MaxInt64, 10)
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// integerReason is the message for an integer field whose value (JSON
// text, or "" when unknown) the schema refuses.
func integerReason(s *openapi3.Schema, text string) string {
	if strings.ContainsAny(text, ".eE") {
		return "must be " + wholeNumber(s) + ", written in digits only: no fraction, no exponent"
	}
	return "must be " + wholeNumber(s)
}

func isInteger(s *openapi3.Schema) bool {
	return s != nil && s.Type.Is(openapi3.TypeInteger)
}

// schemaReason is the reason a value breaks a schema, never with the
// schema dump or value kin-openapi appends.
func schemaReason(e *openapi3.SchemaError) string {
	s := e.Schema
	if s == nil {
		return "does not match the schema"
	}
	if isInteger(s) {
		text := ""
		if n, ok := e.Value.(json.Number); ok {
			text = string(n)
		}
		return integerReason(s, text)
	}
	switch e.SchemaField {
	case "type", "nullable":
		return "must be " + typeWords(s)
	case "format":
		if s.Format == "date-time" {
			return "must be " + dateTimeHint
		}
		return fmt.Sprintf("must be in the %q format", s.Format)
	case "pattern":
		// A regular expression says nothing to most readers.
		return "is not in the form this field takes (see its description in the API reference)"
	case "enum":
		var values []string
		for _, v := range s.Enum {
			values = append(values, fmt.Sprint(v))
		}
		return "must be one of " + strings.Join(values, ", ")
	case "minLength":
		if s.MinLength == 1 {
			return "must not be empty"
		}
		return fmt.Sprintf("must be at least %d characters long", s.MinLength)
	case "maxLength":
		if s.MaxLength != nil {
			return fmt.Sprintf("must be at most %d characters long", *s.MaxLength)
		}
	case "minimum", "maximum":
		lo, hi := "", ""
		if s.Min != nil {
			lo = strconv.FormatFloat(*s.Min, 'f', -1, 64)
		}
		if s.Max != nil {
			hi = strconv.FormatFloat(*s.Max, 'f', -1, 64)
		}
		switch {
		case lo != "" && hi != "":
			return fmt.Sprintf("must be a number from %s to %s", lo, hi)
		case lo != "":
			return "must be at least " + lo
		case hi != "":
			return "must be at most " + hi
		}
	case "minItems":
		return fmt.Sprintf("must have at least %d items", s.MinItems)
	case "maxItems":
		if s.MaxItems != nil {
			return fmt.Sprintf("must have at most %d items", *s.MaxItems)
		}
	case "additionalProperties":
		return "is not a field of this object"
	}
	if strings.Contains(e.Reason, "json.Number") {
		// kin-openapi's words for a number beyond float64, such as 1e400.
		return "is not a number within range"
	}
	if e.Reason != "" && !strings.ContainsAny(e.Reason, "^$[]\\") {
		return e.Reason
	}
	return fmt.Sprintf("does not match the %q rule of the schema", e.SchemaField)
}

// typeWords names what a schema's type takes.
func typeWords(s *openapi3.Schema) string {
	switch {
	case isInteger(s):
		return wholeNumber(s)
	case s.Type.Is(openapi3.TypeNumber):
		return "a number"
	case s.Type.Is(openapi3.TypeString) && s.Format == "date-time":
		return dateTimeHint
	case s.Type.Is(openapi3.TypeString):
		return "a string"
	case s.Type.Is(openapi3.TypeBoolean):
		return "true or false"
	case s.Type.Is(openapi3.TypeArray):
		return "an array"
	case s.Type.Is(openapi3.TypeObject):
		return "an object"
	}
	return "a value of the documented type"
}

// missingFields names, in one message and schema order, every required
// field the object lacks.
func missingFields(e *openapi3.SchemaError) (string, bool) {
	obj, ok := e.Value.(map[string]any)
	if e.SchemaField != "required" || !ok || e.Schema == nil {
		return "", false
	}
	var missing []string
	for _, name := range e.Schema.Required {
		if _, ok := obj[name]; ok {
			continue
		}
		if p := e.Schema.Properties[name]; p != nil && p.Value != nil && p.Value.ReadOnly {
			continue
		}
		missing = append(missing, strconv.Quote(name))
	}
	switch len(missing) {
	case 0:
		return "", false
	case 1:
		return "missing the required field " + missing[0], true
	}
	return "missing the required fields " + strings.Join(missing[:len(missing)-1], ", ") + " and " + missing[len(missing)-1], true
}

// numberError is an integer field written with a fraction or exponent, or
// beyond 64 bits, found while decoding, before kin-openapi's float64 would
// judge it apart from its neighbours.
type numberError struct {
	pointer []string
	schema  *openapi3.Schema
	text    string
}

func (e *numberError) Error() string { return integerReason(e.schema, e.text) }

// checkIntegers walks the decoded body along its schema and returns the
// first integer field that is not digits within 64 bits.
func checkIntegers(v any, ref *openapi3.SchemaRef, path []string) error {
	if ref == nil || ref.Value == nil {
		return nil
	}
	s := ref.Value
	switch v := v.(type) {
	case json.Number:
		if !isInteger(s) {
			return nil
		}
		if _, err := strconv.ParseInt(string(v), 10, 64); err != nil {
			return &numberError{pointer: path, schema: s, text: string(v)}
		}
	case map[string]any:
		// Sorted, so that of several the same one is named each time.
		for _, name := range slices.Sorted(maps.Keys(v)) {
			if p, ok := s.Properties[name]; ok {
				if err := checkIntegers(v[name], p, append(path[:len(path):len(path)], name)); err != nil {
					return err
				}
			}
		}
	case []any:
		for i, child := range v {
			if err := checkIntegers(child, s.Items, append(path[:len(path):len(path)], strconv.Itoa(i))); err != nil {
				return err
			}
		}
	}
	return nil
}
