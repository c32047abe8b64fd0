package protojsonfast

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
	weatherv1 "github.com/protomcp/protomcp/gen/weather/v1"
)

// scalarsDescriptor is a proto3 message with a field of every kind a Decoder sets, and fields it
// leaves to protojson (enum, repeated, message, oneof, bytes).
func scalarsDescriptor(t testing.TB) protoreflect.MessageDescriptor {
	t.Helper()
	field := func(name string, num int32, typ descriptorpb.FieldDescriptorProto_Type) *descriptorpb.FieldDescriptorProto {
		return &descriptorpb.FieldDescriptorProto{Name: proto.String(name), Number: proto.Int32(num), Type: typ.Enum(), Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum()}
	}
	fields := []*descriptorpb.FieldDescriptorProto{
		field("s", 1, descriptorpb.FieldDescriptorProto_TYPE_STRING),
		field("camel_case", 2, descriptorpb.FieldDescriptorProto_TYPE_STRING),
		field("b", 3, descriptorpb.FieldDescriptorProto_TYPE_BOOL),
		field("i32", 4, descriptorpb.FieldDescriptorProto_TYPE_INT32),
		field("i64", 5, descriptorpb.FieldDescriptorProto_TYPE_INT64),
		field("u32", 6, descriptorpb.FieldDescriptorProto_TYPE_UINT32),
		field("u64", 7, descriptorpb.FieldDescriptorProto_TYPE_UINT64),
		field("s32", 8, descriptorpb.FieldDescriptorProto_TYPE_SINT32),
		field("f64", 9, descriptorpb.FieldDescriptorProto_TYPE_FIXED64),
		field("sf32", 10, descriptorpb.FieldDescriptorProto_TYPE_SFIXED32),
		field("d", 11, descriptorpb.FieldDescriptorProto_TYPE_DOUBLE),
		field("e", 12, descriptorpb.FieldDescriptorProto_TYPE_ENUM),
		field("r", 13, descriptorpb.FieldDescriptorProto_TYPE_STRING),
		field("m", 14, descriptorpb.FieldDescriptorProto_TYPE_MESSAGE),
		field("oa", 15, descriptorpb.FieldDescriptorProto_TYPE_STRING),
		field("ob", 16, descriptorpb.FieldDescriptorProto_TYPE_INT32),
		field("opt", 17, descriptorpb.FieldDescriptorProto_TYPE_STRING),
		field("by", 18, descriptorpb.FieldDescriptorProto_TYPE_BYTES),
		field("custom", 19, descriptorpb.FieldDescriptorProto_TYPE_STRING),
	}
	fields[11].TypeName = proto.String(".t.E")
	fields[12].Label = descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum()
	fields[13].TypeName = proto.String(".t.Scalars")
	fields[14].OneofIndex, fields[15].OneofIndex = proto.Int32(0), proto.Int32(0)
	fields[16].OneofIndex, fields[16].Proto3Optional = proto.Int32(1), proto.Bool(true)
	fields[18].JsonName = proto.String("renamed")
	fd, err := protodesc.NewFile(&descriptorpb.FileDescriptorProto{
		Name: proto.String("t.proto"), Package: proto.String("t"), Syntax: proto.String("proto3"),
		EnumType: []*descriptorpb.EnumDescriptorProto{{Name: proto.String("E"), Value: []*descriptorpb.EnumValueDescriptorProto{
			{Name: proto.String("E_ZERO"), Number: proto.Int32(0)}, {Name: proto.String("E_ONE"), Number: proto.Int32(1)}}}},
		MessageType: []*descriptorpb.DescriptorProto{{
			Name: proto.String("Scalars"), Field: fields,
			OneofDecl: []*descriptorpb.OneofDescriptorProto{{Name: proto.String("o")}, {Name: proto.String("_opt")}},
		}},
	}, nil)
	require.NoError(t, err)
	return fd.Messages().Get(0)
}

