package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"
)

// registry builds descriptors (with comments) and dynamic message types from the test image.
func registry(t *testing.T) (*protoregistry.Files, *dynamicpb.Types) {
	t.Helper()
	files, err := protodesc.NewFiles(image(t))
	require.NoError(t, err)
	return files, dynamicpb.NewTypes(files)
}

func findMessage(t *testing.T, files *protoregistry.Files, name string) protoreflect.MessageDescriptor {
	t.Helper()
	d, err := files.FindDescriptorByName(protoreflect.FullName(name))
	require.NoError(t, err, name)
	return d.(protoreflect.MessageDescriptor)
}

// compileSchema compiles a generated schema as JSON Schema 2020-12 (the MCP default dialect),
// asserting formats and content encodings, as a strict client would.
func compileSchema(t *testing.T, text string) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	require.NoError(t, err, "schema is not JSON:\n%s", text)
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.AssertContent()
	require.NoError(t, c.AddResource("mem:///schema.json", doc))
	s, err := c.Compile("mem:///schema.json")
	require.NoError(t, err, "schema does not compile:\n%s", text)
	return s
}

func schemaText(t *testing.T, md protoreflect.MessageDescriptor, dir direction) string {
	t.Helper()
	s, err := messageSchema(md, dir)
	require.NoError(t, err, md.FullName())
	return s.String()
}

// TestSchemasCompile compiles the input and output schema of every tool of the test image.
func TestSchemasCompile(t *testing.T) {
	files, _ := registry(t)
	n := 0
	files.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		if strings.HasPrefix(fd.Path(), "errors/") {
			return true
		}
		for i := 0; i < fd.Services().Len(); i++ {
			methods := fd.Services().Get(i).Methods()
			for j := 0; j < methods.Len(); j++ {
				m := methods.Get(j)
				if m.IsStreamingClient() || m.IsStreamingServer() {
					continue
				}
				t.Run(string(m.FullName()), func(t *testing.T) {
					compileSchema(t, schemaText(t, m.Input(), input))
					if m.Output().FullName() != toolResultName {
						compileSchema(t, schemaText(t, m.Output(), output))
					}
				})
				n++
			}
		}
		return true
	})
	assert.Falsef(t, n < 8, "compiled the schemas of %d tools; the image should hold more", n)
}

