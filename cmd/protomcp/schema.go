package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// schema is a decoded JSON Schema node: an object, or a boolean schema (nil here).
type schema = map[string]any

// decodeSchema decodes a manifest's schema; numbers stay json.Number so that they compare
// exactly.
func decodeSchema(raw json.RawMessage) (schema, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("decode schema: %w", err)
	}
	s, _ := v.(schema)
	return s, nil
}

// node is one schema reached by a walk.
type node struct {
	s    schema
	path string // JSON Pointer from the root, e.g. /properties/days/anyOf/0
	// property is the name when the node is the value of a "properties" entry.
	property string
	// depth counts the object schemas from the root to this node, the root being 1 when it
	// is an object.
	depth int
}

// subschemaKeywords lists the keywords whose values are schemas, and how: a single schema,
// an array of schemas, or a map of names to schemas.
var subschemaKeywords = map[string]string{
	"additionalProperties":  "one",
	"contains":              "one",
	"else":                  "one",
	"if":                    "one",
	"items":                 "one",
	"not":                   "one",
	"propertyNames":         "one",
	"then":                  "one",
	"unevaluatedItems":      "one",
	"unevaluatedProperties": "one",
	"allOf":                 "array",
	"anyOf":                 "array",
	"oneOf":                 "array",
	"prefixItems":           "array",
	"$defs":                 "map",
	"definitions":           "map",
	"dependentSchemas":      "map",
	"patternProperties":     "map",
	"properties":            "map",
}

// walk visits root and every schema under it, in a stable order (keywords and names
// sorted), calling visit for each.
func walk(root schema, visit func(n node)) {
	var rec func(n node)
	rec = func(n node) {
		if n.s == nil {
			return
		}
		if isObjectType(n.s) {
			n.depth++
		}
		visit(n)
		for _, kw := range sortedKeys(n.s) {
			how, ok := subschemaKeywords[kw]
			if !ok {
				continue
			}
			base := n.path + "/" + escapePointer(kw)
			switch how {
			case "one":
				if sub, ok := n.s[kw].(schema); ok {
					rec(node{s: sub, path: base, depth: n.depth})
				}
			case "array":
				arr, _ := n.s[kw].([]any)
				for i, v := range arr {
					if sub, ok := v.(schema); ok {
						rec(node{s: sub, path: fmt.Sprintf("%s/%d", base, i), depth: n.depth})
					}
				}
			case "map":
				m, _ := n.s[kw].(schema)
				for _, name := range sortedKeys(m) {
					if sub, ok := m[name].(schema); ok {
						child := node{s: sub, path: base + "/" + escapePointer(name), depth: n.depth}
						if kw == "properties" {
							child.property = name
						}
						rec(child)
					}
				}
			}
		}
	}
	rec(node{s: root, path: ""})
}

// isObjectType reports whether a schema says it is an object.
func isObjectType(s schema) bool {
	for _, t := range types(s) {
		if t == "object" {
			return true
		}
	}
	return false
}

// types lists the schema's "type" values: a string or an array of them.
func types(s schema) []string {
	switch t := s["type"].(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, v := range t {
			if str, ok := v.(string); ok {
				out = append(out, str)
			}
		}
		return out
	}
	return nil
}

// acceptedTypes lists the types a schema accepts: its own, or its anyOf/oneOf branches'
// when it has none. Empty means any type.
func acceptedTypes(s schema) map[string]bool {
	out := map[string]bool{}
	for _, t := range types(s) {
		out[t] = true
	}
	if len(out) > 0 {
		if out["number"] {
			out["integer"] = true // every integer is a number
		}
		return out
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		arr, _ := s[kw].([]any)
		for _, v := range arr {
			sub, _ := v.(schema)
			ts := acceptedTypes(sub)
			if len(ts) == 0 {
				return map[string]bool{}
			}
			for t := range ts {
				out[t] = true
			}
		}
	}
	return out
}

// enumValues collects the enum values a schema allows, in its own enum or its anyOf/oneOf
// branches', as their JSON text; ok is false when some branch has no enum (any value of its
// type goes).
func enumValues(s schema) (values map[string]bool, ok bool) {
	values = map[string]bool{}
	if e, has := s["enum"].([]any); has {
		for _, v := range e {
			b, _ := json.Marshal(v)
			values[string(b)] = true
		}
		return values, true
	}
	if c, has := s["const"]; has {
		b, _ := json.Marshal(c)
		values[string(b)] = true
		return values, true
	}
	found := false
	for _, kw := range []string{"anyOf", "oneOf"} {
		arr, _ := s[kw].([]any)
		for _, v := range arr {
			sub, _ := v.(schema)
			if sub == nil {
				return nil, false
			}
			if t := types(sub); len(t) == 1 && t[0] == "null" {
				values["null"] = true
				continue
			}
			vs, ok := enumValues(sub)
			if !ok {
				return nil, false
			}
			for k := range vs {
				values[k] = true
			}
			found = true
		}
	}
	return values, found
}

// required lists a schema's "required" names.
func required(s schema) map[string]bool {
	out := map[string]bool{}
	arr, _ := s["required"].([]any)
	for _, v := range arr {
		if str, ok := v.(string); ok {
			out[str] = true
		}
	}
	return out
}

// properties returns a schema's "properties", or the object branch's when the schema is a
// nullable anyOf of an object.
func properties(s schema) schema {
	if p, ok := s["properties"].(schema); ok {
		return p
	}
	return nil
}

// objectBranches returns the schemas that describe an object value of s: s itself when it
// has properties, else its anyOf/oneOf branches that do, so that a nullable message field
// compares with its plain form.
func objectBranches(s schema) []schema {
	if s == nil {
		return nil
	}
	if _, ok := s["properties"]; ok {
		return []schema{s}
	}
	var out []schema
	for _, kw := range []string{"anyOf", "oneOf"} {
		arr, _ := s[kw].([]any)
		for _, v := range arr {
			if sub, ok := v.(schema); ok {
				if _, has := sub["properties"]; has {
					out = append(out, sub)
				}
			}
		}
	}
	return out
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// escapePointer escapes a JSON Pointer reference token (RFC 6901).
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func description(s schema) string {
	d, _ := s["description"].(string)
	return strings.TrimSpace(d)
}
