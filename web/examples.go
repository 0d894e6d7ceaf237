// Examples on the reference page: a media type's own, or one built from
// its schema, as indented JSON in the schema's member order.

package web

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// examplesOf lists a media type's examples: its own, or its schema's.
func examplesOf(mt *openapi3.MediaType) []exampleView {
	if mt.Example != nil {
		return []exampleView{{JSON: exampleJSON(mt.Example, mt.Schema)}}
	}
	if len(mt.Examples) > 0 {
		var out []exampleView
		for _, n := range slices.Sorted(maps.Keys(mt.Examples)) {
			ex := mt.Examples[n]
			if ex == nil || ex.Value == nil || ex.Value.Value == nil {
				continue
			}
			out = append(out, exampleView{Title: cmp.Or(ex.Value.Summary, n), JSON: exampleJSON(ex.Value.Value, mt.Schema)})
		}
		return out
	}
	if ex, ok := exampleFromSchema(mt.Schema, 0); ok {
		return []exampleView{{JSON: exampleJSON(ex, mt.Schema)}}
	}
	return nil
}

// exampleFromSchema builds an example from a schema's own example or its
// parts'.
func exampleFromSchema(ref *openapi3.SchemaRef, depth int) (any, bool) {
	if ref == nil || ref.Value == nil || depth > 8 {
		return nil, false
	}
	s := ref.Value
	switch {
	case s.Example != nil:
		return s.Example, true
	case s.Default != nil:
		return s.Default, true
	case len(s.Enum) > 0:
		return s.Enum[0], true
	case s.Type.Is(openapi3.TypeObject) || len(s.Properties) > 0:
		obj := map[string]any{}
		for name, p := range s.Properties {
			if v, ok := exampleFromSchema(p, depth+1); ok {
				obj[name] = v
			}
		}
		return obj, len(obj) > 0
	case s.Type.Is(openapi3.TypeArray):
		if v, ok := exampleFromSchema(s.Items, depth+1); ok {
			return []any{v}, true
		}
	}
	return nil, false
}

// exampleJSON indents an example as JSON with keys in schema order, the
// order the reader has just seen, not encoding/json's alphabetical one.
func exampleJSON(v any, schema *openapi3.SchemaRef) string {
	var compact, indented bytes.Buffer
	writeOrdered(&compact, v, schema)
	if err := json.Indent(&indented, compact.Bytes(), "", "  "); err != nil {
		return compact.String()
	}
	return indented.String()
}

// writeOrdered writes v as compact JSON, keys in schema order, then the
// others alphabetically.
func writeOrdered(b *bytes.Buffer, v any, schema *openapi3.SchemaRef) {
	s := &openapi3.Schema{}
	if schema != nil && schema.Value != nil {
		s = schema.Value
	}
	switch x := v.(type) {
	case map[string]any:
		keys := slices.DeleteFunc(propertyOrder(s), func(k string) bool { _, ok := x[k]; return !ok })
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if s.Properties[k] == nil {
				keys = append(keys, k)
			}
		}
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(scalarJSON(k) + ":")
			writeOrdered(b, x[k], s.Properties[k])
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, item := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			writeOrdered(b, item, s.Items)
		}
		b.WriteByte(']')
	default:
		b.WriteString(scalarJSON(x))
	}
}

// scalarJSON does not escape <, > and &: the page escapes what it shows,
// and a Link header example should read as one.
func scalarJSON(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}