// TestSchemaPayloads validates JSON payloads against generated input schemas and checks that
// protojson, which decodes the same payloads in the runtime, agrees.
func TestSchemaPayloads(t *testing.T) {
	files, types := registry(t)
	type payload struct {
		json  string
		valid bool
		// schemaOnly marks payloads that protojson accepts but the schema rejects on purpose:
		// missing required fields, the _UNSPECIFIED enum value, formats.
		schemaOnly bool
		serverOnly bool
	}
	ok := func(json string) payload { return payload{json: json, valid: true} }
	bad := func(json string) payload { return payload{json: json} }
	badSchema := func(json string) payload { return payload{json: json, schemaOnly: true} }
	// serverOnly marks payloads that the schema accepts and protojson refuses, by design: a
	// second member of a oneof, a rule the descriptions state and the runtime enforces.
	serverOnly := func(json string) payload { return payload{json: json, valid: true, serverOnly: true} }
	cases := map[string][]payload{
		"test.v1.Scalars": {
			ok(`{"boolValue": false, "stringValue": "ada@example.com"}`),
			ok(`{"boolValue": true, "stringValue": "a@b.c",
				"int64Value": "-9223372036854775808", "sint64Value": "9223372036854775807",
				"sfixed64Value": "-5", "uint64Value": "18446744073709551615", "fixed64Value": "0",
				"int32Value": -2147483648, "sint32Value": 2147483647, "sfixed32Value": 0,
				"uint32Value": 4294967295, "fixed32Value": 0,
				"doubleValue": -1.7976931348623157e308, "floatValue": -3.4e38, "bytesValue": "aGVsbG8=",
				"optionalValue": 0, "oldValue": ""}`),
			ok(`{"boolValue": true, "stringValue": "a@b.c", "doubleValue": 1.5e300, "floatValue": 3.4e38, "int64Value": "42"}`),
			// null is "not set" for every field that is not required.
			ok(`{"boolValue": true, "stringValue": "a@b.c", "doubleValue": null, "int64Value": null, "optionalValue": null, "bytesValue": null}`),
			badSchema(`{"boolValue": null, "stringValue": "a@b.c"}`), // required: null is missing, the runtime refuses it
			// Inputs ask for one plain type: 64-bit integers as strings, finite numbers.
			badSchema(`{"boolValue": true, "stringValue": "a@b.c", "int64Value": 42}`),
			badSchema(`{"boolValue": true, "stringValue": "a@b.c", "doubleValue": "NaN"}`),
			badSchema(`{"boolValue": true, "stringValue": "a@b.c", "floatValue": "-Infinity"}`),
			// 64-bit integers past their range.
			bad(`{"boolValue": true, "stringValue": "a@b.c", "int64Value": "9223372036854775808"}`),
			bad(`{"boolValue": true, "stringValue": "a@b.c", "int64Value": "-9223372036854775809"}`),
			bad(`{"boolValue": true, "stringValue": "a@b.c", "uint64Value": "18446744073709551616"}`),
			bad(`{"boolValue": true, "stringValue": "a@b.c", "int64Value": "99999999999999999999"}`),
			badSchema(`{"boolValue": true}`),
			badSchema(`{"stringValue": "a@b.c"}`),
			badSchema(`{"boolValue": true, "stringValue": "not an email"}`),
			bad(`{"boolValue": true, "stringValue": "a@b.c", "int32Value": 2147483648}`),
			bad(`{"boolValue": true, "stringValue": "a@b.c", "uint32Value": -1}`),
			bad(`{"boolValue": true, "stringValue": "a@b.c", "int64Value": "12a"}`),
			bad(`{"boolValue": true, "stringValue": "a@b.c", "uint64Value": "-1"}`),
			bad(`{"boolValue": true, "stringValue": "a@b.c", "doubleValue": "nan"}`),
			bad(`{"boolValue": true, "stringValue": "a@b.c", "floatValue": 1e39}`),
			bad(`{"boolValue": "true", "stringValue": "a@b.c"}`),
			bad(`{"boolValue": true, "stringValue": 7}`),
			bad(`{"boolValue": true, "stringValue": "a@b.c", "bytesValue": "***"}`),
			bad(`{"boolValue": true, "stringValue": "a@b.c", "nope": 1}`),
		},
		"test.v1.Structured": {
			ok(`{}`),
			ok(`{"name": "x"}`),
			ok(`{"number": "12"}`),
			ok(`{"detail": {"label": "a"}}`),
			ok(`{"color": "COLOR_RED", "colors": ["COLOR_GREEN", "COLOR_RED"], "level": "LEVEL_HIGH"}`),
			ok(`{"colors": [], "inners": [], "byString": {}}`),
			ok(`{"nestedMaps": {"a": {"counts": {"x": 1}}}, "byInt32": {"-5": {"label": "x"}},
				"byInt64": {"9223372036854775807": "COLOR_RED"}, "byUint32": {"4": "-9"},
				"byBool": {"true": false, "false": true}, "byString": {"": ""}}`),
			ok(`{"tree": {"value": "r", "children": [{"value": "c", "children": [{"value": "g"}]}]},
				"child": {"child": {"name": "deep"}}, "ping": {"pong": {"ping": {}}}}`),
			bad(`{"name": "x", "number": 1}`),
			bad(`{"number": 1, "detail": {}}`),
			bad(`{"color": "COLOR_BLUE"}`),
			bad(`{"colors": ["COLOR_RED", "red"]}`),
			badSchema(`{"color": "COLOR_UNSPECIFIED"}`),
			bad(`{"byInt32": {"x": {}}}`),
			bad(`{"byBool": {"yes": true}}`),
			bad(`{"byUint32": {"-1": 1}}`),
			bad(`{"tree": {"value": "r", "extra": 1}}`),
			bad(`{"tree": {"children": [{"children": [{"value": 5}]}]}}`),
			bad(`{"child": {"child": {"color": "NOPE"}}}`),
			bad(`{"ping": {"pong": {"ping": {"pong": {"bad": 1}}}}}`),
			bad(`{"inner": []}`),
			bad(`{"colors": "COLOR_RED"}`),
		},
		"test.v1.WellKnownTypes": {
			ok(`{"timestamp": "2024-01-02T03:04:05.123Z", "duration": "-1.5s", "struct": {"a": [1, {"b": null}]},
				"value": [1, "x"], "listValue": [1, null], "nullValue": null, "fieldMask": "a.b,c",
				"any": {"@type": "type.googleapis.com/google.protobuf.Duration", "value": "1s"}, "empty": {},
				"doubleWrapper": 1e300, "floatWrapper": 1.5, "int64Wrapper": "-1", "uint64Wrapper": "7",
				"int32Wrapper": -1, "uint32Wrapper": 4294967295, "boolWrapper": null, "stringWrapper": "s",
				"bytesWrapper": "AA==", "timestamps": ["1970-01-01T00:00:00Z"]}`),
			ok(`{"value": null}`),
			ok(`{"timestamp": null, "struct": null, "int64Wrapper": null, "any": null, "timestamps": null, "fieldMask": ""}`),
			ok(`{"duration": "315576000000.999999999s", "timestamp": "9999-12-31T23:59:59.999999999+01:00"}`),
			bad(`{"duration": "315576000001s"}`),
			bad(`{"timestamp": "0000-12-31T00:00:00Z"}`),
			bad(`{"timestamp": "2024-01-02t03:04:05Z"}`),
			bad(`{"timestamp": "2024-01-02T03:04:05.1234567891Z"}`),
			bad(`{"fieldMask": "foo_bar"}`),
			badSchema(`{"doubleWrapper": "Infinity"}`),
			bad(`{"timestamp": "yesterday"}`),
			bad(`{"duration": "5m"}`),
			bad(`{"empty": {"x": 1}}`),
			bad(`{"any": {"value": "1s"}}`),
			bad(`{"int32Wrapper": 2147483648}`),
			bad(`{"struct": [1]}`),
			bad(`{"listValue": {}}`),
			badSchema(`{"nullValue": 0}`), // protojson also takes the enum number
		},
		"weather.v1.GetForecastRequest": {
			ok(`{"city": "Paris, FR", "days": 3, "unit": "TEMPERATURE_UNIT_CELSIUS"}`),
			ok(`{"coordinates": {"latitude": 48.85, "longitude": 2.35}}`),
			serverOnly(`{"city": "Paris", "coordinates": {"latitude": 1, "longitude": 2}}`), // the oneof rule
			ok(`{"city": null, "coordinates": {"latitude": 1, "longitude": 2}, "days": null, "unit": null}`),
			bad(`{"city": "Paris", "unit": "KELVIN"}`),
			bad(`{"city": "Paris", "days": "three"}`),
		},
		"weather.v1.ListAlertsRequest": {
			badSchema(`{"regions": []}`), // a required list needs an item; the runtime refuses it too
			ok(`{"regions": ["FR"], "minSeverity": "SEVERITY_SEVERE"}`),
			badSchema(`{}`),
			bad(`{"regions": "FR"}`),
		},
		"test.editions.v1.GetRequest": {
			ok(`{"id": "x", "count": 0, "implicit": 1, "sub": {"note": "n"}, "mode": "MODE_FIRST"}`),
			bad(`{"count": 1}`), // protojson also checks legacy required fields
			bad(`{"id": "x", "mode": "MODE_THIRD"}`),
		},
		"test.proto2.v1.DoRequest": {
			ok(`{"id": "a", "options": {"verbose": true}, "mode": "slow", "tags": ["t"], "limit": "5", "speed": "SPEED_SLOW"}`),
			badSchema(`{"id": "a", "tags": ["t"], "etag": "x"}`), // output only: not an argument (AIP-203: the server ignores it)
			badSchema(`{"id": "a", "tags": []}`),                 // a required list needs an item
			bad(`{"options": {}, "tags": ["t"]}`),
			bad(`{"id": "a", "options": {"verbose": 1}, "tags": ["t"]}`),
		},
	}
	for name, payloads := range cases {
		md := findMessage(t, files, name)
		schema := compileSchema(t, schemaText(t, md, input))
		for _, p := range payloads {
			inst, err := jsonschema.UnmarshalJSON(strings.NewReader(p.json))
			require.NoErrorf(t, err, "%s: bad test payload %s", name, p.json)
			err = schema.Validate(inst)
			assert.Falsef(t, p.valid && err != nil, "%s: schema rejects %s: %v", name, p.json, err)
			assert.Falsef(t, !p.valid && err == nil, "%s: schema accepts %s", name, p.json)
			msg := dynamicpb.NewMessage(md)
			perr := protojson.UnmarshalOptions{Resolver: types}.Unmarshal([]byte(p.json), msg)
			protojsonValid := (p.valid || p.schemaOnly) && !p.serverOnly
			assert.Falsef(t, protojsonValid && perr != nil, "%s: protojson rejects %s: %v", name, p.json, perr)
			assert.Falsef(t, !protojsonValid && perr == nil, "%s: protojson accepts %s, which the schema rejects", name, p.json)
		}
	}
}

