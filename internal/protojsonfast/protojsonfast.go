// Package protojsonfast writes typed tool results in the proto3 JSON mapping without protojson's
// per-message costs (protojson sorts every message's fields through an allocating ranger and
// grows its own buffer): a profile of a 500-item result had protojson at half the call. It
// writes what protojson.Marshal with default options writes, the same members with the same
// values, for messages made of scalars, enums, strings, bytes, nested messages, repeated
// fields, maps and google.protobuf.Timestamp. Any other message (other well-known types,
// groups, extensions), and any value protojson would reject (invalid UTF-8, a timestamp out of
// range), goes to protojson itself, so that the output and the errors stay protojson's.
//
// Unmarshal reads the common small result (strings without escapes, booleans, plain integers)
// the same way: anything else goes to protojson.
package protojsonfast

import (
	"encoding/base64"
	"errors"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// errProtoJSON sends a message to protojson.
var errProtoJSON = errors.New("use protojson")

// Append appends m's proto3 JSON to b: what protojson.MarshalOptions{}.MarshalAppend appends.
func Append(b []byte, m proto.Message) ([]byte, error) {
	return AppendFast(b, m, fastJSONSupported(m.ProtoReflect().Descriptor()))
}

// Supported reports whether Append writes messages of type md itself, without protojson.
// It is computed once per type; a caller that encodes one type over and over can keep the
// answer and call AppendFast.
func Supported(md protoreflect.MessageDescriptor) bool {
	return fastJSONSupported(md)
}

// AppendFast is Append for a caller that knows Supported's answer for m's type: fast is that
// answer. With fast false, protojson writes m.
func AppendFast(b []byte, m proto.Message, fast bool) ([]byte, error) {
	pm := m.ProtoReflect()
	if fast {
		out, err := appendMessageJSON(b, pm)
		if err == nil {
			return out, nil
		}
		if !errors.Is(err, errProtoJSON) {
			return nil, err
		}
	}
	return protojson.MarshalOptions{}.MarshalAppend(b, m)
}

var fastJSONCache sync.Map // protoreflect.MessageDescriptor -> bool

// fastJSONSupported reports whether appendMessageJSON handles every message reachable from md.
func fastJSONSupported(md protoreflect.MessageDescriptor) bool {
	if v, ok := fastJSONCache.Load(md); ok {
		return v.(bool)
	}
	ok := fastJSONCheck(md, map[protoreflect.MessageDescriptor]bool{})
	fastJSONCache.Store(md, ok)
	return ok
}

func fastJSONCheck(md protoreflect.MessageDescriptor, seen map[protoreflect.MessageDescriptor]bool) bool {
	if seen[md] {
		return true // recursion: decided where it started
	}
	seen[md] = true
	switch md.FullName() {
	case "google.protobuf.Timestamp":
		return true
	}
	if md.FullName().Parent() == "google.protobuf" || md.ExtensionRanges().Len() > 0 {
		return false
	}
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if fd.Cardinality() == protoreflect.Required {
			return false // protojson checks that required fields are set
		}
		if fd.IsMap() {
			fd = fd.MapValue()
		}
		switch fd.Kind() {
		case protoreflect.GroupKind:
			return false
		case protoreflect.MessageKind:
			if !fastJSONCheck(fd.Message(), seen) {
				return false
			}
		case protoreflect.EnumKind:
			if fd.Enum().FullName() == "google.protobuf.NullValue" {
				return false
			}
		}
	}
	return true
}

func appendMessageJSON(b []byte, m protoreflect.Message) ([]byte, error) {
	md := m.Descriptor()
	if md.FullName() == "google.protobuf.Timestamp" {
		return appendTimestampJSON(b, m)
	}
	b = append(b, '{')
	first := true
	fields := md.Fields()
	var err error
	for i := range fields.Len() {
		fd := fields.Get(i)
		if !m.Has(fd) {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = AppendString(b, fd.JSONName())
		b = append(b, ':')
		switch {
		case fd.IsList():
			l := m.Get(fd).List()
			b = append(b, '[')
			for j := range l.Len() {
				if j > 0 {
					b = append(b, ',')
				}
				if b, err = appendValueJSON(b, fd, l.Get(j)); err != nil {
					return nil, err
				}
			}
			b = append(b, ']')
		case fd.IsMap():
			var done bool
			if b, done, err = appendGoMap(b, m, fd); err != nil {
				return nil, err
			}
			if done {
				continue
			}
			if b, err = appendMapJSON(b, fd, m.Get(fd).Map()); err != nil {
				return nil, err
			}
		default:
			if b, err = appendValueJSON(b, fd, m.Get(fd)); err != nil {
				return nil, err
			}
		}
	}
	return append(b, '}'), nil
}

// appendMapJSON writes a map as an object with its keys in order, as protojson does.
func appendMapJSON(b []byte, fd protoreflect.FieldDescriptor, m protoreflect.Map) ([]byte, error) {
	keys := make([]protoreflect.MapKey, 0, m.Len())
	m.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
		keys = append(keys, k)
		return true
	})
	kd := fd.MapKey()
	slices.SortFunc(keys, func(x, y protoreflect.MapKey) int {
		switch kd.Kind() {
		case protoreflect.StringKind:
			return compare(x.String(), y.String())
		case protoreflect.BoolKind:
			return compare(boolInt(x.Bool()), boolInt(y.Bool()))
		case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
			return compare(x.Uint(), y.Uint())
		default:
			return compare(x.Int(), y.Int())
		}
	})
	vd := fd.MapValue()
	b = append(b, '{')
	var err error
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		if kd.Kind() == protoreflect.StringKind {
			if !utf8.ValidString(k.String()) {
				return nil, errProtoJSON
			}
			b = AppendString(b, k.String())
		} else {
			b = append(b, '"')
			b = append(b, k.String()...) // integers and booleans: their text, quoted
			b = append(b, '"')
		}
		b = append(b, ':')
		if b, err = appendValueJSON(b, vd, m.Get(k)); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