// unmarshalSeeds are inputs on both sides of what a Decoder accepts, and text that is not JSON.
var unmarshalSeeds = []string{
	`{}`, ` { } `, `{"s":"x"}`, `{"s":"x","camelCase":"y","b":true,"i32":-5,"i64":9007199254740993,"u32":4294967295,"u64":18446744073709551615,"s32":-0,"f64":0,"sf32":-2147483648}`,
	`{"camel_case":"proto name"}`, `{"camelCase":"a","camel_case":"b"}`, `{"s":"a","s":"b"}`, `{"renamed":"custom json name"}`, `{"custom":"proto name of a renamed field"}`,
	`{"s":"esc\"aped"}`, `{"s":"\u00e9"}`, `{"s":"é"}`, `{"s":null}`, `{"s":1}`, `{"b":"true"}`, `{"b":truex}`, `{"b":false }`,
	`{"i32":2147483648}`, `{"i32":"12"}`, `{"i32":1.0}`, `{"i32":1e2}`, `{"i32":01}`, `{"i32":-}`, `{"u32":-1}`, `{"u64":18446744073709551616}`,
	`{"i64":"-12"}`, `{"d":1.5}`, `{"e":"E_ONE"}`, `{"r":["a"]}`, `{"m":{"s":"x"}}`, `{"oa":"x"}`, `{"oa":"x","ob":1}`, `{"opt":""}`, `{"opt":"x","opt":"y"}`,
	`{"by":"AQI="}`, `{"unknown":1}`, `{"s":"x",}`, `{"s":"x"`, `{"s" "x"}`, `{"s":"x"} x`, `[]`, `null`, ``, `{"s":"x"}{}`, "{\"s\":\"\xff\"}", "{\"s\":\"tab\there\"}",
	`{"text":"hi"}`, `{"id":"1","region":"FR","headline":"h"}`, `{"id":"1","severity":"SEVERITY_MODERATE"}`,
}

// checkUnmarshal decodes in into a new message of each type with Unmarshal and with protojson,
// and fails unless both fail or both give the same message; it returns whether the Decoder of
// md decoded it.
func checkUnmarshal(t *testing.T, md protoreflect.MessageDescriptor, in []byte) bool {
	t.Helper()
	simple := false
	for _, newMsg := range []func() proto.Message{
		func() proto.Message { return dynamicpb.NewMessage(md) },
		func() proto.Message { return &mcpv1.TextContent{} },
		func() proto.Message { return &weatherv1.Alert{} },
	} {
		for _, o := range []protojson.UnmarshalOptions{{}, {DiscardUnknown: true}} {
			got, want := newMsg(), newMsg()
			gotErr, wantErr := Unmarshal(o, in, got), o.Unmarshal(in, want)
			require.Falsef(t, (gotErr == nil) != (wantErr == nil), "Unmarshal(%q) into %s: error %v, protojson's %v", in, got.ProtoReflect().Descriptor().FullName(), gotErr, wantErr)
			require.Falsef(t, gotErr == nil && !proto.Equal(got, want), "Unmarshal(%q) into %s: %v, protojson's %v", in, got.ProtoReflect().Descriptor().FullName(), got, want)
		}
		if newMsg().ProtoReflect().Descriptor() == md {
			simple = NewDecoder(md).Unmarshal(in, dynamicpb.NewMessage(md))
		}
	}
	return simple
}

func TestUnmarshalMatchesProtojson(t *testing.T) {
	t.Parallel()
	md := scalarsDescriptor(t)
	for _, in := range unmarshalSeeds {
		checkUnmarshal(t, md, []byte(in))
	}
	// The fast path is taken where it should be, and left where protojson must decide.
	assert.True(t, checkUnmarshal(t, md, []byte(unmarshalSeeds[3])), "every simple kind")
	assert.True(t, checkUnmarshal(t, md, []byte(`{"renamed":"x","camel_case":"y"}`)), "JSON and proto names")
	assert.True(t, checkUnmarshal(t, md, []byte(`{"s":"a\nb","d":-1.5e3}`)), "an escape, a double")
	assert.False(t, checkUnmarshal(t, md, []byte(`{"s":"\ud83c\udf0d"}`)), "a surrogate escape")
	assert.True(t, checkUnmarshal(t, md, []byte(`{"e":"E_ONE"}`)), "an enum by name")
	assert.False(t, checkUnmarshal(t, md, []byte(`{"e":1}`)), "an enum by number")
	assert.True(t, checkUnmarshal(t, md, []byte(`{"oa":"x"}`)), "one member of a oneof")
	assert.False(t, checkUnmarshal(t, md, []byte(`{"oa":"x","ob":1}`)), "two members of a oneof")
	text := &mcpv1.TextContent{}
	require.NoError(t, Unmarshal(protojson.UnmarshalOptions{}, []byte(`{"text":"hi"}`), text))
	assert.Equal(t, "hi", text.GetText())
	assert.True(t, NewDecoder(text.ProtoReflect().Descriptor()).Unmarshal([]byte(`{"text":"hi"}`), &mcpv1.TextContent{}), "a generated message")
}

// FuzzUnmarshal checks that Unmarshal decodes what protojson decodes, into the same message,
// and fails where it fails.
func FuzzUnmarshal(f *testing.F) {
	for _, s := range unmarshalSeeds {
		f.Add([]byte(s))
	}
	md := scalarsDescriptor(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		checkUnmarshal(t, md, in)
	})
}
