package runtime

import (
	"bytes"
	"encoding/json"
	"sync"

	"github.com/protomcp/protomcp/internal/jsonscan"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// envelopeMembers are the member names of a JSON-RPC message. JSON-RPC 2.0 names them in
// lower case, and JSON object keys are case-sensitive; encoding/json matches them without
// regard to case, so that `"ID"` or `"METHOD"` would be taken for the real members.
var envelopeMembers = [...][]byte{[]byte("jsonrpc"), []byte("id"), []byte("method"), []byte("params"), []byte("result"), []byte("error")}

// checkMemberCase refuses a message whose top-level member names match a JSON-RPC member only
// without regard to case. data is valid JSON (encoding/json decoded it into m); the scan runs
// only when a member m holds is missing under its exact name, and allocates nothing unless a
// key holds an escape.
func checkMemberCase(data []byte, m *wireMessage) *Error {
	if namedExactly(data, m) {
		return nil
	}
	for i := jsonscan.FirstMember(data); i >= 0; {
		var key []byte
		if key, _, i = jsonscan.NextMember(data, i); i == jsonscan.Bad {
			return nil
		}
		if err := checkKeyCase(key); err != nil {
			return err
		}
	}
	return nil
}

// quotedEnvelopeMembers are envelopeMembers as JSON strings, in the same order.
var quotedEnvelopeMembers = func() (q [len(envelopeMembers)][]byte) {
	for i, m := range envelopeMembers {
		q[i] = append(append([]byte{'"'}, m...), '"')
	}
	return q
}()

// holds reports which of envelopeMembers m has, in their order.
func (m *wireMessage) holds() [len(envelopeMembers)]bool {
	return [...]bool{true, m.ID != nil, m.Method != "", m.Params != nil, m.Result != nil, m.Error != nil}
}

// namedExactly is the common case of checkMemberCase, without a scan of the whole message:
// every member encoding/json filled into m appears in data under its exact name (bytes.Contains
// is fast on large messages).
func namedExactly(data []byte, m *wireMessage) bool {
	for i, held := range m.holds() {
		if held && !bytes.Contains(data, quotedEnvelopeMembers[i]) {
			return false
		}
	}
	return true
}

// checkKeyCase refuses a key (as it is written, escapes included) that is a JSON-RPC member's
// name only without regard to case.
func checkKeyCase(key []byte) *Error {
	key, ok := unescapeKey(key)
	if !ok {
		return nil
	}
	for _, m := range envelopeMembers {
		if len(key) == len(m) && !bytes.Equal(key, m) && bytes.EqualFold(key, m) {
			return Errorf(CodeInvalidRequest, "invalid request: member %q is not %q: JSON-RPC member names are case-sensitive", truncate(string(key), 20), m)
		}
	}
	return nil
}

// unescapeKey returns key, a member name as it is written, with its escapes decoded; ok is
// false when they do not decode.
func unescapeKey(key []byte) (k []byte, ok bool) {
	if !jsonscan.HasEscape(key) {
		return key, true
	}
	var s string
	if json.Unmarshal(append(append([]byte{'"'}, key...), '"'), &s) != nil {
		return nil, false
	}
	return []byte(s), true
}

// checkArgs walks a typed tool's arguments, which protojson has accepted into a message of
// descriptor md, and refuses three things protojson takes but the tool's input schema does not
// allow: an enum given by its number (the schema lists names; a number may be one the enum does
// not declare at all), a 32-bit integer given as a string (the schema says integer), and a
// google.protobuf.Any without "@type" (the schema requires it; protojson reads {} as an empty
// Any). It returns "" when the arguments are fine, else what is wrong, naming the field. It
// allocates only to say what is wrong. The typed client runs it on what it is about to send
// (checkTypedArgs), so that it refuses, with the server's words, what the server would.
func checkArgs(obj []byte, md protoreflect.MessageDescriptor) string {
	if !strictFields(md, nil) {
		return "" // nothing to check: no enum, 32-bit integer or Any field at any depth
	}
	field, problem := strictObject(obj, md)
	if problem == "" {
		return ""
	}
	return "field " + field + ": " + problem
}

// checkTypedArgs refuses, before they are sent, the arguments args that the typed client
// encoded from a request of type md for tool name, when the server would refuse them
// (checkArgs): protojson writes an open enum's number that has no name as a number, and an
// empty google.protobuf.Any as {}, which the input schema does not allow. The error is a
// CodeInvalidParams *Error whose message is the server's, word for word.
func checkTypedArgs(name string, md protoreflect.MessageDescriptor, args []byte) error {
	if msg := checkArgs(args, md); msg != "" {
		return Errorf(CodeInvalidParams, "invalid arguments for tool %s: %s", name, msg)
	}
	return nil
}

// strictObject checks the members of a message's object; on a problem it returns the path of
// the field at fault and what is wrong with it.
func strictObject(obj []byte, md protoreflect.MessageDescriptor) (field, problem string) {
	for i := jsonscan.FirstMember(obj); i >= 0; {
		var key, val []byte
		if key, val, i = jsonscan.NextMember(obj, i); i == jsonscan.Bad {
			return "", ""
		}
		if fd := strictFieldByKey(md, key); fd != nil {
			if sub, problem := strictField(val, fd); problem != "" {
				return fd.JSONName() + sub, problem
			}
		}
	}
	return "", ""
}

// strictFields reports whether md has, at any depth, a field that checkArgs checks. The
// answer is kept per message type.
func strictFields(md protoreflect.MessageDescriptor, seen map[protoreflect.FullName]bool) bool {
	if v, ok := strictCache.Load(md.FullName()); ok {
		return v.(bool)
	}
	top := seen == nil
	if top {
		seen = make(map[protoreflect.FullName]bool)
	}
	if seen[md.FullName()] {
		return false // a cycle: the other fields decide
	}
	seen[md.FullName()] = true
	found := false
	fields := md.Fields()
	for i := range fields.Len() {
		if found = strictFieldNeeded(fields.Get(i), seen); found {
			break
		}
	}
	if top {
		strictCache.Store(md.FullName(), found) // only a complete answer: not one inside a cycle
	}
	return found
}

// strictFieldNeeded reports whether checkArgs checks field fd: an enum, a 32-bit integer or
// an Any (a map's values included), or a message that has one at any depth.
func strictFieldNeeded(fd protoreflect.FieldDescriptor, seen map[protoreflect.FullName]bool) bool {
	if fd.IsMap() {
		fd = fd.MapValue()
	}
	switch k := fd.Kind(); {
	case k == protoreflect.EnumKind || isInt32Kind(k):
		return true
	case isMessageKind(k):
		m := fd.Message()
		return m.FullName() == anyFullName || m.FullName().Parent() != "google.protobuf" && strictFields(m, seen)
	}
	return false
}

// isInt32Kind reports whether k is one of the 32-bit integer kinds, which protojson also takes
// as strings but a tool's input schema types as integer.
func isInt32Kind(k protoreflect.Kind) bool {
	switch k {
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind, protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return true
	}
	return false
}

// strictCache holds strictFields' answers by message name.
var strictCache sync.Map

// strictFieldByKey finds the field a JSON key names, by JSON name or proto name as protojson does.
func strictFieldByKey(md protoreflect.MessageDescriptor, key []byte) protoreflect.FieldDescriptor {
	if bytes.IndexByte(key, '\\') >= 0 {
		return nil // escaped keys: rare, and protojson has checked the value's type
	}
	// A loop of comparisons rather than ByJSONName(string(key)), whose conversion allocates on
	// every call: messages have few fields.
	fields := md.Fields()
	for i := range fields.Len() {
		if fd := fields.Get(i); string(key) == fd.JSONName() || string(key) == string(fd.Name()) {
			return fd
		}
	}
	return nil
}

// strictField checks the value of field fd; sub is the rest of the path at fault.
func strictField(v []byte, fd protoreflect.FieldDescriptor) (sub, problem string) {
	switch {
	case fd.IsMap():
		return strictMapValues(v, fd.MapValue())
	case fd.IsList():
		return strictItems(v, fd)
	default:
		return strictValue(v, fd)
	}
}

// strictValue checks one value of field fd.
func strictValue(v []byte, fd protoreflect.FieldDescriptor) (sub, problem string) {
	if len(v) == 0 {
		return "", ""
	}
	switch k := fd.Kind(); {
	case k == protoreflect.EnumKind:
		return "", enumNumberProblem(v, fd.Enum())
	case isInt32Kind(k):
		return "", int32StringProblem(v)
	case isMessageKind(k):
		return strictMessageValue(v, fd.Message())
	}
	return "", ""
}

// enumNumberProblem refuses v, a value of an enum field, given by its number: the schema lists
// the value names. google.protobuf.NullValue is written as null, never as a number.
func enumNumberProblem(v []byte, ed protoreflect.EnumDescriptor) string {
	if isJSONNumberStart(v[0]) && ed.FullName() != "google.protobuf.NullValue" {
		return truncate(string(v), 20) + " is an enum number; give one of the value names the schema lists"
	}
	return ""
}

// int32StringProblem refuses v, a value of a 32-bit integer field, given as a string: the
// schema says integer.
func int32StringProblem(v []byte) string {
	if v[0] == '"' {
		return truncate(string(v), 20) + " is a string; a 32-bit integer must be a JSON number"
	}
	return ""
}

// strictMessageValue checks v, a value of a message field of type md, member by member; the
// well-known types have JSON forms of their own, which protojson checks, but for the "@type"
// of an Any.
func strictMessageValue(v []byte, md protoreflect.MessageDescriptor) (sub, problem string) {
	if v[0] != '{' {
		return "", ""
	}
	if md.FullName() == anyFullName {
		return "", anyTypeProblem(v)
	}
	if md.FullName().Parent() == "google.protobuf" {
		return "", ""
	}
	if field, problem := strictObject(v, md); problem != "" {
		return "." + field, problem
	}
	return "", ""
}

// anyFullName is google.protobuf.Any's name.
const anyFullName protoreflect.FullName = "google.protobuf.Any"

// anyTypeProblem refuses v, the object of a google.protobuf.Any, when it has no "@type"
// member: protojson reads {} as an empty Any, which names no message, and the input schema
// requires "@type".
func anyTypeProblem(v []byte) string {
	for i := jsonscan.FirstMember(v); i >= 0; {
		var key []byte
		if key, _, i = jsonscan.NextMember(v, i); i == jsonscan.Bad {
			return ""
		}
		if k, ok := unescapeKey(key); ok && string(k) == "@type" {
			return ""
		}
	}
	return truncate(string(v), 20) + ` is an Any without "@type"; give the type URL of the packed message`
}

// isMessageKind reports whether k is a message kind (groups included).
func isMessageKind(k protoreflect.Kind) bool {
	return k == protoreflect.MessageKind || k == protoreflect.GroupKind
}

// isJSONNumberStart reports whether c, the first byte of a JSON value, starts a number.
func isJSONNumberStart(c byte) bool { return c == '-' || c >= '0' && c <= '9' }

// strictMapValues checks the values of a map field's object.
func strictMapValues(v []byte, fd protoreflect.FieldDescriptor) (sub, problem string) {
	for i := jsonscan.FirstMember(v); i >= 0; {
		var val []byte
		if _, val, i = jsonscan.NextMember(v, i); i == jsonscan.Bad {
			return "", ""
		}
		if sub, problem := strictValue(val, fd); problem != "" {
			return "[]" + sub, problem
		}
	}
	return "", ""
}

// strictItems checks the elements of a repeated field's array.
func strictItems(v []byte, fd protoreflect.FieldDescriptor) (sub, problem string) {
	i := jsonscan.SkipSpace(v, 0)
	if i >= len(v) || v[i] != '[' {
		return "", ""
	}
	i = jsonscan.SkipSpace(v, i+1)
	for i < len(v) && v[i] != ']' {
		vEnd := jsonscan.ValueEnd(v, i)
		if vEnd < 0 {
			return "", ""
		}
		if sub, problem := strictValue(v[i:vEnd], fd); problem != "" {
			return "[]" + sub, problem
		}
		i = jsonscan.SkipSpace(v, vEnd)
		if i >= len(v) || v[i] != ',' {
			return "", ""
		}
		i = jsonscan.SkipSpace(v, i+1)
	}
	return "", ""
}
