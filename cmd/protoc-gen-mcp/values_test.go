package main

import (
	"encoding/json"
	"testing"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"

	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
)

// valueField is the one field of a test message: its type, and the values its schema carries.
type valueField struct {
	typ      descriptorpb.FieldDescriptorProto_Type
	typeName string // for messages and enums
	repeated bool
	def      string // the proto default, as protoc writes it in the descriptor
	examples []string
	rules    *validate.FieldRules
}

// valueMessage builds a proto2 message test.values.M with the field f (named "f") and the
// messages and enums it may refer to.
func valueMessage(t *testing.T, f valueField) protoreflect.MessageDescriptor {
	t.Helper()
	fdp := &descriptorpb.FieldDescriptorProto{
		Name:   proto.String("f"),
		Number: proto.Int32(1),
		Label:  descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
		Type:   f.typ.Enum(),
	}
	if f.typeName != "" {
		fdp.TypeName = proto.String(f.typeName)
	}
	if f.repeated {
		fdp.Label = descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum()
	}
	if f.def != "" {
		fdp.DefaultValue = proto.String(f.def)
	}
	opts := &descriptorpb.FieldOptions{}
	if len(f.examples) > 0 {
		proto.SetExtension(opts, mcpv1.E_Field, &mcpv1.FieldOptions{Examples: f.examples})
	}
	if f.rules != nil {
		proto.SetExtension(opts, validate.E_Field, f.rules)
	}
	fdp.Options = opts
	file := &descriptorpb.FileDescriptorProto{
		Name:       proto.String("test/values.proto"),
		Package:    proto.String("test.values"),
		Syntax:     proto.String("proto2"),
		Dependency: []string{"google/protobuf/timestamp.proto", "google/protobuf/duration.proto"},
		MessageType: []*descriptorpb.DescriptorProto{
			{Name: proto.String("M"), Field: []*descriptorpb.FieldDescriptorProto{fdp}},
			{Name: proto.String("Point"), Field: []*descriptorpb.FieldDescriptorProto{
				{Name: proto.String("x"), JsonName: proto.String("x"), Number: proto.Int32(1), Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(), Type: descriptorpb.FieldDescriptorProto_TYPE_INT32.Enum()},
			}},
		},
		EnumType: []*descriptorpb.EnumDescriptorProto{{
			Name: proto.String("Color"),
			Value: []*descriptorpb.EnumValueDescriptorProto{
				{Name: proto.String("COLOR_UNSPECIFIED"), Number: proto.Int32(0)},
				{Name: proto.String("RED"), Number: proto.Int32(1)},
			},
		}},
	}
	fd, err := protodesc.NewFile(file, protoregistry.GlobalFiles)
	require.NoError(t, err)
	return fd.Messages().ByName("M")
}

const (
	typeString  = descriptorpb.FieldDescriptorProto_TYPE_STRING
	typeInt32   = descriptorpb.FieldDescriptorProto_TYPE_INT32
	typeInt64   = descriptorpb.FieldDescriptorProto_TYPE_INT64
	typeDouble  = descriptorpb.FieldDescriptorProto_TYPE_DOUBLE
	typeFloat   = descriptorpb.FieldDescriptorProto_TYPE_FLOAT
	typeBool    = descriptorpb.FieldDescriptorProto_TYPE_BOOL
	typeBytes   = descriptorpb.FieldDescriptorProto_TYPE_BYTES
	typeEnum    = descriptorpb.FieldDescriptorProto_TYPE_ENUM
	typeMessage = descriptorpb.FieldDescriptorProto_TYPE_MESSAGE
)

