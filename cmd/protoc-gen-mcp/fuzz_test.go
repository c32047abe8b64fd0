package main

import (
	"encoding/json"
	"fmt"
	"github.com/stretchr/testify/require"
	"math"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	_ "google.golang.org/protobuf/types/known/anypb"
	_ "google.golang.org/protobuf/types/known/durationpb"
	_ "google.golang.org/protobuf/types/known/emptypb"
	_ "google.golang.org/protobuf/types/known/fieldmaskpb"
	_ "google.golang.org/protobuf/types/known/structpb"
	_ "google.golang.org/protobuf/types/known/timestamppb"
	_ "google.golang.org/protobuf/types/known/wrapperspb"
)

// fuzzBytes hands out the fuzzer's bytes; past the end it gives zeros, so that every input
// describes some file.
type fuzzBytes struct {
	b []byte
	i int
}

func (f *fuzzBytes) byte() byte {
	if f.i >= len(f.b) {
		return 0
	}
	v := f.b[f.i]
	f.i++
	return v
}

func (f *fuzzBytes) n(max int) int { return int(f.byte()) % max }

func (f *fuzzBytes) u64() uint64 {
	var v uint64
	for range 8 {
		v = v<<8 | uint64(f.byte())
	}
	return v
}

var fuzzScalars = []descriptorpb.FieldDescriptorProto_Type{
	descriptorpb.FieldDescriptorProto_TYPE_DOUBLE, descriptorpb.FieldDescriptorProto_TYPE_FLOAT,
	descriptorpb.FieldDescriptorProto_TYPE_INT64, descriptorpb.FieldDescriptorProto_TYPE_UINT64,
	descriptorpb.FieldDescriptorProto_TYPE_INT32, descriptorpb.FieldDescriptorProto_TYPE_FIXED64,
	descriptorpb.FieldDescriptorProto_TYPE_FIXED32, descriptorpb.FieldDescriptorProto_TYPE_BOOL,
	descriptorpb.FieldDescriptorProto_TYPE_STRING, descriptorpb.FieldDescriptorProto_TYPE_BYTES,
	descriptorpb.FieldDescriptorProto_TYPE_UINT32, descriptorpb.FieldDescriptorProto_TYPE_SFIXED32,
	descriptorpb.FieldDescriptorProto_TYPE_SFIXED64, descriptorpb.FieldDescriptorProto_TYPE_SINT32,
	descriptorpb.FieldDescriptorProto_TYPE_SINT64,
}

var fuzzMapKeys = []descriptorpb.FieldDescriptorProto_Type{
	descriptorpb.FieldDescriptorProto_TYPE_STRING, descriptorpb.FieldDescriptorProto_TYPE_INT32,
	descriptorpb.FieldDescriptorProto_TYPE_INT64, descriptorpb.FieldDescriptorProto_TYPE_UINT32,
	descriptorpb.FieldDescriptorProto_TYPE_UINT64, descriptorpb.FieldDescriptorProto_TYPE_BOOL,
	descriptorpb.FieldDescriptorProto_TYPE_SINT64, descriptorpb.FieldDescriptorProto_TYPE_FIXED32,
}

var fuzzWellKnown = []string{
	".google.protobuf.Timestamp", ".google.protobuf.Duration", ".google.protobuf.Struct",
	".google.protobuf.Value", ".google.protobuf.ListValue", ".google.protobuf.FieldMask",
	".google.protobuf.Any", ".google.protobuf.Empty", ".google.protobuf.Int64Value",
	".google.protobuf.DoubleValue", ".google.protobuf.BoolValue", ".google.protobuf.BytesValue",
}

