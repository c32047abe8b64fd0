package runtime

import (
	"encoding/json"
	"slices"
	"strconv"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// protojson's errors name the field only for some kinds of values ("invalid value for int64
// field big"): a bad timestamp, duration, field mask, map key or Any says what is wrong but not
// where. failingMember finds where, on the error path only: it decodes the arguments one member at
// a time, descending into the member that fails, and returns its path in JSON names
// ("times[0]", "home.point.latitude", "byCode[\"x\"]"), or "" when no single member fails (two
// members of a oneof, each valid alone).

// A member of the wrong JSON kind (a string where the field is a list) gets "expected an
// array, got a string" rather than protojson's "syntax error … unexpected token".

// argsError describes protojson's err decoding args into m: the failing member's path, then
// what is wrong with it, in JSON terms when the member has the wrong kind of value.
func argsError(m protoreflect.Message, args json.RawMessage, err error) string {
	f := failingMember(m, args, "")
	switch {
	case f.path == "":
		return cleanProtoError(err)
	case f.reason == "":
		return f.path + ": " + cleanProtoError(err)
	}
	return f.path + ": " + f.reason
}

// failure is where decoding fails, and why when the value is of the wrong JSON kind.
type failure struct {
	path, reason string
}

// failingMember finds the first member, in key order, of raw (m's JSON object) that does not
// decode alone, and returns its path after path, down to what fails inside it.
func failingMember(m protoreflect.Message, raw json.RawMessage, path string) failure {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return failure{}
	}
	if m.Descriptor().ParentFile().Package() == "google.protobuf" {
		return failure{} // a well-known type's JSON form is not an object of its fields
	}
	for _, k := range sortedKeys(obj) {
		if f, failed := memberFailure(m, k, obj[k], path+k); failed {
			return f
		}
	}
	return failure{}
}

// memberFailure decodes the member k: v of m's object alone; failed is false when it decodes,
// else f says where it fails (name, the member's path, or below it) and why.
func memberFailure(m protoreflect.Message, k string, v json.RawMessage, name string) (f failure, failed bool) {
	fd := fieldByKey(m.Descriptor(), k)
	if fd == nil {
		return failure{path: name}, true // an unknown field
	}
	one, _ := json.Marshal(map[string]json.RawMessage{k: v})
	if argsUnmarshal.Unmarshal(one, m.New().Interface()) == nil {
		return failure{}, false
	}
	return failureAt(name, kindMismatch(fd, v, false), failingValue(m, fd, v, name)), true
}

// failingValue descends into a failing member's value: the list item, map entry or field of a
// message that fails.
func failingValue(m protoreflect.Message, fd protoreflect.FieldDescriptor, raw json.RawMessage, path string) failure {
	switch {
	case fd.IsList():
		return failingItem(m, fd, raw, path)
	case fd.IsMap():
		return failingEntry(m, fd, raw, path)
	case fd.Message() != nil:
		return failingMember(m.NewField(fd).Message(), raw, path+".")
	}
	return failure{}
}

// failingItem finds the failing item of a list field's value.
func failingItem(m protoreflect.Message, fd protoreflect.FieldDescriptor, raw json.RawMessage, path string) failure {
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return failure{}
	}
	for i, item := range items {
		p := path + "[" + strconv.Itoa(i) + "]"
		if fd.Message() == nil {
			if !decodes(m, fd, []json.RawMessage{item}) {
				return failure{p, kindMismatch(fd, item, true)}
			}
			continue
		}
		elem := m.NewField(fd).List().NewElement().Message()
		if !decodesInto(elem, item) {
			return failureAt(p, kindMismatch(fd, item, true), failingMember(elem, item, p+"."))
		}
	}
	return failure{}
}