// TestOutputSchemas encodes messages with protojson, as the runtime does for structured
// results, and validates them against the output schemas: edge values, the zero enum value in
// lists and maps, recursion.
func TestOutputSchemas(t *testing.T) {
	files, types := registry(t)
	cases := map[string][]string{
		"test.v1.Scalars": {
			`{}`,
			`{"int64Value": "-9223372036854775808", "uint64Value": "18446744073709551615", "sint64Value": "9223372036854775807",
			  "int32Value": -2147483648, "uint32Value": 4294967295, "doubleValue": "NaN", "floatValue": "Infinity",
			  "bytesValue": "AAEC/w==", "optionalValue": 0, "boolValue": true, "stringValue": "x@example.com"}`,
			`{"doubleValue": -1.7976931348623157e308, "floatValue": -3.4028234663852886e38}`,
		},
		"test.v1.Structured": {
			`{"colors": ["COLOR_UNSPECIFIED", "COLOR_RED"], "byInt64": {"-9223372036854775808": "COLOR_UNSPECIFIED"},
			  "byUint32": {"4294967295": "9223372036854775807"}, "byBool": {"false": true}, "number": "-1",
			  "nestedMaps": {"k": {"counts": {"z": -1}}}, "level": "LEVEL_LOW",
			  "tree": {"value": "r", "children": [{"value": "c"}]}, "child": {"detail": {"label": "l"}},
			  "ping": {"pong": {"ping": {"pong": {}}}}}`,
			`{"color": 7, "colors": [9, "COLOR_RED"], "level": "LEVEL_LOW"}`, // unknown numbers of an open enum
		},
		"test.v1.WellKnownTypes": {
			`{"timestamp": "0001-01-01T00:00:00Z", "duration": "-315576000000.999999999s", "struct": {"a": {"b": [true]}},
			  "value": {"k": 1}, "listValue": [], "nullValue": null, "fieldMask": "fooBar,baz.qux",
			  "any": {"@type": "type.googleapis.com/test.v1.Inner", "label": "x"}, "empty": {},
			  "doubleWrapper": "-Infinity", "int64Wrapper": "0", "uint64Wrapper": "1", "int32Wrapper": 0,
			  "uint32Wrapper": 0, "boolWrapper": false, "stringWrapper": "", "bytesWrapper": "",
			  "timestamps": ["9999-12-31T23:59:59.999999999Z"]}`,
			`{"any": {}}`, // an empty Any
		},
		"test.proto2.v1.DoResponse": {
			`{"status": "ok", "etag": "e", "speed": "SPEED_FAST", "[test.proto2.v1.note]": "a note"}`,
			`{"speed": 5}`, // a closed enum's number that protojson let through
		},
		"weather.v1.GetForecastResponse": {
			`{"place": {"name": "Paris", "coordinates": {"latitude": 48.85, "longitude": 2.35}, "timeZone": "Europe/Paris"},
			  "days": [{"date": "2024-05-01", "condition": "CONDITION_RAIN", "high": 18.5, "low": 9,
			            "precipitationChance": {"morning": 80, "night": 0}}],
			  "issuedAt": "2024-05-01T06:00:00Z", "unit": "TEMPERATURE_UNIT_CELSIUS"}`,
		},
	}
	for name, payloads := range cases {
		md := findMessage(t, files, name)
		schema := compileSchema(t, schemaText(t, md, output))
		for _, p := range payloads {
			msg := dynamicpb.NewMessage(md)
			require.NoErrorf(t, (protojson.UnmarshalOptions{Resolver: types}).Unmarshal([]byte(p), msg), "%s: bad test payload %s", name, p)
			for _, opts := range []protojson.MarshalOptions{{Resolver: types}, {Resolver: types, Multiline: true}} {
				out, err := opts.Marshal(msg)
				require.NoError(t, err)
				inst, err := jsonschema.UnmarshalJSON(strings.NewReader(string(out)))
				require.NoError(t, err)
				assert.NoErrorf(t, schema.Validate(inst), "%s: output schema rejects protojson %s", name, out)
			}
		}
	}
}

