package handlers

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/getkin/kin-openapi/openapi3"
)

// bodySchema is a request body's schema compiled, at start, into a check
// that runs over the body's bytes in one pass with no allocation. Like
// quickCheck it only ever says "valid for certain": it accepts a strict
// subset of what kin-openapi accepts (no escapes, no null, plain integers,
// no unknown or repeated member, valid UTF-8) and returns false for
// everything else, which then goes to the validator, whose answer and
// message stand.
//
// It only compiles schemas made of the keywords it knows; a property whose
// schema uses any other keyword (a format, a pattern, an array) is left to
// the validator whenever a body carries it.
type bodySchema struct {
	kind schemaKind

	// object
	props    []bodyProp
	required uint64 // bit i: props[i] is required

	// string: bounds on the length, counted both in code points and in
	// UTF-16 units, so that either reading of "length" agrees
	minLen, maxLen int // maxLen < 0: none
	enum           []string

	// integer
	min, max       float64
	hasMin, hasMax bool
}

type schemaKind uint8

const (
	kindObject schemaKind = iota + 1
	kindString
	kindInteger
	kindBoolean
)

// bodyProp is one property of an object schema. A nil schema means
// "present: ask the validator" (a read-only property, which a request may
// not carry, or a schema this check does not compile).
type bodyProp struct {
	name   string
	schema *bodySchema
}

// maxBodySchemaDepth bounds nesting, and so a recursive schema.
const maxBodySchemaDepth = 8

// knownKeywords are the keywords compileBodySchema understands, or that do
// not affect validation (annotations, and default, which the validator is
// told not to apply).
var knownKeywords = map[string]bool{
	"type": true, "title": true, "description": true, "example": true, "default": true, "deprecated": true,
	"format": true, "minLength": true, "maxLength": true, "enum": true, "minimum": true, "maximum": true,
	"properties": true, "required": true, "additionalProperties": true, "readOnly": true,
}

// compileBodySchema returns the check for s, or nil when s uses something
// it does not handle.
func compileBodySchema(s *openapi3.Schema, depth int) *bodySchema {
	if s == nil || depth > maxBodySchemaDepth || !onlyKnownKeywords(s) || len(s.Type.Slice()) != 1 {
		return nil
	}
	b := &bodySchema{maxLen: -1}
	switch {
	case s.Type.Is(openapi3.TypeString):
		if s.Format != "" {
			return nil
		}
		b.kind = kindString
		b.minLen = int(s.MinLength)
		if s.MaxLength != nil {
			b.maxLen = int(*s.MaxLength)
		}
		for _, v := range s.Enum {
			str, ok := v.(string)
			if !ok {
				return nil
			}
			b.enum = append(b.enum, str)
		}
		return b
	case s.Type.Is(openapi3.TypeInteger):
		if len(s.Enum) > 0 || (s.Format != "" && s.Format != "int32" && s.Format != "int64") {
			return nil
		}
		b.kind = kindInteger
		if s.Min != nil {
			b.min, b.hasMin = *s.Min, true
		}
		if s.Max != nil {
			b.max, b.hasMax = *s.Max, true
		}
		if s.Format == "int32" {
			p := intParam{min: b.min, max: b.max, hasMin: b.hasMin, hasMax: b.hasMax}
			p.setBounds(-1<<31, 1<<31-1)
			b.min, b.max, b.hasMin, b.hasMax = p.min, p.max, p.hasMin, p.hasMax
		}
		return b
	case s.Type.Is(openapi3.TypeBoolean):
		if len(s.Enum) > 0 || s.Format != "" {
			return nil
		}
		b.kind = kindBoolean
		return b
	case s.Type.Is(openapi3.TypeObject):
		if len(s.Enum) > 0 || s.Format != "" || len(s.Properties) > 64 ||
			s.AdditionalProperties.Has == nil || *s.AdditionalProperties.Has || s.AdditionalProperties.Schema != nil {
			return nil
		}
		b.kind = kindObject
		for name, ref := range s.Properties {
			if ref == nil || ref.Value == nil {
				return nil
			}
			p := bodyProp{name: name}
			if !ref.Value.ReadOnly {
				p.schema = compileBodySchema(ref.Value, depth+1)
			}
			b.props = append(b.props, p)
		}
		for _, name := range s.Required {
			i := b.prop(name)
			if i < 0 || b.props[i].schema == nil {
				// Required but unknown, read-only or not compiled: the
				// validator's rules for those are its own.
				return nil
			}
			b.required |= 1 << i
		}
		return b
	}
	return nil
}

