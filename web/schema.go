package web

import (
	"cmp"
	"fmt"
	"html/template"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

const componentSchemaPrefix = "#/components/schemas/"

// schemaView is a schema with its $refs resolved, as the page shows it: a
// type line and, for objects and arrays, the properties below.
type schemaView struct {
	// Ref is the component's name when the schema is a $ref to one.
	Ref         string
	Type        string
	Format      string
	Description template.HTML
	Enum        []string // values as JSON
	Facts       []fact
	Example     string // a scalar's example as JSON; objects show theirs below the body
	Props       []propView
	// Closed: additionalProperties is false.
	Closed bool
	// Items is an array's element schema.
	Items *schemaView
	// Variants are the oneOf/anyOf/allOf alternatives, under VariantKind.
	Variants    []*schemaView
	VariantKind string
	// Cycle marks a $ref met again inside its own expansion: linked, not
	// expanded.
	Cycle bool
	// Brief: the type line and property names only, with a link.
	Brief bool
}

// fact is one limit or property of a schema in words, with an optional
// value as code.
type fact struct {
	Text string
	Code string
}

type propView struct {
	Name     string
	Required bool
	Schema   *schemaView
}

// maxSchemaDepth bounds nesting that $refs do not catch (deeply inlined
// schemas).
const maxSchemaDepth = 12

func schemaOf(ref *openapi3.SchemaRef) *schemaView { return buildSchema(ref, map[string]bool{}, 0) }

// buildSchema resolves ref, depth deep in its tree; expanding holds the
// $refs being expanded, so a recursive schema stops at its second time.
func buildSchema(ref *openapi3.SchemaRef, expanding map[string]bool, depth int) *schemaView {
	if ref == nil || ref.Value == nil {
		return nil
	}
	v := &schemaView{}
	if name, ok := strings.CutPrefix(ref.Ref, componentSchemaPrefix); ok {
		v.Ref = name
		if expanding[name] || depth > maxSchemaDepth {
			v.Cycle = true
			return v
		}
		expanding[name] = true
		defer delete(expanding, name)
	}
	s := ref.Value
	if s.Type != nil {
		v.Type = strings.Join(s.Type.Slice(), " or ")
	}
	v.Format = s.Format
	v.Description, _ = renderMarkdown(s.Description, 5, "schema-")
	for _, e := range s.Enum {
		v.Enum = append(v.Enum, valueText(e))
	}
	v.Facts = facts(s)
	if s.Example != nil && !s.Type.Is(openapi3.TypeObject) && !s.Type.Is(openapi3.TypeArray) {
		v.Example = valueText(s.Example)
	}

	for _, name := range propertyOrder(s) {
		v.Props = append(v.Props, propView{Name: name, Required: slices.Contains(s.Required, name), Schema: buildSchema(s.Properties[name], expanding, depth+1)})
	}
	v.Closed = s.AdditionalProperties.Has != nil && !*s.AdditionalProperties.Has
	v.Items = buildSchema(s.Items, expanding, depth+1)
	for _, group := range []struct {
		kind string
		list openapi3.SchemaRefs
	}{{"all of", s.AllOf}, {"one of", s.OneOf}, {"any of", s.AnyOf}} {
		if len(group.list) == 0 {
			continue
		}
		v.VariantKind = group.kind
		for _, r := range group.list {
			v.Variants = append(v.Variants, buildSchema(r, expanding, depth+1))
		}
		break
	}
	return v
}

// propertyOrder lists required properties first, each group in the
// document's order when known (else alphabetically).
func propertyOrder(s *openapi3.Schema) []string {
	line := func(name string) int {
		// For a $ref, where the $ref is written, not the component.
		if p := s.Properties[name]; p != nil && p.Origin != nil && p.Origin.Key != nil {
			return p.Origin.Key.Line
		}
		return 0
	}
	return slices.SortedFunc(maps.Keys(s.Properties), func(a, c string) int {
		if ra, rc := slices.Contains(s.Required, a), slices.Contains(s.Required, c); ra != rc {
			if ra {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(line(a), line(c)), strings.Compare(a, c))
	})
}

// sizeFact words a bound on a length or a count: "1 to 50 items".
func sizeFact(min uint64, max *uint64, unit string) (string, bool) {
	switch {
	case min > 0 && max != nil && min == *max:
		return fmt.Sprintf("exactly %d %s", min, unit), true
	case min > 0 && max != nil:
		return fmt.Sprintf("%d to %d %s", min, *max, unit), true
	case max != nil:
		return fmt.Sprintf("up to %d %s", *max, unit), true
	case min > 0:
		return fmt.Sprintf("at least %d %s", min, unit), true
	}
	return "", false
}

// facts words a schema's limits and flags the way a reader needs them.
func facts(s *openapi3.Schema) []fact {
	var out []fact
	add := func(text, code string) { out = append(out, fact{Text: text, Code: code}) }

	if text, ok := sizeFact(s.MinLength, s.MaxLength, "characters"); ok {
		add(text, "")
	}

	minOp, maxOp := "minimum", "maximum"
	if s.ExclusiveMin.IsTrue() {
		minOp = "greater than"
	}
	if s.ExclusiveMax.IsTrue() {
		maxOp = "less than"
	}
	switch {
	case s.ExclusiveMin.Value != nil:
		add("greater than "+num(*s.ExclusiveMin.Value), "")
	case s.Min != nil && s.Max != nil && !s.ExclusiveMin.IsTrue() && !s.ExclusiveMax.IsTrue():
		add(fmt.Sprintf("%s to %s", num(*s.Min), num(*s.Max)), "")
	case s.Min != nil:
		add(minOp+" "+num(*s.Min), "")
	}
	switch {
	case s.ExclusiveMax.Value != nil:
		add("less than "+num(*s.ExclusiveMax.Value), "")
	case s.Max != nil && (s.Min == nil || s.ExclusiveMin.IsTrue() || s.ExclusiveMax.IsTrue()):
		add(maxOp+" "+num(*s.Max), "")
	}
	if s.MultipleOf != nil {
		add("multiple of "+num(*s.MultipleOf), "")
	}

	if text, ok := sizeFact(s.MinItems, s.MaxItems, "items"); ok {
		add(text, "")
	}
	if s.UniqueItems {
		add("items unique", "")
	}
	if s.MinProps > 0 {
		add(fmt.Sprintf("at least %d %s", s.MinProps, plural(s.MinProps, "property", "properties")), "")
	}
	if s.MaxProps != nil {
		add(fmt.Sprintf("at most %d %s", *s.MaxProps, plural(*s.MaxProps, "property", "properties")), "")
	}
	if s.Pattern != "" {
		add("pattern", s.Pattern)
	}
	if s.Default != nil {
		add("default", valueText(s.Default))
	}
	for _, flag := range []struct {
		on   bool
		text string
	}{{s.Nullable, "may be null"}, {s.ReadOnly, "read-only: set by the server, never sent"}, {s.WriteOnly, "write-only: never returned"}, {s.Deprecated, "deprecated"}} {
		if flag.on {
			add(flag.text, "")
		}
	}
	return out
}

func plural(n uint64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// valueText shows a value from the schema: a string as it is (the type
// line already says it is a string), anything else as JSON.
func valueText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return scalarJSON(v)
}