// TestRootsAreObjects checks what MCP requires of inputSchema and outputSchema.
func TestRootsAreObjects(t *testing.T) {
	files, _ := registry(t)
	for _, name := range []string{"test.v1.Scalars", "test.v1.Structured", "google.protobuf.Empty", "google.protobuf.Struct", "google.protobuf.Any"} {
		md := findMessage(t, files, name)
		for _, dir := range []direction{input, output} {
			s, err := messageSchema(md, dir)
			require.NoError(t, err, name)
			assert.Equal(t, []string{"object"}, s.Type, "%s: the root's type", name)
			assert.Empty(t, s.Ref, "%s: the root is a $ref", name)
			assert.NotContains(t, strings.SplitN(s.String(), "\n", 2)[0], "anyOf", "%s: the root uses anyOf", name)
		}
	}
	for _, name := range []string{"google.protobuf.Timestamp", "google.protobuf.Value", "google.protobuf.StringValue"} {
		_, err := messageSchema(findMessage(t, files, name), input)
		assert.Error(t, err, "%s: a root that is not an object", name)
	}
}

// TestSharedMessagesAreDefs: a chain of messages each holding two fields of the next one
// would expand 2^24 times inline; shared messages go to $defs once, small leaves stay inline,
// and the schema stays small and valid.
func TestSharedMessagesAreDefs(t *testing.T) {
	files, types := registry(t)
	md := findMessage(t, files, "test.shared.v1.Link0")
	for _, dir := range []direction{input, output} {
		text := schemaText(t, md, dir)
		require.LessOrEqual(t, len(text), 64<<10, "bytes in the schema of the chain; shared messages should be $defs")
		for _, want := range []string{`"$ref": "#/$defs/test.shared.v1.Link1"`, `"test.shared.v1.Link24": {`} {
			assert.Contains(t, text, want)
		}
		assert.NotContains(t, text, `"test.shared.v1.Point": {`, "the small leaf Point went to $defs; it should stay inline")
		schema := compileSchema(t, text)
		doc := `{"left": {"right": {"left": {}}}}`
		msg := dynamicpb.NewMessage(md)
		require.NoError(t, (protojson.UnmarshalOptions{Resolver: types}).Unmarshal([]byte(doc), msg))
		inst, _ := jsonschema.UnmarshalJSON(strings.NewReader(doc))
		assert.NoError(t, schema.Validate(inst), "schema refuses %s", doc)
		bad, _ := jsonschema.UnmarshalJSON(strings.NewReader(`{"left": {"right": {"left": {"nope": 1}}}}`))
		assert.Error(t, schema.Validate(bad), "schema accepts an unknown field deep in the chain")
	}
}