// TestFieldValues checks defaults and examples against their field's schema, for each JSON
// type: a value that fits is written into the schema, one that does not is an error naming
// the field and the rule it breaks.
func TestFieldValues(t *testing.T) {
	int32Min := func(n int32) *validate.FieldRules {
		return &validate.FieldRules{Type: &validate.FieldRules_Int32{Int32: &validate.Int32Rules{GreaterThan: &validate.Int32Rules_Gte{Gte: n}}}}
	}
	stringMin := func(n uint64) *validate.FieldRules {
		return &validate.FieldRules{Type: &validate.FieldRules_String_{String_: &validate.StringRules{MinLen: &n}}}
	}
	cases := []struct {
		name string
		f    valueField
		want string // a substring of the error; "" when the values fit
	}{
		// string
		{"string example", valueField{typ: typeString, examples: []string{`"Paris"`}}, ""},
		{"string example of another type", valueField{typ: typeString, examples: []string{`5`}}, `examples: 5 does not fit the field: type: got number, want string`},
		{"string example under a rule", valueField{typ: typeString, examples: []string{`"ab"`}, rules: stringMin(3)}, `examples: "ab" does not fit the field: minLength: got 2, want 3`},
		{"string default under a rule", valueField{typ: typeString, def: "ab", rules: stringMin(3)}, `default "ab" does not fit the field: minLength: got 2, want 3`},
		{"int64 example off its pattern", valueField{typ: typeInt64, examples: []string{`"12x"`}}, `pattern: "12x" is not a 64-bit integer in decimal`},
		{"int64 default", valueField{typ: typeInt64, def: "-12"}, ""},
		{"int64 example beyond 64 bits", valueField{typ: typeInt64, examples: []string{`"9223372036854775808"`}}, `pattern: "9223372036854775808" is not a 64-bit integer in decimal`},
		{"string example off a rule's pattern", valueField{typ: typeString, examples: []string{`"abc"`}, rules: &validate.FieldRules{Type: &validate.FieldRules_String_{String_: &validate.StringRules{Pattern: proto.String("^[0-9]+$")}}}}, `pattern: 'abc' does not match pattern '^[0-9]+$'`},
		{"timestamp example", valueField{typ: typeMessage, typeName: ".google.protobuf.Timestamp", examples: []string{`"2026-12-01T18:00:00Z"`}}, ""},
		{"duration example in hours", valueField{typ: typeMessage, typeName: ".google.protobuf.Duration", examples: []string{`"1h"`}}, `pattern: "1h" is not a duration in seconds, such as "1.5s"`},
		{"timestamp example not RFC 3339", valueField{typ: typeMessage, typeName: ".google.protobuf.Timestamp", examples: []string{`"yesterday"`}}, `format: 'yesterday' is not valid date-time`},
		{"bytes example not base64", valueField{typ: typeBytes, examples: []string{`"not base64!"`}}, `contentEncoding: value is not 'base64' encoded`},
		{"enum example", valueField{typ: typeEnum, typeName: ".test.values.Color", examples: []string{`"RED"`}}, ""},
		{"enum example not a value", valueField{typ: typeEnum, typeName: ".test.values.Color", examples: []string{`"PURPLE"`}}, `examples: "PURPLE" does not fit the field: enum: value must be 'RED'`},
		{"enum default the placeholder", valueField{typ: typeEnum, typeName: ".test.values.Color", def: "COLOR_UNSPECIFIED"}, `default "COLOR_UNSPECIFIED" does not fit the field: enum: value must be 'RED'`},
		// integer
		{"integer example", valueField{typ: typeInt32, examples: []string{`7`}}, ""},
		{"integer example with a fraction", valueField{typ: typeInt32, examples: []string{`1.5`}}, `examples: 1.5 does not fit the field: type: got number, want integer`},
		{"integer example out of range", valueField{typ: typeInt32, examples: []string{`3000000000`}}, `maximum: got 3000000000, want 2147483647`},
		{"integer default under a rule", valueField{typ: typeInt32, def: "0", rules: int32Min(1)}, `default 0 does not fit the field: minimum: got 0, want 1`},
		{"integer default", valueField{typ: typeInt32, def: "4", rules: int32Min(1)}, ""},
		// number
		{"number example", valueField{typ: typeDouble, examples: []string{`2.5`}}, ""},
		{"number example of another type", valueField{typ: typeDouble, examples: []string{`"2.5"`}}, `type: got string, want number`},
		{"float example out of range", valueField{typ: typeFloat, examples: []string{`1e39`}}, `maximum: got 1e+39, want 3.4028235e+38`},
		{"number default", valueField{typ: typeDouble, def: "1.5"}, ""},
		// boolean
		{"boolean example", valueField{typ: typeBool, examples: []string{`true`}}, ""},
		{"boolean example of another type", valueField{typ: typeBool, examples: []string{`"yes"`}}, `type: got string, want boolean`},
		{"boolean default", valueField{typ: typeBool, def: "true"}, ""},
		// array
		{"array example", valueField{typ: typeString, repeated: true, examples: []string{`["a", "b"]`}}, ""},
		{"array example with a wrong item", valueField{typ: typeString, repeated: true, examples: []string{`["a", 1]`}}, `examples: ["a",1] does not fit the field: item 1: type: got number, want string`},
		{"array example for a single value", valueField{typ: typeString, examples: []string{`["a"]`}}, `type: got array, want string or null`},
		// object
		{"object example", valueField{typ: typeMessage, typeName: ".test.values.Point", examples: []string{`{"x": 1}`}}, ""},
		{"object example with an unknown member", valueField{typ: typeMessage, typeName: ".test.values.Point", examples: []string{`{"y": 1}`}}, `additionalProperties: additional properties 'y' not allowed`},
		{"object example with a wrong member", valueField{typ: typeMessage, typeName: ".test.values.Point", examples: []string{`{"x": "one"}`}}, `examples: {"x":"one"} does not fit the field: x: type: got string, want integer`},
		// null
		{"null example of an optional field", valueField{typ: typeString, examples: []string{`null`}}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			md := valueMessage(t, tc.f)
			_, err := messageSchema(md, input)
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), "test.values.M.f: ")
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestFieldValuesInSchema checks that values that fit are written as given (compacted).
func TestFieldValuesInSchema(t *testing.T) {
	md := valueMessage(t, valueField{typ: typeInt32, def: "4", examples: []string{`7`, ` 8 `}})
	s, err := messageSchema(md, input)
	require.NoError(t, err)
	f := s.Properties[0].Schema
	assert.Equal(t, "4", string(f.Default))
	require.Len(t, f.Examples, 2)
	assert.Equal(t, "8", string(f.Examples[1]))
}

// TestFieldValuesPointer reaches a field's schema through names that a JSON pointer in a URI
// fragment must escape.
func TestFieldValuesPointer(t *testing.T) {
	fd := valueMessage(t, valueField{typ: typeInt32}).Fields().Get(0)
	for _, name := range []string{"a b", "a/b", "a~b", "a%b", "é", "a#b"} {
		f := &Schema{Type: []string{"integer"}, Examples: []json.RawMessage{json.RawMessage(`"x"`)}}
		root := &Schema{Type: []string{"object"}, Properties: []Property{{"other", &Schema{Type: []string{"string"}}}, {name, f}}}
		err := checkValues(root, []fieldValues{{fd, f}})
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "type: got string, want integer", name)
	}
}
