// Package fieldrules holds the rules about fields that protoc-gen-mcp writes into JSON Schemas
// and the runtime enforces, in one place so that the schema and the server cannot disagree:
// which fields are required, which are output only, and which enum zero values are
// placeholders a model must not send.
package fieldrules

import (
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
)

// google.api.field_behavior is extension 1052 of FieldOptions, a repeated enum. It is read
// from the options' wire form, so that it works whether or not google/api/field_behavior.proto
// is linked into the binary.
const (
	fieldBehaviorNumber     = 1052
	fieldBehaviorOutputOnly = 3
	fieldBehaviorRequired   = 2
)

// Required reports whether tool arguments must contain fd: a proto2/editions required field,
// google.api.field_behavior = REQUIRED, or (mcp.v1.field).required.
func Required(fd protoreflect.FieldDescriptor) bool {
	if fd.Cardinality() == protoreflect.Required {
		return true
	}
	opts, _ := fd.Options().(*descriptorpb.FieldOptions)
	if opts == nil {
		return false
	}
	if fo, ok := proto.GetExtension(opts, mcpv1.E_Field).(*mcpv1.FieldOptions); ok && fo.GetRequired() {
		return true
	}
	return hasFieldBehavior(opts, fieldBehaviorRequired)
}

// OutputOnly reports whether fd is google.api.field_behavior = OUTPUT_ONLY: the server sets
// it, a client never sends it.
func OutputOnly(fd protoreflect.FieldDescriptor) bool {
	opts, _ := fd.Options().(*descriptorpb.FieldOptions)
	return opts != nil && hasFieldBehavior(opts, fieldBehaviorOutputOnly)
}

// PlaceholderZero reports whether ed's zero value is the conventional X_UNSPECIFIED
// placeholder, which input schemas leave out and a required field refuses.
func PlaceholderZero(ed protoreflect.EnumDescriptor) bool {
	values := ed.Values()
	if values.Len() < 2 {
		return false
	}
	zero := values.ByNumber(0)
	return zero != nil && strings.HasSuffix(string(zero.Name()), "_UNSPECIFIED")
}

// hasFieldBehavior reports whether the options carry google.api.field_behavior = want, packed
// or not.
func hasFieldBehavior(opts *descriptorpb.FieldOptions, want uint64) bool {
	raw, err := proto.MarshalOptions{Deterministic: true}.Marshal(opts)
	if err != nil {
		return false
	}
	for len(raw) > 0 {
		num, typ, n := protowire.ConsumeTag(raw)
		if n < 0 {
			return false
		}
		raw = raw[n:]
		if num == fieldBehaviorNumber {
			switch typ {
			case protowire.VarintType:
				if v, m := protowire.ConsumeVarint(raw); m >= 0 && v == want {
					return true
				}
			case protowire.BytesType:
				packed, m := protowire.ConsumeBytes(raw)
				for m >= 0 && len(packed) > 0 {
					v, k := protowire.ConsumeVarint(packed)
					if k < 0 {
						break
					}
					if v == want {
						return true
					}
					packed = packed[k:]
				}
			}
		}
		n = protowire.ConsumeFieldValue(num, typ, raw)
		if n < 0 {
			return false
		}
		raw = raw[n:]
	}
	return false
}