// lintFinding is one portability problem in a schema, by the rules of MCP Inspector's
// `tools/list --strict` (2.12): a bare boolean where a schema object is expected is an error;
// a type array, a remote $ref and a schema that constrains nothing are warnings.
type lintFinding struct {
	path, rule string
	err        bool
}

// constraining are the keywords that make a schema constrain its instance.
var constraining = map[string]bool{}

func init() {
	for _, k := range strings.Fields(`type enum const multipleOf maximum exclusiveMaximum minimum
		exclusiveMinimum maxLength minLength pattern format contentMediaType contentEncoding
		contentSchema maxItems minItems uniqueItems maxContains minContains maxProperties
		minProperties required dependentRequired allOf anyOf oneOf not items prefixItems contains
		additionalItems unevaluatedItems properties patternProperties additionalProperties
		unevaluatedProperties propertyNames dependentSchemas dependencies $ref $dynamicRef
		$recursiveRef`) {
		constraining[k] = true
	}
}

func lintSchema(node any, path, keyword string, out *[]lintFinding) {
	switch n := node.(type) {
	case bool:
		switch keyword {
		case "additionalProperties", "unevaluatedProperties", "additionalItems", "unevaluatedItems":
		default:
			*out = append(*out, lintFinding{path, "boolean-schema", true})
		}
	case map[string]any:
		if _, ok := n["type"].([]any); ok {
			*out = append(*out, lintFinding{path, "type-union", false})
		}
		if ref, ok := n["$ref"].(string); ok && !strings.HasPrefix(ref, "#") {
			*out = append(*out, lintFinding{path, "remote-ref", false})
		}
		constrains := false
		for k := range n {
			constrains = constrains || constraining[k]
		}
		if !constrains && keyword != "not" {
			*out = append(*out, lintFinding{path, "untyped-schema", false})
		}
		for _, k := range []string{"properties", "patternProperties", "$defs", "dependentSchemas", "definitions"} {
			if m, ok := n[k].(map[string]any); ok {
				for name, sub := range m {
					lintSchema(sub, path+"."+k+"."+name, k, out)
				}
			}
		}
		for _, k := range []string{"anyOf", "allOf", "oneOf", "prefixItems"} {
			if arr, ok := n[k].([]any); ok {
				for i, sub := range arr {
					lintSchema(sub, fmt.Sprintf("%s.%s[%d]", path, k, i), k, out)
				}
			}
		}
		for _, k := range []string{"items", "contains", "additionalProperties", "propertyNames", "not", "if", "then", "else"} {
			if sub, ok := n[k]; ok {
				lintSchema(sub, path+"."+k, k, out)
			}
		}
	}
}