// failingEntry finds the failing entry of a map field's value.
func failingEntry(m protoreflect.Message, fd protoreflect.FieldDescriptor, raw json.RawMessage, path string) failure {
	var entries map[string]json.RawMessage
	if json.Unmarshal(raw, &entries) != nil {
		return failure{}
	}
	for _, k := range sortedKeys(entries) {
		p := path + "[" + strconv.Quote(k) + "]"
		if decodes(m, fd, map[string]json.RawMessage{k: entries[k]}) {
			continue
		}
		var inside failure
		if fd.MapValue().Message() != nil {
			inside = failingMember(m.NewField(fd).Map().NewValue().Message(), entries[k], p+".")
		}
		return failureAt(p, kindMismatch(fd.MapValue(), entries[k], false), inside)
	}
	return failure{}
}

// failureAt says where and why the value at path, which does not decode, fails: at path when
// reason (its JSON kind is wrong) is set, else at inside (the first thing inside it that fails
// alone), else at path.
func failureAt(path, reason string, inside failure) failure {
	switch {
	case reason != "":
		return failure{path, reason}
	case inside.path != "":
		return inside
	}
	return failure{path: path}
}

// kindMismatch returns "expected an array, got a string" when raw is of a JSON kind that fd
// (its list's item, when item) never takes in proto3 JSON, and "" otherwise: the kind fits, or
// fd is a well-known type whose JSON form this does not judge.
func kindMismatch(fd protoreflect.FieldDescriptor, raw json.RawMessage, item bool) string {
	got := jsonKind(raw)
	if got == "" || got == "null" && !item {
		return "" // null clears a field; inside a list it is an error protojson words well
	}
	want := wantKinds(fd, item)
	if len(want) == 0 || slices.Contains(want, got) {
		return ""
	}
	return "expected " + want[0] + ", got " + got
}

// wantKinds is the JSON kinds fd (its list's item, when item) takes in proto3 JSON, the
// one to name first; none for a well-known type whose JSON form kindMismatch does not judge.
func wantKinds(fd protoreflect.FieldDescriptor, item bool) []string {
	switch {
	case fd.IsList() && !item:
		return []string{"an array"}
	case fd.IsMap():
		return []string{"an object"}
	case fd.Message() != nil:
		return messageKinds(fd.Message())
	}
	return scalarKinds(fd.Kind())
}

// scalarKinds is the JSON kinds a scalar or enum of kind k takes, the one to name first.
func scalarKinds(k protoreflect.Kind) []string {
	switch k {
	case protoreflect.StringKind, protoreflect.BytesKind:
		return []string{"a string"}
	case protoreflect.BoolKind:
		return []string{"a boolean"}
	case protoreflect.EnumKind:
		return []string{"a string", "a number"}
	}
	return []string{"a number", "a string"} // numbers: protojson takes them quoted too
}

// messageKinds is the JSON kinds a message field takes: an object, but for the well-known
// types with a JSON form of their own.
func messageKinds(md protoreflect.MessageDescriptor) []string {
	if md.ParentFile().Package() != "google.protobuf" {
		return []string{"an object"}
	}
	switch md.Name() {
	case "Timestamp", "Duration", "FieldMask":
		return []string{"a string"}
	case "Struct", "Any", "Empty":
		return []string{"an object"}
	case "ListValue":
		return []string{"an array"}
	}
	return nil // Value takes anything; a wrapper, its scalar's kinds
}

// jsonKind names the JSON kind of raw, a valid JSON value, by its first byte.
func jsonKind(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	switch raw[0] {
	case '"':
		return "a string"
	case '[':
		return "an array"
	case '{':
		return "an object"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// decodes reports whether {fd: v} decodes into m's type.
func decodes(m protoreflect.Message, fd protoreflect.FieldDescriptor, v any) bool {
	one, err := json.Marshal(map[string]any{fd.JSONName(): v})
	if err != nil {
		return false
	}
	return argsUnmarshal.Unmarshal(one, m.New().Interface()) == nil
}

// decodesInto reports whether raw decodes into a new message of m's type.
func decodesInto(m protoreflect.Message, raw json.RawMessage) bool {
	var msg proto.Message = m.New().Interface()
	return argsUnmarshal.Unmarshal(raw, msg) == nil
}
