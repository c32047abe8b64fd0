package protojsonfast

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/protomcp/protomcp/internal/jsonscan"
)

// A Decoder reads proto3 JSON into one message type without protojson, in the common form:
// a JSON object whose members are the message's scalar fields (strings, booleans, integers,
// floating-point numbers, enums by their values' names) under their JSON or proto names, each
// once, at most one member of each oneof, with values of their own JSON type. It serves typed tools' arguments (a profile of a loopback echo call had
// protojson's decoding at a tenth of the server's work) and typed clients' results. Anything
// else (a nested message, a repeated field, an enum given by number, bytes, null, a
// number written as a string, a surrogate escape, an unknown member, text that is not JSON)
// is left to protojson: Unmarshal reports false, and the caller decodes with protojson, whose
// results and errors stay the reference.
type Decoder struct {
	fields []decoderField // the message's fields, with ok false for those left to protojson
}

type decoderField struct {
	jsonName, protoName string
	fd                  protoreflect.FieldDescriptor
	ok                  bool
	oneof               int // the index of the field's oneof in its message, -1 for none
}

// NewDecoder returns the decoder of md's messages, or nil when none of md's messages can be
// decoded without protojson (a well-known type, with a JSON form of its own, or more than 64
// fields).
func NewDecoder(md protoreflect.MessageDescriptor) *Decoder {
	if strings.HasPrefix(string(md.FullName()), "google.protobuf.") || md.Fields().Len() > 64 {
		return nil
	}
	d := &Decoder{}
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		oneof := -1
		if o := fd.ContainingOneof(); o != nil && !o.IsSynthetic() {
			oneof = o.Index()
		}
		d.fields = append(d.fields, decoderField{jsonName: fd.JSONName(), protoName: string(fd.Name()), fd: fd, ok: decodable(fd), oneof: oneof})
	}
	return d
}

// decodable reports whether the decoder reads fd's values itself.
func decodable(fd protoreflect.FieldDescriptor) bool {
	if fd.IsList() || fd.IsMap() || fd.IsExtension() {
		return false
	}
	switch fd.Kind() {
	case protoreflect.EnumKind:
		return fd.Enum().FullName() != "google.protobuf.NullValue" // null is its value
	case protoreflect.StringKind, protoreflect.BoolKind,
		protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Uint32Kind, protoreflect.Fixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind,
		protoreflect.Uint64Kind, protoreflect.Fixed64Kind,
		protoreflect.FloatKind, protoreflect.DoubleKind:
		return true
	}
	return false
}

// Unmarshal sets m's fields from data, valid JSON text, and reports whether it could: false
// leaves m partly set, for the caller to reset and decode with protojson. On true, m holds
// what protojson.Unmarshal would have set.
//
// The values are written as protobuf wire bytes and decoded by proto.Unmarshal, whose
// generated-code tables set fields without the reflection (and its allocations) that
// protoreflect's Set costs.
func (d *Decoder) Unmarshal(data []byte, m proto.Message) bool {
	wb := wireBufs.Get().(*[]byte)
	defer wireBufs.Put(wb)
	wire, ok := d.appendWire((*wb)[:0], data)
	if cap(wire) <= 4<<10 {
		*wb = wire[:0]
	}
	return ok && proto.Unmarshal(wire, m) == nil
}

// wireBufs holds the buffers of Unmarshal's wire bytes (*[]byte).
var wireBufs = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

// appendWire appends the wire form of the JSON object data to b.
func (d *Decoder) appendWire(b, data []byte) ([]byte, bool) {
	var seen, oneofs uint64
	ok := jsonscan.Members(data, func(key, val []byte) bool {
		n := d.lookup(key)
		if n < 0 || seen&(1<<n) != 0 {
			return false // unknown, left to protojson, an escape, or twice: protojson says
		}
		seen |= 1 << n
		if o := d.fields[n].oneof; o >= 0 {
			if oneofs&(1<<o) != 0 {
				return false // a second member of one oneof: protojson refuses it
			}
			oneofs |= 1 << o
		}
		var ok bool
		b, ok = appendScalar(b, val, d.fields[n].fd)
		return ok
	})
	return b, ok
}