// fuzzFile builds a proto file from the fuzzer's bytes: a few messages that refer to each
// other (cycles included) and to well-known types, with scalars, enums, maps, repeated
// fields, oneofs and proto3 optional fields.
func fuzzFile(f *fuzzBytes) *descriptorpb.FileDescriptorProto {
	proto3 := f.n(4) != 0
	fd := &descriptorpb.FileDescriptorProto{
		Name:    proto.String("fuzz.proto"),
		Package: proto.String("fz"),
		Dependency: []string{
			"google/protobuf/any.proto", "google/protobuf/duration.proto", "google/protobuf/empty.proto",
			"google/protobuf/field_mask.proto", "google/protobuf/struct.proto",
			"google/protobuf/timestamp.proto", "google/protobuf/wrappers.proto",
		},
	}
	if proto3 {
		fd.Syntax = proto.String("proto3")
	} else {
		fd.Syntax = proto.String("proto2")
	}
	nEnums := f.n(3)
	for i := range nEnums {
		ed := &descriptorpb.EnumDescriptorProto{Name: proto.String(fmt.Sprintf("E%d", i))}
		for j := range 1 + f.n(4) {
			name := fmt.Sprintf("E%d_V%d", i, j)
			if j == 0 && f.n(2) == 0 {
				name = fmt.Sprintf("E%d_UNSPECIFIED", i)
			}
			ed.Value = append(ed.Value, &descriptorpb.EnumValueDescriptorProto{Name: proto.String(name), Number: proto.Int32(int32(j))})
		}
		fd.EnumType = append(fd.EnumType, ed)
	}
	nMsgs := 1 + f.n(4)
	for i := range nMsgs {
		md := &descriptorpb.DescriptorProto{Name: proto.String(fmt.Sprintf("M%d", i))}
		var oneof int32 = -1
		for j := range f.n(9) {
			name := fmt.Sprintf("f%d", j)
			fp := &descriptorpb.FieldDescriptorProto{
				Name:     proto.String(name),
				JsonName: proto.String(name),
				Number:   proto.Int32(int32(j + 1)),
				Label:    descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
			}
			kind := f.n(10)
			switch {
			case kind < 5:
				fp.Type = fuzzScalars[f.n(len(fuzzScalars))].Enum()
			case kind == 5 && nEnums > 0:
				fp.Type = descriptorpb.FieldDescriptorProto_TYPE_ENUM.Enum()
				fp.TypeName = proto.String(fmt.Sprintf(".fz.E%d", f.n(nEnums)))
			case kind == 6:
				fp.Type = descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum()
				fp.TypeName = proto.String(fuzzWellKnown[f.n(len(fuzzWellKnown))])
			case kind == 7:
				// A map: an entry message nested in this one.
				entry := &descriptorpb.DescriptorProto{
					Name:    proto.String(fmt.Sprintf("F%dEntry", j)),
					Options: &descriptorpb.MessageOptions{MapEntry: proto.Bool(true)},
					Field: []*descriptorpb.FieldDescriptorProto{
						{Name: proto.String("key"), JsonName: proto.String("key"), Number: proto.Int32(1), Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(), Type: fuzzMapKeys[f.n(len(fuzzMapKeys))].Enum()},
						{Name: proto.String("value"), JsonName: proto.String("value"), Number: proto.Int32(2), Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum()},
					},
				}
				if f.n(2) == 0 {
					entry.Field[1].Type = fuzzScalars[f.n(len(fuzzScalars))].Enum()
				} else {
					entry.Field[1].Type = descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum()
					entry.Field[1].TypeName = proto.String(fmt.Sprintf(".fz.M%d", f.n(nMsgs)))
				}
				md.NestedType = append(md.NestedType, entry)
				fp.Type = descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum()
				fp.TypeName = proto.String(fmt.Sprintf(".fz.M%d.F%dEntry", i, j))
				fp.Label = descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum()
				md.Field = append(md.Field, fp)
				continue
			default:
				fp.Type = descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum()
				fp.TypeName = proto.String(fmt.Sprintf(".fz.M%d", f.n(nMsgs)))
			}
			switch f.n(5) {
			case 0:
				fp.Label = descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum()
			case 1: // a member of the message's oneof
				if oneof < 0 {
					oneof = int32(len(md.OneofDecl))
					md.OneofDecl = append(md.OneofDecl, &descriptorpb.OneofDescriptorProto{Name: proto.String("choice")})
				}
				fp.OneofIndex = proto.Int32(oneof)
			case 2: // proto3 optional: a synthetic oneof of its own
				if proto3 && fp.GetType() != descriptorpb.FieldDescriptorProto_TYPE_MESSAGE {
					fp.Proto3Optional = proto.Bool(true)
					fp.OneofIndex = proto.Int32(int32(len(md.OneofDecl)))
					md.OneofDecl = append(md.OneofDecl, &descriptorpb.OneofDescriptorProto{Name: proto.String("_" + name)})
				}
			}
			md.Field = append(md.Field, fp)
		}
		// Synthetic oneofs must come after real ones.
		sortOneofs(md)
		fd.MessageType = append(fd.MessageType, md)
	}
	return fd
}

// sortOneofs moves the "choice" oneof first, renumbering the fields' oneof indexes.
func sortOneofs(md *descriptorpb.DescriptorProto) {
	idx := -1
	for i, o := range md.OneofDecl {
		if o.GetName() == "choice" {
			idx = i
		}
	}
	if idx <= 0 {
		return
	}
	order := append([]*descriptorpb.OneofDescriptorProto{md.OneofDecl[idx]}, append(append([]*descriptorpb.OneofDescriptorProto{}, md.OneofDecl[:idx]...), md.OneofDecl[idx+1:]...)...)
	remap := func(old int32) int32 {
		switch {
		case int(old) == idx:
			return 0
		case int(old) < idx:
			return old + 1
		default:
			return old
		}
	}
	for _, fp := range md.Field {
		if fp.OneofIndex != nil {
			fp.OneofIndex = proto.Int32(remap(fp.GetOneofIndex()))
		}
	}
	md.OneofDecl = order
}