// TestSchemasPortable: no input schema of the test image has a finding of MCP Inspector's
// strict lint, and no output schema has an error. Output schemas may keep a warning only
// where completeness requires it; today none does.
func TestSchemasPortable(t *testing.T) {
	files, _ := registry(t)
	files.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		if strings.HasPrefix(fd.Path(), "errors/") {
			return true
		}
		for i := 0; i < fd.Services().Len(); i++ {
			methods := fd.Services().Get(i).Methods()
			for j := 0; j < methods.Len(); j++ {
				m := methods.Get(j)
				if m.IsStreamingClient() || m.IsStreamingServer() {
					continue
				}
				for _, dir := range []direction{input, output} {
					md := m.Input()
					if dir == output {
						md = m.Output()
						if md.FullName() == toolResultName {
							continue
						}
					}
					var doc any
					require.NoError(t, json.Unmarshal([]byte(schemaText(t, md, dir)), &doc))
					var findings []lintFinding
					lintSchema(doc, "", "", &findings)
					for _, f := range findings {
						assert.Falsef(t, dir == input || f.err, "%s %v schema: %s at %q", m.FullName(), dir, f.rule, f.path)
					}
					if s := schemaText(t, md, dir); dir == input && strings.Contains(s, `"dependentSchemas"`) {
						assert.Fail(t, fmt.Sprintf("%s: input schema uses dependentSchemas", m.FullName()))
					}
				}
			}
		}
		return true
	})
}

func (d direction) String() string {
	if d == input {
		return "input"
	}
	return "output"
}