// lookup returns the index of the field a member named key sets, or -1 when that field is
// left to protojson or there is none. Like protojson, it looks for a JSON name first, then for
// a proto name.
func (d *Decoder) lookup(key []byte) int {
	n := -1
	for j := range d.fields {
		if d.fields[j].jsonName == string(key) {
			n = j
			break
		}
	}
	if n < 0 {
		for j := range d.fields {
			if d.fields[j].protoName == string(key) {
				n = j
				break
			}
		}
	}
	if n < 0 || !d.fields[n].ok {
		return -1
	}
	return n
}

// appendScalar appends field fd with the JSON value v, in wire form, to b.
func appendScalar(b, v []byte, fd protoreflect.FieldDescriptor) ([]byte, bool) {
	num := fd.Number()
	switch fd.Kind() {
	case protoreflect.StringKind:
		b = protowire.AppendTag(b, num, protowire.BytesType)
		return appendUnquoted(b, v)
	case protoreflect.BoolKind:
		switch string(v) {
		case "true":
			return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.VarintType), 1), true
		case "false":
			return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.VarintType), 0), true
		}
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		if !isInteger(v) {
			break
		}
		bits := 64
		if k := fd.Kind(); k == protoreflect.Int32Kind || k == protoreflect.Sint32Kind || k == protoreflect.Sfixed32Kind {
			bits = 32
		}
		n, err := strconv.ParseInt(string(v), 10, bits)
		if err != nil {
			break
		}
		switch fd.Kind() {
		case protoreflect.Int32Kind, protoreflect.Int64Kind:
			return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.VarintType), uint64(n)), true
		case protoreflect.Sint32Kind, protoreflect.Sint64Kind:
			return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.VarintType), protowire.EncodeZigZag(n)), true
		case protoreflect.Sfixed32Kind:
			return protowire.AppendFixed32(protowire.AppendTag(b, num, protowire.Fixed32Type), uint32(int32(n))), true
		default:
			return protowire.AppendFixed64(protowire.AppendTag(b, num, protowire.Fixed64Type), uint64(n)), true
		}
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		if !isInteger(v) || v[0] == '-' {
			break
		}
		bits := 64
		if k := fd.Kind(); k == protoreflect.Uint32Kind || k == protoreflect.Fixed32Kind {
			bits = 32
		}
		n, err := strconv.ParseUint(string(v), 10, bits)
		if err != nil {
			break
		}
		switch fd.Kind() {
		case protoreflect.Uint32Kind, protoreflect.Uint64Kind:
			return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.VarintType), n), true
		case protoreflect.Fixed32Kind:
			return protowire.AppendFixed32(protowire.AppendTag(b, num, protowire.Fixed32Type), uint32(n)), true
		default:
			return protowire.AppendFixed64(protowire.AppendTag(b, num, protowire.Fixed64Type), n), true
		}
	case protoreflect.FloatKind:
		if !isNumber(v) {
			break
		}
		if f, err := strconv.ParseFloat(string(v), 32); err == nil && !math.IsInf(f, 0) {
			return protowire.AppendFixed32(protowire.AppendTag(b, num, protowire.Fixed32Type), math.Float32bits(float32(f))), true
		}
	case protoreflect.EnumKind:
		// A value's name, as protojson writes it; numbers, unknown names and escapes are
		// protojson's to read or refuse.
		if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' || bytes.IndexByte(v, '\\') >= 0 {
			break
		}
		name := v[1 : len(v)-1]
		values := fd.Enum().Values()
		for i := range values.Len() {
			if ev := values.Get(i); string(ev.Name()) == string(name) {
				return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.VarintType), uint64(int64(ev.Number()))), true
			}
		}
	case protoreflect.DoubleKind:
		if !isNumber(v) {
			break
		}
		if f, err := strconv.ParseFloat(string(v), 64); err == nil && !math.IsInf(f, 0) {
			return protowire.AppendFixed64(protowire.AppendTag(b, num, protowire.Fixed64Type), math.Float64bits(f)), true
		}
	}
	return b, false
}

// isInteger reports whether v is a JSON number written without a fraction or an exponent:
// -?(0|[1-9][0-9]*).
func isInteger(v []byte) bool {
	ok, end := numberParts(v)
	return ok && end == len(v) && intOnly(v)
}