// fill sets some fields of m from the fuzzer's bytes, to a bounded depth.
func fill(f *fuzzBytes, m protoreflect.Message, depth int) {
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if f.n(3) == 0 {
			continue
		}
		switch {
		case fd.IsMap():
			mp := m.Mutable(fd).Map()
			for range f.n(3) {
				k := scalar(f, fd.MapKey())
				if fd.MapValue().Kind() == protoreflect.MessageKind {
					if depth <= 0 || inGoogleProtobuf(fd.MapValue().Message()) {
						continue
					}
					v := mp.NewValue()
					fill(f, v.Message(), depth-1)
					mp.Set(k.MapKey(), v)
				} else {
					mp.Set(k.MapKey(), scalar(f, fd.MapValue()))
				}
			}
		case fd.IsList():
			l := m.Mutable(fd).List()
			for range f.n(3) {
				if fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind {
					if depth <= 0 || inGoogleProtobuf(fd.Message()) {
						break
					}
					v := l.NewElement()
					fill(f, v.Message(), depth-1)
					l.Append(v)
				} else {
					l.Append(scalar(f, fd))
				}
			}
		case fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind:
			if depth <= 0 || inGoogleProtobuf(fd.Message()) {
				continue
			}
			fill(f, m.Mutable(fd).Message(), depth-1)
		default:
			m.Set(fd, scalar(f, fd))
		}
	}
}

func inGoogleProtobuf(md protoreflect.MessageDescriptor) bool {
	return md.ParentFile().Package() == "google.protobuf"
}

func scalar(f *fuzzBytes, fd protoreflect.FieldDescriptor) protoreflect.Value {
	u := f.u64()
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(u&1 == 1)
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(int32(u))
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(uint32(u))
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(int64(u))
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(u)
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(math.Float32frombits(uint32(u)))
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(math.Float64frombits(u))
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(strings.Repeat("s", int(u%5)) + fmt.Sprint(u%1000))
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte(fmt.Sprint(u)))
	case protoreflect.EnumKind:
		vals := fd.Enum().Values()
		return protoreflect.ValueOfEnum(vals.Get(int(u % uint64(vals.Len()))).Number())
	}
	panic("unreachable kind " + fd.Kind().String())
}

func compileFuzzSchema(t *testing.T, text string) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	require.NoErrorf(t, err, "schema is not JSON: %v\n%s", err, text)
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.AssertContent()
	require.NoError(t, c.AddResource("mem:///schema.json", doc))
	s, err := c.Compile("mem:///schema.json")
	require.NoErrorf(t, err, "schema does not compile: %v\n%s", err, text)
	return s
}

// FuzzSchemaBuilder builds the input and output schemas of every message of a random file.
// Each must be a JSON object schema that compiles as JSON Schema 2020-12, and the protojson
// form of a message filled from the same bytes must validate against its output schema (and
// against its input schema, which protojson accepts, _UNSPECIFIED enum values aside) — never a panic or an endless schema.
func FuzzSchemaBuilder(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte("\x01\x02\x03\x07\x07\x07\x06\x06\x08\x08\x08\x05\x05\x04\x01\x02\x03\x00\x09"))
	f.Add([]byte(strings.Repeat("\x07\x01\x08\x02\x06\x03\x05", 20)))
	f.Add([]byte(strings.Repeat("\x03\x09\x08\x00\x01", 40)))
	f.Fuzz(func(t *testing.T, data []byte) {
		src := &fuzzBytes{b: data}
		fdp := fuzzFile(src)
		file, err := protodesc.NewFile(fdp, protoregistry.GlobalFiles)
		if err != nil {
			return // not a valid file: nothing for the plugin to see
		}
		types := new(protoregistry.Types)
		msgs := file.Messages()
		for i := range msgs.Len() {
			md := msgs.Get(i)
			in, inErr := messageSchema(md, input)
			out, outErr := messageSchema(md, output)
			if (inErr == nil) != (outErr == nil) {
				require.Fail(t, fmt.Sprintf("%s: input error %v, output error %v", md.FullName(), inErr, outErr))
			}
			if inErr != nil {
				continue // a generate-time error with a message is a fine answer
			}
			outSchema := compileFuzzSchema(t, out.String())
			inSchema := compileFuzzSchema(t, in.String())
			for _, s := range []string{in.String(), out.String()} {
				var root map[string]any
				if err := json.Unmarshal([]byte(s), &root); err != nil || root["type"] != "object" {
					require.Fail(t, fmt.Sprintf("%s: the root schema is not an object: %s", md.FullName(), s))
				}
			}
			msg := dynamicpb.NewMessage(md)
			fill(src, msg, 3)
			b, err := protojson.MarshalOptions{Resolver: types}.Marshal(msg)
			require.NoError(t, err, "marshal")
			inst, err := jsonschema.UnmarshalJSON(strings.NewReader(string(b)))
			require.NoError(t, err)
			if err := outSchema.Validate(inst); err != nil {
				require.Fail(t, fmt.Sprintf("%s: output schema rejects protojson %s: %v\nschema: %s", md.FullName(), b, err, out.String()))
			}
			// Input schemas leave out the _UNSPECIFIED zero value of enums on purpose (a
			// model should not pick it), although protojson writes it for fields with presence.
			if err := inSchema.Validate(inst); err != nil && !strings.Contains(string(b), "_UNSPECIFIED") {
				require.Fail(t, fmt.Sprintf("%s: input schema rejects protojson %s: %v\nschema: %s", md.FullName(), b, err, in.String()))
			}
		}
	})
}
