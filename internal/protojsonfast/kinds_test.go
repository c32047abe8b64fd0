package protojsonfast

import (
	"fmt"
	"github.com/stretchr/testify/assert"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// allKinds is a proto3 message with a field of every scalar kind the Decoder reads, one
// proto3 optional field, and one under a json_name of its own: the kinds and forms that the
// generated messages of FuzzDecoderMatchesProtojson lack.
func allKinds(t testing.TB) protoreflect.MessageDescriptor {
	t.Helper()
	kinds := []descriptorpb.FieldDescriptorProto_Type{
		descriptorpb.FieldDescriptorProto_TYPE_INT32, descriptorpb.FieldDescriptorProto_TYPE_SINT32,
		descriptorpb.FieldDescriptorProto_TYPE_SFIXED32, descriptorpb.FieldDescriptorProto_TYPE_UINT32,
		descriptorpb.FieldDescriptorProto_TYPE_FIXED32, descriptorpb.FieldDescriptorProto_TYPE_INT64,
		descriptorpb.FieldDescriptorProto_TYPE_SINT64, descriptorpb.FieldDescriptorProto_TYPE_SFIXED64,
		descriptorpb.FieldDescriptorProto_TYPE_UINT64, descriptorpb.FieldDescriptorProto_TYPE_FIXED64,
		descriptorpb.FieldDescriptorProto_TYPE_FLOAT, descriptorpb.FieldDescriptorProto_TYPE_DOUBLE,
		descriptorpb.FieldDescriptorProto_TYPE_BOOL, descriptorpb.FieldDescriptorProto_TYPE_STRING,
	}
	msg := &descriptorpb.DescriptorProto{Name: proto.String("AllKinds")}
	for i, k := range kinds {
		msg.Field = append(msg.Field, &descriptorpb.FieldDescriptorProto{
			Name: proto.String("f_" + string(rune('a'+i))), Number: proto.Int32(int32(i + 1)),
			Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(), Type: k.Enum(),
		})
	}
	msg.Field = append(msg.Field,
		&descriptorpb.FieldDescriptorProto{
			Name: proto.String("opt"), Number: proto.Int32(20), Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
			Type: descriptorpb.FieldDescriptorProto_TYPE_INT32.Enum(), Proto3Optional: proto.Bool(true), OneofIndex: proto.Int32(0),
		},
		&descriptorpb.FieldDescriptorProto{
			Name: proto.String("renamed"), Number: proto.Int32(21), Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
			Type: descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum(), JsonName: proto.String("other"),
		})
	msg.OneofDecl = []*descriptorpb.OneofDescriptorProto{{Name: proto.String("_opt")}}
	fd, err := protodesc.NewFile(&descriptorpb.FileDescriptorProto{
		Name: proto.String("kinds.proto"), Package: proto.String("kinds"), Syntax: proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{msg},
	}, nil)
	require.NoError(t, err)
	return fd.Messages().Get(0)
}

// kindValues are JSON values at the edges of the scalar kinds.
var kindValues = []string{
	`0`, `-0`, `1`, `-1`, `2147483647`, `2147483648`, `-2147483648`, `-2147483649`, `4294967295`,
	`4294967296`, `9007199254740993`, `9223372036854775807`, `9223372036854775808`,
	`-9223372036854775808`, `18446744073709551615`, `18446744073709551616`, `1.5`, `1e2`, `1E2`,
	`-1.0`, `3.4028235e38`, `3.4028236e38`, `3.5e38`, `1e-46`, `-1e-46`, `1.4e-45`,
	`1.7976931348623157e308`, `1.8e308`, `5e-324`, `2e-324`, `1e-400`, `0.1`, `"1"`, `true`,
	`false`, `null`, `""`, `"\u0000"`, `"\ud800"`, `"é"`, `[]`, `{}`,
}

// TestDecoderMatchesProtojsonOnEveryKind: for every scalar kind and every edge value, under
// the JSON name, the proto name and a json_name, what the Decoder takes protojson takes too,
// with the same message.
func TestDecoderMatchesProtojsonOnEveryKind(t *testing.T) {
	t.Parallel()
	md := allKinds(t)
	d := NewDecoder(md)
	require.NotNil(t, d)
	fields := md.Fields()
	taken := 0
	for i := range fields.Len() {
		fd := fields.Get(i)
		for _, key := range []string{fd.JSONName(), string(fd.Name())} {
			for _, v := range kindValues {
				s := `{"` + key + `":` + v + `}`
				got := dynamicpb.NewMessage(md)
				if !d.Unmarshal([]byte(s), got) {
					continue
				}
				taken++
				want := dynamicpb.NewMessage(md)
				if err := protojson.Unmarshal([]byte(s), want); err != nil {
					assert.Fail(t, fmt.Sprintf("%s (%s): the decoder took what protojson refuses: %v", s, fd.Kind(), err))
					continue
				}
				if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
					assert.Fail(t, fmt.Sprintf("%s (%s): the decoder and protojson differ (-protojson +decoder):\n%s", s, fd.Kind(), diff))
				}
			}
		}
	}
	require.Greater(t, taken, 100, "values the decoder reads itself")
}