func compare[T int | int64 | uint64 | string](x, y T) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

func boolInt(v bool) int {
	if v {
		return 1
	}
	return 0
}

// appendValueJSON writes one value of field fd (an element, for lists and map values).
func appendValueJSON(b []byte, fd protoreflect.FieldDescriptor, v protoreflect.Value) ([]byte, error) {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return strconv.AppendBool(b, v.Bool()), nil
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return strconv.AppendInt(b, v.Int(), 10), nil
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return strconv.AppendUint(b, v.Uint(), 10), nil
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		b = append(b, '"')
		b = strconv.AppendInt(b, v.Int(), 10)
		return append(b, '"'), nil
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		b = append(b, '"')
		b = strconv.AppendUint(b, v.Uint(), 10)
		return append(b, '"'), nil
	case protoreflect.FloatKind:
		return appendFloatJSON(b, v.Float(), 32), nil
	case protoreflect.DoubleKind:
		return appendFloatJSON(b, v.Float(), 64), nil
	case protoreflect.StringKind:
		s := v.String()
		if !utf8.ValidString(s) {
			return nil, errProtoJSON // protojson's error, or its handling of unchecked proto2 strings
		}
		return AppendString(b, s), nil
	case protoreflect.BytesKind:
		b = append(b, '"')
		b = base64.StdEncoding.AppendEncode(b, v.Bytes())
		return append(b, '"'), nil
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			b = append(b, '"')
			b = append(b, ev.Name()...)
			return append(b, '"'), nil
		}
		return strconv.AppendInt(b, int64(v.Enum()), 10), nil
	case protoreflect.MessageKind:
		return appendMessageJSON(b, v.Message())
	}
	return nil, errProtoJSON
}

// appendFloatJSON writes a float as the proto3 JSON mapping does: NaN and the infinities as
// strings, otherwise the shortest decimal that reads back as the same value, in exponent form
// only for very small or very large magnitudes, with a one-digit negative exponent unpadded.
func appendFloatJSON(b []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(b, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(b, `"-Infinity"`...)
	}
	format := byte('f')
	if a := math.Abs(f); a != 0 {
		small, large := a < 1e-6, a >= 1e21
		if bits == 32 {
			small, large = float32(a) < 1e-6, float32(a) >= 1e21
		}
		if small || large {
			format = 'e'
		}
	}
	start := len(b)
	b = strconv.AppendFloat(b, f, format, -1, bits)
	if format == 'e' {
		// strconv writes e-07; JSON readers and protojson prefer e-7.
		if n := len(b); n-start >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// The range of google.protobuf.Timestamp: 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z.
const (
	minTimestampSeconds = -62135596800
	maxTimestampSeconds = 253402300799
)

// appendTimestampJSON writes an RFC 3339 UTC timestamp with 0, 3, 6 or 9 fractional digits.
func appendTimestampJSON(b []byte, m protoreflect.Message) ([]byte, error) {
	fields := m.Descriptor().Fields()
	secs := m.Get(fields.ByNumber(1)).Int()
	nanos := m.Get(fields.ByNumber(2)).Int()
	if secs < minTimestampSeconds || secs > maxTimestampSeconds || nanos < 0 || nanos > 999_999_999 {
		return nil, errProtoJSON // protojson reports the range error
	}
	b = append(b, '"')
	b = time.Unix(secs, 0).UTC().AppendFormat(b, "2006-01-02T15:04:05")
	if nanos != 0 {
		digits, n := 9, nanos
		for digits > 3 && n%1000 == 0 {
			digits -= 3
			n /= 1000
		}
		b = append(b, '.')
		var tmp [16]byte
		s := strconv.AppendInt(tmp[:0], n+int64(math.Pow10(digits)), 10) // a leading 1 keeps the zeros
		b = append(b, s[1:]...)
	}
	return append(b, 'Z', '"'), nil
}

// AppendString appends s, UTF-8 text, as a JSON string, escaping what JSON requires:
// quotes, backslashes and control characters.
func AppendString[T string | []byte](dst []byte, s T) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	from := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[from:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		from = i + 1
	}
	dst = append(dst, s[from:]...)
	return append(dst, '"')
}