// intOnly reports whether v holds no fraction and no exponent.
func intOnly(v []byte) bool {
	return !bytes.ContainsAny(v, ".eE")
}

// isNumber reports whether v is exactly one JSON number.
func isNumber(v []byte) bool {
	ok, end := numberParts(v)
	return ok && end == len(v)
}

// numberParts scans the JSON number at the start of v: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
// It reports whether one is there, and where it ends.
func numberParts(v []byte) (ok bool, end int) {
	i := 0
	if i < len(v) && v[i] == '-' {
		i++
	}
	switch {
	case i < len(v) && v[i] == '0':
		i++
	case i < len(v) && v[i] >= '1' && v[i] <= '9':
		for i < len(v) && v[i] >= '0' && v[i] <= '9' {
			i++
		}
	default:
		return false, i
	}
	if i < len(v) && v[i] == '.' {
		i++
		start := i
		for i < len(v) && v[i] >= '0' && v[i] <= '9' {
			i++
		}
		if i == start {
			return false, i
		}
	}
	if i < len(v) && (v[i] == 'e' || v[i] == 'E') {
		i++
		if i < len(v) && (v[i] == '+' || v[i] == '-') {
			i++
		}
		start := i
		for i < len(v) && v[i] >= '0' && v[i] <= '9' {
			i++
		}
		if i == start {
			return false, i
		}
	}
	return true, i
}

// appendUnquoted appends the JSON string v (with its quotes), decoded, as a length-delimited
// wire value. It refuses invalid UTF-8 and \u escapes of surrogates, which protojson decodes
// its own way.
func appendUnquoted(b, v []byte) ([]byte, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return b, false
	}
	v = v[1 : len(v)-1]
	if !utf8.Valid(v) || hasControl(v) {
		return b, false
	}
	if bytes.IndexByte(v, '\\') < 0 {
		return protowire.AppendBytes(b, v), true
	}
	// The decoded string is shorter than v: its length is known once decoded, so it is
	// written after a length of the largest size it can need, then moved up if shorter.
	lenAt := len(b)
	b = protowire.AppendVarint(b, uint64(len(v)))
	start := len(b)
	for len(v) > 0 {
		esc := bytes.IndexByte(v, '\\')
		if esc < 0 {
			b = append(b, v...)
			break
		}
		b = append(b, v[:esc]...)
		if esc+1 >= len(v) {
			return b, false
		}
		switch c := v[esc+1]; c {
		case '"', '\\', '/':
			b = append(b, c)
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			if esc+6 > len(v) {
				return b, false
			}
			r, err := strconv.ParseUint(string(v[esc+2:esc+6]), 16, 16)
			if err != nil || utf16.IsSurrogate(rune(r)) {
				return b, false
			}
			b = utf8.AppendRune(b, rune(r))
			v = v[esc+6:]
			continue
		default:
			return b, false
		}
		v = v[esc+2:]
	}
	n := len(b) - start
	if !utf8.Valid(b[start:]) {
		return b, false
	}
	// Rewrite the length, and close the gap if it takes fewer bytes than the one reserved.
	lb := protowire.AppendVarint(nil, uint64(n))
	gap := (start - lenAt) - len(lb)
	copy(b[lenAt:], lb)
	if gap > 0 {
		copy(b[lenAt+len(lb):], b[start:])
		b = b[:len(b)-gap]
	}
	return b, true
}

// hasControl reports whether v holds a control character, which a JSON string must escape.
func hasControl(v []byte) bool {
	for _, c := range v {
		if c < 0x20 {
			return true
		}
	}
	return false
}

var decoders sync.Map // protoreflect.MessageDescriptor -> *Decoder (nil: none)

// Unmarshal decodes b, proto3 JSON, into m as o.Unmarshal does: with m's Decoder when it reads
// b, else with o (which resets m first).
func Unmarshal(o protojson.UnmarshalOptions, b []byte, m proto.Message) error {
	md := m.ProtoReflect().Descriptor()
	v, ok := decoders.Load(md)
	if !ok {
		v, _ = decoders.LoadOrStore(md, NewDecoder(md))
	}
	if d := v.(*Decoder); d != nil && d.Unmarshal(b, m) {
		return nil
	}
	return o.Unmarshal(b, m)
}
