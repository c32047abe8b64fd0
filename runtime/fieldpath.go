package runtime

import (
	"encoding/json"
	"strconv"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// protojson's errors name the field only for some kinds of values ("invalid value for int64
// field big"): a bad timestamp, duration, field mask, map key or Any says what is wrong but not
// where. errorPath finds where, on the error path only: it decodes the arguments one member at
// a time, descending into the member that fails, and returns its path in JSON names
// ("times[0]", "home.point.latitude", "byCode[\"x\"]"), or "" when no single member fails (two
// members of a oneof, each valid alone).

// errorPath returns the path of the member of args that protojson cannot decode into m's type.
func errorPath(m protoreflect.Message, args json.RawMessage) string {
	return failingMember(m, args, "")
}

func failingMember(m protoreflect.Message, raw json.RawMessage, path string) string {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return ""
	}
	md := m.Descriptor()
	if md.ParentFile().Package() == "google.protobuf" {
		return "" // a well-known type's JSON form is not an object of its fields
	}
	for _, k := range sortedKeys(obj) {
		fd := md.Fields().ByJSONName(k)
		if fd == nil {
			fd = md.Fields().ByName(protoreflect.Name(k))
		}
		name := path + k
		if fd == nil {
			return name // an unknown field
		}
		one, _ := json.Marshal(map[string]json.RawMessage{k: obj[k]})
		if argsUnmarshal.Unmarshal(one, m.New().Interface()) == nil {
			continue
		}
		if inner := failingValue(m, fd, obj[k], name); inner != "" {
			return inner
		}
		return name
	}
	return ""
}

// failingValue descends into a failing member's value: the list item, map entry or field of a
// message that fails.
func failingValue(m protoreflect.Message, fd protoreflect.FieldDescriptor, raw json.RawMessage, path string) string {
	switch {
	case fd.IsList():
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) != nil {
			return ""
		}
		for i, item := range items {
			p := path + "[" + strconv.Itoa(i) + "]"
			if fd.Message() == nil {
				if !decodes(m, fd, []json.RawMessage{item}) {
					return p
				}
				continue
			}
			elem := m.NewField(fd).List().NewElement().Message()
			if !decodesInto(elem, item) {
				if inner := failingMember(elem, item, p+"."); inner != "" {
					return inner
				}
				return p
			}
		}
	case fd.IsMap():
		var entries map[string]json.RawMessage
		if json.Unmarshal(raw, &entries) != nil {
			return ""
		}
		for _, k := range sortedKeys(entries) {
			p := path + "[" + strconv.Quote(k) + "]"
			if !decodes(m, fd, map[string]json.RawMessage{k: entries[k]}) {
				if fd.MapValue().Message() != nil {
					v := m.NewField(fd).Map().NewValue().Message()
					if inner := failingMember(v, entries[k], p+"."); inner != "" {
						return inner
					}
				}
				return p
			}
		}
	case fd.Message() != nil:
		return failingMember(m.NewField(fd).Message(), raw, path+".")
	}
	return ""
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
