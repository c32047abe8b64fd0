package protojsonfast

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/protomcp/protomcp/internal/jsonscan"
)

// Unmarshal decodes b, proto3 JSON, into m as o.Unmarshal does. The common small result (an
// object whose members are strings without escapes, booleans and plain integers, each named
// by a field of m) is read without protojson's tokenizer; anything else (another kind of
// field or value, an escape, a null, an unknown or repeated member, invalid UTF-8, a
// well-known type, required fields) goes to o.Unmarshal, so that the result and the errors
// stay protojson's.
func Unmarshal(o protojson.UnmarshalOptions, b []byte, m proto.Message) error {
	if unmarshalSimple(b, m.ProtoReflect()) {
		return nil
	}
	return o.Unmarshal(b, m)
}

// unmarshalSimple decodes b into m when every part of it is simple (see Unmarshal); it reports
// false, having possibly set some fields, when it is not (o.Unmarshal resets m first).
func unmarshalSimple(b []byte, m protoreflect.Message) bool {
	md := m.Descriptor()
	fields := md.Fields()
	if fields.Len() > 64 || md.RequiredNumbers().Len() > 0 || strings.HasPrefix(string(md.FullName()), "google.protobuf.") || !utf8.Valid(b) {
		return false
	}
	i := jsonscan.SkipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	proto.Reset(m.Interface())
	var seen uint64 // by field index: protojson rejects a field named twice
	i = jsonscan.SkipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return jsonscan.SkipSpace(b, i+1) == len(b)
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return false
		}
		end := plainStringEnd(b, i)
		if end < 0 {
			return false
		}
		fd := fieldNamed(fields, b[i+1:end-1])
		if fd == nil || fd.IsList() || fd.IsMap() || fd.IsExtension() || (fd.ContainingOneof() != nil && !fd.ContainingOneof().IsSynthetic()) {
			return false
		}
		if bit := uint64(1) << fd.Index(); seen&bit != 0 {
			return false
		} else {
			seen |= bit
		}
		if i = jsonscan.SkipSpace(b, end); i >= len(b) || b[i] != ':' {
			return false
		}
		i = jsonscan.SkipSpace(b, i+1)
		if i >= len(b) {
			return false
		}
		if i = setSimple(b, i, m, fd); i < 0 {
			return false
		}
		if i = jsonscan.SkipSpace(b, i); i >= len(b) {
			return false
		}
		switch b[i] {
		case '}':
			return jsonscan.SkipSpace(b, i+1) == len(b)
		case ',':
			i = jsonscan.SkipSpace(b, i+1)
		default:
			return false
		}
	}
}

// fieldNamed returns the field whose JSON name is name, else the one whose proto name is
// (protojson's order: ByJSONName, then ByTextName, which is the proto name for every field
// setSimple sets), without making name a string.
func fieldNamed(fields protoreflect.FieldDescriptors, name []byte) protoreflect.FieldDescriptor {
	for j := range fields.Len() {
		if fd := fields.Get(j); fd.JSONName() == string(name) {
			return fd
		}
	}
	for j := range fields.Len() {
		if fd := fields.Get(j); string(fd.Name()) == string(name) {
			return fd
		}
	}
	return nil
}

// setSimple sets fd from the value at b[i] when it is a simple value of fd's kind, and returns
// the index just past it, or -1.
func setSimple(b []byte, i int, m protoreflect.Message, fd protoreflect.FieldDescriptor) int {
	switch fd.Kind() {
	case protoreflect.StringKind:
		if b[i] != '"' {
			return -1
		}
		end := plainStringEnd(b, i)
		if end < 0 {
			return -1
		}
		m.Set(fd, protoreflect.ValueOfString(string(b[i+1:end-1])))
		return end
	case protoreflect.BoolKind:
		switch {
		case len(b)-i >= 4 && string(b[i:i+4]) == "true":
			m.Set(fd, protoreflect.ValueOfBool(true))
			return i + 4
		case len(b)-i >= 5 && string(b[i:i+5]) == "false":
			m.Set(fd, protoreflect.ValueOfBool(false))
			return i + 5
		}
		return -1
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind,
		protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		end := plainIntEnd(b, i)
		if end < 0 {
			return -1
		}
		s := string(b[i:end])
		var v protoreflect.Value
		switch fd.Kind() {
		case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
			n, err := strconv.ParseInt(s, 10, 32)
			if err != nil {
				return -1
			}
			v = protoreflect.ValueOfInt32(int32(n))
		case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return -1
			}
			v = protoreflect.ValueOfInt64(n)
		case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
			n, err := strconv.ParseUint(s, 10, 32)
			if err != nil {
				return -1
			}
			v = protoreflect.ValueOfUint32(uint32(n))
		default:
			n, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return -1
			}
			v = protoreflect.ValueOfUint64(n)
		}
		m.Set(fd, v)
		return end
	}
	return -1
}

// plainStringEnd returns the index just past the string that starts at b[i] ('"') when it has
// no escape and no control character, or -1.
func plainStringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return j + 1
		case c == '\\' || c < 0x20:
			return -1
		}
	}
	return -1
}

// plainIntEnd returns the index just past the integer that starts at b[i], -?(0|[1-9][0-9]*),
// followed by something that is not part of a number, or -1.
func plainIntEnd(b []byte, i int) int {
	j := i
	if j < len(b) && b[j] == '-' {
		j++
	}
	start := j
	for j < len(b) && '0' <= b[j] && b[j] <= '9' {
		j++
	}
	if j == start || (b[start] == '0' && j-start > 1) {
		return -1
	}
	if j < len(b) && (b[j] == '.' || b[j] == 'e' || b[j] == 'E') {
		return -1
	}
	return j
}