// onlyKnownKeywords reports whether every keyword s sets is in
// knownKeywords, read from its JSON form so that a keyword this code has
// never heard of counts as unknown.
func onlyKnownKeywords(s *openapi3.Schema) bool {
	raw, err := json.Marshal(s)
	if err != nil {
		return false
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return false
	}
	for k, v := range m {
		if !knownKeywords[k] {
			return false
		}
		if k == "readOnly" && string(v) != "true" && string(v) != "false" {
			return false
		}
	}
	return true
}

func (b *bodySchema) prop(name string) int {
	for i := range b.props {
		if b.props[i].name == name {
			return i
		}
	}
	return -1
}

// accepts reports whether data is one JSON value that matches b, for
// certain.
func (b *bodySchema) accepts(data []byte) bool {
	s := jsonScan{data: data}
	s.space()
	if !s.value(b) {
		return false
	}
	s.space()
	return s.i == len(s.data)
}

// jsonScan reads strict JSON (RFC 8259) from data, refusing whatever it
// does not need to understand.
type jsonScan struct {
	data []byte
	i    int
}

func (s *jsonScan) space() {
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *jsonScan) value(b *bodySchema) bool {
	switch b.kind {
	case kindObject:
		return s.object(b)
	case kindString:
		raw, runes, units, ok := s.str()
		if !ok || runes < b.minLen || units < b.minLen || (b.maxLen >= 0 && (runes > b.maxLen || units > b.maxLen)) {
			return false
		}
		if len(b.enum) == 0 {
			return true
		}
		for _, e := range b.enum {
			if string(raw) == e {
				return true
			}
		}
		return false
	case kindInteger:
		n, ok := s.integer()
		f := float64(n)
		return ok && !(b.hasMin && f < b.min) && !(b.hasMax && f > b.max)
	case kindBoolean:
		return s.literal("true") || s.literal("false")
	}
	return false
}

func (s *jsonScan) object(b *bodySchema) bool {
	if s.i >= len(s.data) || s.data[s.i] != '{' {
		return false
	}
	s.i++
	var seen uint64
	s.space()
	if s.i < len(s.data) && s.data[s.i] == '}' {
		s.i++
		return b.required == 0
	}
	for {
		name, _, _, ok := s.str()
		if !ok {
			return false
		}
		i := -1
		for j := range b.props {
			if string(name) == b.props[j].name {
				i = j
				break
			}
		}
		if i < 0 || b.props[i].schema == nil || seen&(1<<i) != 0 {
			return false // unknown, left to the validator, or repeated
		}
		seen |= 1 << i
		s.space()
		if s.i >= len(s.data) || s.data[s.i] != ':' {
			return false
		}
		s.i++
		s.space()
		if !s.value(b.props[i].schema) {
			return false
		}
		s.space()
		if s.i >= len(s.data) {
			return false
		}
		switch s.data[s.i] {
		case ',':
			s.i++
			s.space()
		case '}':
			s.i++
			return seen&b.required == b.required
		default:
			return false
		}
	}
}

// str reads a string with no escape sequences and returns its bytes and
// its length in code points and in UTF-16 units.
func (s *jsonScan) str() (raw []byte, runes, units int, ok bool) {
	if s.i >= len(s.data) || s.data[s.i] != '"' {
		return nil, 0, 0, false
	}
	s.i++
	start := s.i
	for s.i < len(s.data) {
		c := s.data[s.i]
		switch {
		case c == '"':
			raw = s.data[start:s.i]
			s.i++
			return raw, runes, units, true
		case c == '\\' || c < 0x20:
			return nil, 0, 0, false
		case c < utf8.RuneSelf:
			s.i++
			runes++
			units++
		default:
			r, size := utf8.DecodeRune(s.data[s.i:])
			if r == utf8.RuneError && size == 1 {
				return nil, 0, 0, false
			}
			s.i += size
			runes++
			units++
			if r > 0xFFFF {
				units++
			}
		}
	}
	return nil, 0, 0, false
}

// integer reads an integer of at most maxQuickDigits digits, optionally
// negative, with no fraction, exponent or leading zero.
func (s *jsonScan) integer() (int64, bool) {
	neg := false
	if s.i < len(s.data) && s.data[s.i] == '-' {
		neg = true
		s.i++
	}
	start := s.i
	var n int64
	for s.i < len(s.data) && s.data[s.i] >= '0' && s.data[s.i] <= '9' {
		n = n*10 + int64(s.data[s.i]-'0')
		s.i++
	}
	digits := s.i - start
	if digits == 0 || digits > maxQuickDigits || (s.data[start] == '0' && digits > 1) ||
		(s.i < len(s.data) && (s.data[s.i] == '.' || s.data[s.i] == 'e' || s.data[s.i] == 'E')) {
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}

func (s *jsonScan) literal(lit string) bool {
	if len(s.data)-s.i >= len(lit) && string(s.data[s.i:s.i+len(lit)]) == lit {
		s.i += len(lit)
		return true
	}
	return false
}
