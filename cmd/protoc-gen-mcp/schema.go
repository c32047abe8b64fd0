package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"iter"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
	"github.com/protomcp/protomcp/internal/fieldrules"
)

// direction says whether a schema describes tool arguments (decoded from a model's JSON) or
// tool results (encoded by protojson). Inputs list required fields and leave out the
// _UNSPECIFIED zero value of enums; outputs describe everything protojson may write.
type direction int

const (
	input direction = iota
	output
)

// Schema is the subset of JSON Schema 2020-12 that the generator writes. Its keywords are
// written in the order of the fields, so that generated schemas read alike.
type Schema struct {
	boolean              *bool // a boolean schema (true or false) when set
	Ref                  string
	Type                 []string // one type is written as a string, several as an array
	Description          string
	Deprecated           bool
	ReadOnly             bool
	Default              json.RawMessage
	Format               string
	Pattern              string
	ContentEncoding      string
	Enum                 []string
	NumEnum              []string // JSON numbers, written as "enum" when Enum is empty
	Const                string   // a JSON value
	Minimum              string   // a JSON number
	Maximum              string   // a JSON number
	ExclusiveMinimum     string   // a JSON number
	ExclusiveMaximum     string   // a JSON number
	MinLength            string   // a JSON number
	MaxLength            string   // a JSON number
	Items                *Schema
	MinItems             string // a JSON number
	MaxItems             string // a JSON number
	UniqueItems          bool
	Properties           []Property
	PatternProperties    []Property
	Required             []string
	AdditionalProperties *Schema
	MinProperties        string // a JSON number
	MaxProperties        string // a JSON number
	PropertyNames        *Schema
	AnyOf                []*Schema
	Not                  *Schema
	Examples             []json.RawMessage
	Defs                 []Property
}

// Property is one named subschema, kept in declaration order.
type Property struct {
	Name   string
	Schema *Schema
}

// falseSchema is the boolean schema false, written only where a schema is boolean-valued by
// nature (additionalProperties).
var falseSchema = func() *Schema { f := false; return &Schema{boolean: &f} }

// schemaError is a generate-time error about one descriptor.
type schemaError struct {
	desc protoreflect.Descriptor
	msg  string
}

// Error names the descriptor by its full name: the caller's message already names the file.
func (e *schemaError) Error() string {
	return fmt.Sprintf("%s: %s", e.desc.FullName(), e.msg)
}

// messageSchema returns the JSON Schema of the proto3 JSON form of md, the root of a tool's
// input or output. The root is always an object.
func messageSchema(md protoreflect.MessageDescriptor, dir direction) (*Schema, error) {
	b := &schemaBuilder{
		dir:  dir,
		root: md,
		refs: defEntries(md),
		defs: map[protoreflect.FullName]*Schema{},
	}
	if s := wellKnownSchema(md, dir); s != nil {
		return wellKnownObject(md, s)
	}
	s := b.message(md, true)
	if b.err != nil {
		return nil, b.err
	}
	for _, name := range b.defOrder {
		s.Defs = append(s.Defs, Property{string(name), b.defs[name]})
	}
	if err := checkValues(s, b.values); err != nil {
		return nil, err
	}
	return s, nil
}

// wellKnownObject is s, the JSON form of the well-known type md, as the schema of a tool's
// arguments or result (without the type's long comment): it must be an object.
func wellKnownObject(md protoreflect.MessageDescriptor, s *Schema) (*Schema, error) {
	if len(s.Type) != 1 || s.Type[0] != "object" {
		return nil, &schemaError{md, "a tool's arguments and results must be JSON objects, and the JSON form of this well-known type is not"}
	}
	return s, nil
}

// schemaBuilder builds the schema of one message in one direction.
type schemaBuilder struct {
	dir      direction
	root     protoreflect.MessageDescriptor
	refs     map[protoreflect.FullName]bool // messages reached through $ref, to break cycles
	defs     map[protoreflect.FullName]*Schema
	defOrder []protoreflect.FullName
	values   []fieldValues // fields with a default or examples, checked once the schema is whole
	err      error
}

// cycleEntries finds, by depth-first search from root, the messages that close a cycle (the
// targets of back edges). Expanding every other message inline and referring to these through
// $defs (or "#" for the root) expands each schema finitely.
func cycleEntries(root protoreflect.MessageDescriptor) map[protoreflect.FullName]bool {
	const onStack, done = 1, 2
	state := map[protoreflect.FullName]int{}
	marked := map[protoreflect.FullName]bool{}
	var visit func(md protoreflect.MessageDescriptor)
	visit = func(md protoreflect.MessageDescriptor) {
		state[md.FullName()] = onStack
		for m := range fieldObjects(md) {
			switch state[m.FullName()] {
			case onStack:
				marked[m.FullName()] = true
			case 0:
				visit(m)
			}
		}
		state[md.FullName()] = done
	}
	if !isWellKnown(root) {
		visit(root)
	}
	return marked
}

// defEntries is the set of messages written once into $defs and referred to with $ref: those
// that close a cycle, and those used by more than one field (counting each message's fields
// once) unless they are small leaves. Inlining only messages used once, and leaves, keeps a
// schema's size linear in the size of the proto, where inlining every use grows exponentially
// with the depth of shared messages.
func defEntries(root protoreflect.MessageDescriptor) map[protoreflect.FullName]bool {
	refs := cycleEntries(root)
	if isWellKnown(root) {
		return refs
	}
	uses := fieldUses(root)
	var mark func(md protoreflect.MessageDescriptor)
	marked := map[protoreflect.FullName]bool{}
	mark = func(md protoreflect.MessageDescriptor) {
		if marked[md.FullName()] {
			return
		}
		marked[md.FullName()] = true
		if md.FullName() != root.FullName() && uses[md.FullName()] > 1 && !smallLeaf(md) {
			refs[md.FullName()] = true
		}
		for m := range fieldObjects(md) {
			mark(m)
		}
	}
	mark(root)
	return refs
}

// fieldUses counts, for each message reachable from root, the fields of type it (or map of
// it) among the fields of all reachable messages, each message's fields counted once.
func fieldUses(root protoreflect.MessageDescriptor) map[protoreflect.FullName]int {
	uses := map[protoreflect.FullName]int{}
	seen := map[protoreflect.FullName]bool{}
	var walk func(md protoreflect.MessageDescriptor)
	walk = func(md protoreflect.MessageDescriptor) {
		if seen[md.FullName()] {
			return
		}
		seen[md.FullName()] = true
		for m := range fieldObjects(md) {
			uses[m.FullName()]++
			walk(m)
		}
	}
	walk(root)
	return uses
}

// smallLeaf reports whether md is small enough to repeat inline wherever it is used: a few
// fields, none of them another message (well-known types aside).
func smallLeaf(md protoreflect.MessageDescriptor) bool {
	if md.Fields().Len() > 4 {
		return false
	}
	for range fieldObjects(md) {
		return false
	}
	return true
}

// fieldObjects yields, for each field of md in order, the message its values are (its map
// values, for a map) when that message is written as an object: well-known types, which have
// JSON forms of their own, and scalar fields yield nothing.
func fieldObjects(md protoreflect.MessageDescriptor) iter.Seq[protoreflect.MessageDescriptor] {
	return func(yield func(protoreflect.MessageDescriptor) bool) {
		fields := md.Fields()
		for i := 0; i < fields.Len(); i++ {
			if m := fieldMessage(fields.Get(i)); m != nil && !isWellKnown(m) && !yield(m) {
				return
			}
		}
	}
}

// fieldMessage is the message a field's values are (its map values, for a map), or nil.
func fieldMessage(fd protoreflect.FieldDescriptor) protoreflect.MessageDescriptor {
	if fd.IsMap() {
		fd = fd.MapValue()
	}
	return fd.Message()
}

func (b *schemaBuilder) fail(d protoreflect.Descriptor, format string, args ...any) {
	if b.err == nil {
		b.err = &schemaError{d, fmt.Sprintf(format, args...)}
	}
}

// message returns md's schema: a well-known type's JSON form, a $ref when md closes a cycle,
// or the object inline.
func (b *schemaBuilder) message(md protoreflect.MessageDescriptor, top bool) *Schema {
	if s := wellKnownSchema(md, b.dir); s != nil {
		return s
	}
	name := md.FullName()
	if !top && b.refs[name] {
		if name == b.root.FullName() {
			return &Schema{Ref: "#"}
		}
		if b.defs[name] == nil {
			def := &Schema{}
			b.defs[name] = def
			b.defOrder = append(b.defOrder, name)
			*def = *b.object(md)
		}
		return &Schema{Ref: "#/$defs/" + string(name)}
	}
	return b.object(md)
}

// object is a message as a JSON object: its fields by JSON name, nothing else.
func (b *schemaBuilder) object(md protoreflect.MessageDescriptor) *Schema {
	s := &Schema{
		Type:                 []string{"object"},
		Description:          leadingComments(md),
		AdditionalProperties: falseSchema(),
	}
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		b.addProperty(s, fields.Get(i))
	}
	b.noteOneofs(s, md)
	if notes := messageRuleNotes(md); b.dir == input && len(notes) > 0 {
		s.Description = join(s.Description, "Checked by the server: "+strings.Join(notes, "; ")+".")
	}
	// protojson writes a set extension field under its full name in brackets.
	if b.dir == output && md.ExtensionRanges().Len() > 0 {
		s.PatternProperties = []Property{{`^\[[A-Za-z_][A-Za-z0-9_.]*\]$`, anyJSON()}}
	}
	return s
}

// addProperty adds field fd to s, its message's object, unless it is output only and s an
// input; a field with a default or examples is kept for checkValues.
func (b *schemaBuilder) addProperty(s *Schema, fd protoreflect.FieldDescriptor) {
	if b.dir == input && fieldrules.OutputOnly(fd) {
		return // the server sets it; a model has nothing to send
	}
	fs, required := b.property(fd)
	if required {
		s.Required = append(s.Required, fd.JSONName())
	}
	s.Properties = append(s.Properties, Property{fd.JSONName(), fs})
	if len(fs.Default) > 0 || len(fs.Examples) > 0 {
		b.values = append(b.values, fieldValues{fd, fs})
	}
}

// describeSingular gives s, a singular field's schema, the field's comment doc when it has
// one, followed for an enum by its values: the enum's own description is replaced.
func (b *schemaBuilder) describeSingular(s *Schema, fd protoreflect.FieldDescriptor, doc string) {
	switch {
	case doc == "":
	case fd.Enum() != nil:
		s.Description = join(doc, enumValuesDoc(fd.Enum(), b.dir))
	default:
		s.Description = doc
	}
}

// property is a field's schema as a property of its message's object, and whether the
// object requires it. On inputs, a field is required when a rule says so, and accepts null
// otherwise; on outputs, a field the server alone sets is read-only.
func (b *schemaBuilder) property(fd protoreflect.FieldDescriptor) (fs *Schema, required bool) {
	fs = b.field(fd)
	switch {
	case b.dir == input && (fieldrules.Required(fd) || validateRequired(fd)):
		requireEntry(fs, fd)
		return fs, true
	case b.dir == input && !acceptsNull(fd):
		// protojson reads null as "not set" for every field, and some clients send it
		// for the optional arguments they leave out.
		return nullable(fs), false
	case fieldrules.OutputOnly(fd):
		fs.ReadOnly = true
	}
	return fs, false
}

// requireEntry makes fs, the schema of a required list or map field fd, need an entry: the
// runtime refuses an empty one.
func requireEntry(fs *Schema, fd protoreflect.FieldDescriptor) {
	switch {
	case fd.IsList():
		fs.MinItems = "1"
	case fd.IsMap():
		fs.MinProperties = "1"
	}
}

// noteOneofs says each oneof's rule in its members' descriptions. A oneof is a rule in the
// descriptions, which the runtime enforces (protojson refuses a second member): the keywords
// that could say it (oneOf, dependentSchemas with false subschemas) are rejected at the root
// by several model providers, skipped by many validators, and flagged by portability linters.
func (b *schemaBuilder) noteOneofs(s *Schema, md protoreflect.MessageDescriptor) {
	oneofs := md.Oneofs()
	for i := 0; i < oneofs.Len(); i++ {
		od := oneofs.Get(i)
		if od.IsSynthetic() || od.Fields().Len() < 2 {
			continue
		}
		names, note := b.oneofNote(od)
		for k := range s.Properties {
			if p := &s.Properties[k]; slices.Contains(names, p.Name) {
				p.Schema.Description = join(p.Schema.Description, note)
			}
		}
	}
}

// oneofNote is the JSON names of od's members and the rule that notes them: at most one, or
// on inputs exactly one when the oneof is required.
func (b *schemaBuilder) oneofNote(od protoreflect.OneofDescriptor) (names []string, note string) {
	for j := 0; j < od.Fields().Len(); j++ {
		names = append(names, od.Fields().Get(j).JSONName())
	}
	if b.dir == input && oneofRequired(od) {
		return names, fmt.Sprintf("Set exactly one of: %s.", strings.Join(names, ", "))
	}
	return names, fmt.Sprintf("Set at most one of: %s.", strings.Join(names, ", "))
}

// acceptsNull reports whether a field's schema already accepts null as a value:
// google.protobuf.Value and NullValue, where null is a value rather than "not set".
func acceptsNull(fd protoreflect.FieldDescriptor) bool {
	if fd.IsList() || fd.IsMap() {
		return false
	}
	if m := fd.Message(); m != nil {
		return m.FullName() == "google.protobuf.Value"
	}
	return fd.Enum() != nil && fd.Enum().FullName() == "google.protobuf.NullValue"
}

// nullable accepts null besides s, keeping s's annotations on the outside. It is spelled as
// anyOf with a typed branch each, not a type array, which single-type dialects cannot map.
func nullable(s *Schema) *Schema {
	inner := *s
	inner.Description, inner.Deprecated, inner.Examples, inner.Default = "", false, nil, nil
	return &Schema{
		Description: s.Description,
		Deprecated:  s.Deprecated,
		Default:     s.Default,
		AnyOf:       []*Schema{&inner, {Type: []string{"null"}}},
		Examples:    s.Examples,
	}
}

// field is one field's schema: its values, as an array for repeated fields or an object for
// maps, with the field's comment and options.
func (b *schemaBuilder) field(fd protoreflect.FieldDescriptor) *Schema {
	var s, elem *Schema
	doc := leadingComments(fd)
	switch {
	case fd.IsMap():
		elem = b.singular(fd.MapValue())
		s = &Schema{Type: []string{"object"}, Description: doc, AdditionalProperties: elem, PropertyNames: mapKeyNames(fd.MapKey())}
	case fd.IsList():
		elem = b.singular(fd)
		s = &Schema{Type: []string{"array"}, Description: doc, Items: elem}
	default:
		s = b.singular(fd)
		elem = s
		b.describeSingular(s, fd, doc)
	}
	opts, _ := fd.Options().(*descriptorpb.FieldOptions)
	s.Deprecated = opts.GetDeprecated()
	s.Default = defaultJSON(fd)
	if fo, ok := proto.GetExtension(opts, mcpv1.E_Field).(*mcpv1.FieldOptions); ok && fo != nil {
		b.fieldOptions(fd, fo, s, elem)
	}
	b.applyRules(fd, s, elem)
	return s
}

// fieldOptions writes a field's (mcp.v1.field) format onto its values' schema elem, and its
// examples, compacted, onto its schema s. Examples are checked against the schema once it is
// whole (checkValues); here only that they are JSON.
func (b *schemaBuilder) fieldOptions(fd protoreflect.FieldDescriptor, fo *mcpv1.FieldOptions, s, elem *Schema) {
	if f := fo.GetFormat(); f != "" {
		elem.Format = f
		if !knownFormats[f] {
			warnf("%s: (mcp.v1.field).format %q is not a format of the JSON Schema vocabulary: validators ignore it, and strict ones (Ajv) refuse the schema", fd.FullName(), f)
		}
	}
	for _, ex := range fo.GetExamples() {
		var buf bytes.Buffer
		if err := json.Compact(&buf, []byte(ex)); err != nil {
			b.fail(fd, "(mcp.v1.field).examples: %q is not valid JSON: %v", ex, err)
			continue
		}
		s.Examples = append(s.Examples, buf.Bytes())
	}
}

// knownFormats are the formats of the JSON Schema 2020-12 format vocabulary.
var knownFormats = map[string]bool{}

func init() {
	for _, f := range strings.Fields(`date-time date time duration email idn-email hostname
		idn-hostname ipv4 ipv6 uri uri-reference iri iri-reference uuid uri-template json-pointer
		relative-json-pointer regex`) {
		knownFormats[f] = true
	}
}

// warnf reports a generate-time warning: protoc and buf show a plugin's standard error.
var warnf = func(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "protoc-gen-mcp: warning: "+format+"\n", args...)
}

// defaultJSON is a proto2 or editions field's explicit default value in proto3 JSON form, or
// nil. A default protojson could not write as a plain JSON value of the field's input type
// (NaN, the infinities) is left out.
func defaultJSON(fd protoreflect.FieldDescriptor) json.RawMessage {
	if !fd.HasDefault() || fd.IsList() || fd.IsMap() {
		return nil
	}
	out := defaultValue(fd)
	if out == nil {
		return nil
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil
	}
	return b
}

// defaultValue is fd's default as encoding/json should write it in proto3 JSON form: enum
// values by name, bytes in Base64, 64-bit integers as strings; nil for a default that has no
// plain JSON form (NaN, the infinities).
func defaultValue(fd protoreflect.FieldDescriptor) any {
	v := fd.Default()
	switch fd.Kind() {
	case protoreflect.EnumKind:
		if ev := fd.DefaultEnumValue(); ev != nil {
			return string(ev.Name())
		}
		return nil
	case protoreflect.BytesKind:
		return base64.StdEncoding.EncodeToString(v.Bytes())
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return strconv.FormatInt(v.Int(), 10)
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return strconv.FormatUint(v.Uint(), 10)
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		if f := v.Float(); !math.IsNaN(f) && !math.IsInf(f, 0) {
			return f
		}
		return nil
	}
	return v.Interface()
}

// Ranges of the proto3 JSON numbers.
const (
	minInt32   = "-2147483648"
	maxInt32   = "2147483647"
	maxUint32  = "4294967295"
	maxInt64   = "9223372036854775807"
	maxUint64  = "18446744073709551615"
	maxFloat32 = "3.4028235e+38" // as protojson writes math.MaxFloat32
)

// singular is the schema of one value of fd's type.
//
// Inputs say what a model should send, each with one plain type: 64-bit integers as strings
// (protojson's own form, exact beyond 2^53), finite numbers only. Outputs accept everything
// protojson writes: "NaN" and the infinities, and enum numbers it does not know by name.
func (b *schemaBuilder) singular(fd protoreflect.FieldDescriptor) *Schema {
	switch fd.Kind() {
	case protoreflect.FloatKind:
		return b.number(&Schema{Type: []string{"number"}, Minimum: "-" + maxFloat32, Maximum: maxFloat32})
	case protoreflect.DoubleKind:
		return b.number(&Schema{Type: []string{"number"}})
	case protoreflect.EnumKind:
		return b.enum(fd.Enum())
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return b.message(fd.Message(), false)
	}
	if s := scalarSchema(fd.Kind()); s != nil {
		return s
	}
	b.fail(fd, "unsupported field kind %v", fd.Kind())
	return &Schema{}
}

// scalarSchema is the schema of a scalar whose JSON form is the same on inputs and outputs:
// booleans, integers (64-bit ones as decimal strings), strings and bytes; nil for other kinds.
func scalarSchema(k protoreflect.Kind) *Schema {
	switch k {
	case protoreflect.BoolKind:
		return &Schema{Type: []string{"boolean"}}
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return &Schema{Type: []string{"integer"}, Minimum: minInt32, Maximum: maxInt32}
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return &Schema{Type: []string{"integer"}, Minimum: "0", Maximum: maxUint32}
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return &Schema{Type: []string{"string"}, Pattern: int64Pattern}
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return &Schema{Type: []string{"string"}, Pattern: uint64Pattern}
	case protoreflect.StringKind:
		return &Schema{Type: []string{"string"}}
	case protoreflect.BytesKind:
		return &Schema{Type: []string{"string"}, ContentEncoding: "base64"}
	}
	return nil
}

// number is a float or double: finite numbers on inputs; on outputs also the strings
// protojson writes for NaN and the infinities.
func (b *schemaBuilder) number(finite *Schema) *Schema {
	if b.dir == input {
		return finite
	}
	return &Schema{AnyOf: []*Schema{finite, {Type: []string{"string"}, Enum: []string{"NaN", "Infinity", "-Infinity"}}}}
}

// enum is an enum as protojson writes it: a value name. Inputs leave out the zero value when
// it is the conventional X_UNSPECIFIED placeholder (protojson would still accept it, and
// numbers too, but a model should send a meaningful name). Outputs also accept a number:
// protojson writes the number of a value it has no name for (an open enum's unknown value).
func (b *schemaBuilder) enum(ed protoreflect.EnumDescriptor) *Schema {
	if ed.FullName() == "google.protobuf.NullValue" {
		return &Schema{Type: []string{"null"}}
	}
	names := &Schema{Type: []string{"string"}}
	for _, v := range enumValues(ed, b.dir) {
		names.Enum = append(names.Enum, string(v.Name()))
	}
	doc := join(leadingComments(ed), enumValuesDoc(ed, b.dir))
	if b.dir == input {
		names.Description = doc
		return names
	}
	return &Schema{Description: doc, AnyOf: []*Schema{names, {Type: []string{"integer"}, Minimum: minInt32, Maximum: maxInt32}}}
}

func enumValues(ed protoreflect.EnumDescriptor, dir direction) []protoreflect.EnumValueDescriptor {
	var vs []protoreflect.EnumValueDescriptor
	values := ed.Values()
	for i := 0; i < values.Len(); i++ {
		v := values.Get(i)
		if dir == input && v.Number() == 0 && fieldrules.PlaceholderZero(ed) {
			continue
		}
		vs = append(vs, v)
	}
	return vs
}

// enumValuesDoc lists an enum's values with their comments, when any value has one.
func enumValuesDoc(ed protoreflect.EnumDescriptor, dir direction) string {
	var lines []string
	commented := false
	for _, v := range enumValues(ed, dir) {
		doc := leadingComments(v)
		if doc == "" {
			lines = append(lines, "- "+string(v.Name()))
			continue
		}
		commented = true
		lines = append(lines, "- "+string(v.Name())+": "+strings.ReplaceAll(doc, "\n", " "))
	}
	if !commented {
		return ""
	}
	return strings.Join(lines, "\n")
}

// mapKeyNames constrains the object keys of a map with non-string keys to what protojson
// accepts: integers within the key type's range, or true and false.
func mapKeyNames(fd protoreflect.FieldDescriptor) *Schema {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return &Schema{Enum: []string{"true", "false"}}
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return &Schema{Pattern: int32Pattern}
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return &Schema{Pattern: uint32Pattern}
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return &Schema{Pattern: int64Pattern}
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return &Schema{Pattern: uint64Pattern}
	}
	return nil
}

// anyJSON accepts every JSON value, spelled with a type in each branch: a bare {} is the
// "untyped schema" that portability linters (MCP Inspector's among them) flag.
func anyJSON() *Schema {
	var branches []*Schema
	for _, t := range []string{"object", "array", "string", "number", "boolean", "null"} {
		branches = append(branches, &Schema{Type: []string{t}})
	}
	return &Schema{AnyOf: branches}
}

// isWellKnown reports whether md is a google.protobuf well-known type with a JSON form of its
// own.
func isWellKnown(md protoreflect.MessageDescriptor) bool {
	return wellKnownSchema(md, output) != nil
}

// wellKnownSchema is the JSON form of a google.protobuf well-known type, or nil for any other
// message. It returns a new schema on every call: callers add descriptions.
func wellKnownSchema(md protoreflect.MessageDescriptor, dir direction) *Schema {
	if md.ParentFile().Package() != "google.protobuf" {
		return nil
	}
	// Wrappers: the scalar's JSON form, that of their one field. An unset wrapper is left out
	// of results, and accepted as null in arguments like any field that is not required.
	if md.ParentFile().Path() == "google/protobuf/wrappers.proto" {
		b := &schemaBuilder{dir: dir}
		return b.singular(md.Fields().ByName("value"))
	}
	if form, ok := wellKnownForms[md.Name()]; ok {
		return form(dir)
	}
	return nil
}

// wellKnownForms makes the JSON form of each well-known type other than the wrappers, a new
// schema on every call.
var wellKnownForms = map[protoreflect.Name]func(direction) *Schema{
	"Timestamp": func(direction) *Schema {
		return &Schema{Type: []string{"string"}, Format: "date-time", Pattern: timestampPattern}
	},
	"Duration": func(direction) *Schema { return &Schema{Type: []string{"string"}, Pattern: durationPattern} },
	"FieldMask": func(direction) *Schema {
		return &Schema{Type: []string{"string"}, Description: "Comma-separated field paths in lowerCamelCase.", Pattern: fieldMaskPattern}
	},
	"Struct":    func(direction) *Schema { return &Schema{Type: []string{"object"}} },
	"Value":     func(direction) *Schema { return anyJSON() },
	"ListValue": func(direction) *Schema { return &Schema{Type: []string{"array"}} },
	"Empty":     func(direction) *Schema { return &Schema{Type: []string{"object"}, AdditionalProperties: falseSchema()} },
	"Any":       anySchema,
}

// anySchema is the JSON form of google.protobuf.Any: an object with an "@type", which inputs
// require (protojson writes {} for an empty Any).
func anySchema(dir direction) *Schema {
	s := &Schema{
		Type: []string{"object"},
		Properties: []Property{{"@type", &Schema{
			Type:        []string{"string"},
			Description: "The type URL of the packed message, e.g. type.googleapis.com/google.protobuf.Duration.",
		}}},
	}
	if dir == input {
		s.Required = []string{"@type"}
	}
	return s
}

// leadingComments is the cleaned leading comment of d, from its file's source info.
func leadingComments(d protoreflect.Descriptor) string {
	return cleanComment(d.ParentFile().SourceLocations().ByDescriptor(d).LeadingComments)
}

func join(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n\n" + b
}

// String writes s as indented JSON (two spaces), keywords in a fixed order.
func (s *Schema) String() string {
	var w strings.Builder
	s.write(&w, 0)
	return w.String()
}

func (s *Schema) write(w *strings.Builder, depth int) {
	if s.boolean != nil {
		fmt.Fprint(w, *s.boolean)
		return
	}
	if one, ok := s.oneLine(); ok {
		w.WriteString(one)
		return
	}
	s.writeMembers(w, depth)
}

// oneLine writes a small flat schema, such as an anyOf branch {"type": "null"}, on one line,
// which reads best; ok is false for other schemas.
func (s *Schema) oneLine() (one string, ok bool) {
	if !s.flat() {
		return "", false
	}
	var flat strings.Builder
	s.writeMembers(&flat, 0)
	lines := strings.Split(flat.String(), "\n")
	if len(lines) <= 2 {
		return "", false // {}
	}
	inner := lines[1 : len(lines)-1]
	for i := range inner {
		inner[i] = strings.TrimSpace(inner[i])
	}
	one = "{" + strings.Join(inner, " ") + "}"
	return one, len(one) <= 72 && !strings.Contains(one, "[ ")
}

// flat reports whether s has neither a description nor subschemas.
func (s *Schema) flat() bool {
	return s.Description == "" && !s.hasSubschemas()
}

// hasSubschemas reports whether s holds another schema: under a property, a definition, its
// items, its additional properties or property names, a branch, or not.
func (s *Schema) hasSubschemas() bool {
	return len(s.Properties) > 0 || len(s.PatternProperties) > 0 || len(s.Defs) > 0 ||
		s.Items != nil || s.AdditionalProperties != nil || s.PropertyNames != nil || len(s.AnyOf) > 0 || s.Not != nil
}

// writeMembers writes s as a JSON object, its keywords in the order of Schema's fields.
func (s *Schema) writeMembers(w *strings.Builder, depth int) {
	m := &members{w: w}
	m.str("$ref", s.Ref)
	switch len(s.Type) {
	case 0:
	case 1:
		m.str("type", s.Type[0])
	default:
		m.strs("type", s.Type)
	}
	m.str("description", s.Description)
	m.flag("deprecated", s.Deprecated)
	m.flag("readOnly", s.ReadOnly)
	m.raw("default", s.Default)
	m.str("format", s.Format)
	m.str("pattern", s.Pattern)
	m.str("contentEncoding", s.ContentEncoding)
	m.strs("enum", s.Enum)
	if len(s.Enum) == 0 && len(s.NumEnum) > 0 {
		m.raw("enum", []byte("["+strings.Join(s.NumEnum, ", ")+"]"))
	}
	m.raw("const", []byte(s.Const))
	m.raw("minimum", []byte(s.Minimum))
	m.raw("maximum", []byte(s.Maximum))
	m.raw("exclusiveMinimum", []byte(s.ExclusiveMinimum))
	m.raw("exclusiveMaximum", []byte(s.ExclusiveMaximum))
	m.raw("minLength", []byte(s.MinLength))
	m.raw("maxLength", []byte(s.MaxLength))
	m.sub("items", s.Items)
	m.raw("minItems", []byte(s.MinItems))
	m.raw("maxItems", []byte(s.MaxItems))
	m.flag("uniqueItems", s.UniqueItems)
	m.props("properties", s.Properties)
	m.props("patternProperties", s.PatternProperties)
	m.strs("required", s.Required)
	m.sub("additionalProperties", s.AdditionalProperties)
	m.raw("minProperties", []byte(s.MinProperties))
	m.raw("maxProperties", []byte(s.MaxProperties))
	m.sub("propertyNames", s.PropertyNames)
	if len(s.AnyOf) > 0 {
		m.add("anyOf", func(d int) { writeSchemas(w, s.AnyOf, d) })
	}
	m.sub("not", s.Not)
	if len(s.Examples) > 0 {
		m.add("examples", func(int) { writeValues(w, s.Examples) })
	}
	m.props("$defs", s.Defs)
	m.write(depth)
}

// members collects the keywords of one schema object, each with the function that writes its
// value, and writes them; empty values are left out.
type members struct {
	w  *strings.Builder
	ms []member
}

type member struct {
	key   string
	write func(depth int)
}

func (m *members) add(key string, write func(depth int)) {
	m.ms = append(m.ms, member{key, write})
}

func (m *members) str(key, v string) {
	if v != "" {
		m.add(key, func(int) { m.w.WriteString(quote(v)) })
	}
}

// raw adds a member whose value is JSON text already (a number, a default value).
func (m *members) raw(key string, v []byte) {
	if len(v) > 0 {
		m.add(key, func(int) { m.w.Write(v) })
	}
}

func (m *members) flag(key string, v bool) {
	if v {
		m.add(key, func(int) { m.w.WriteString("true") })
	}
}

func (m *members) sub(key string, v *Schema) {
	if v != nil {
		m.add(key, func(d int) { v.write(m.w, d) })
	}
}

func (m *members) props(key string, ps []Property) {
	if len(ps) > 0 {
		m.add(key, func(d int) { writeProperties(m.w, ps, d) })
	}
}

func (m *members) strs(key string, vs []string) {
	if len(vs) > 0 {
		m.add(key, func(d int) { writeStrings(m.w, vs, d) })
	}
}

// write writes the members as an object indented for depth, or {} when there are none.
func (m *members) write(depth int) {
	w := m.w
	if len(m.ms) == 0 {
		w.WriteString("{}")
		return
	}
	w.WriteString("{\n")
	for i, mb := range m.ms {
		indent(w, depth+1)
		w.WriteString(quote(mb.key))
		w.WriteString(": ")
		mb.write(depth + 1)
		if i < len(m.ms)-1 {
			w.WriteString(",")
		}
		w.WriteString("\n")
	}
	indent(w, depth)
	w.WriteString("}")
}

// writeValues writes JSON values (examples) as an array on one line.
func writeValues(w *strings.Builder, vs []json.RawMessage) {
	w.WriteString("[")
	for i, v := range vs {
		if i > 0 {
			w.WriteString(", ")
		}
		w.Write(v)
	}
	w.WriteString("]")
}

func writeSchemas(w *strings.Builder, ss []*Schema, depth int) {
	w.WriteString("[\n")
	for i, sc := range ss {
		indent(w, depth+1)
		sc.write(w, depth+1)
		if i < len(ss)-1 {
			w.WriteString(",")
		}
		w.WriteString("\n")
	}
	indent(w, depth)
	w.WriteString("]")
}

func writeProperties(w *strings.Builder, ps []Property, depth int) {
	w.WriteString("{\n")
	for i, p := range ps {
		indent(w, depth+1)
		w.WriteString(quote(p.Name))
		w.WriteString(": ")
		p.Schema.write(w, depth+1)
		if i < len(ps)-1 {
			w.WriteString(",")
		}
		w.WriteString("\n")
	}
	indent(w, depth)
	w.WriteString("}")
}

// writeStrings writes a string array on one line when it is short, one item a line otherwise.
func writeStrings(w *strings.Builder, vs []string, depth int) {
	quoted := make([]string, len(vs))
	width := 0
	for i, v := range vs {
		quoted[i] = quote(v)
		width += len(quoted[i]) + 2
	}
	if width <= 72 {
		w.WriteString("[" + strings.Join(quoted, ", ") + "]")
		return
	}
	w.WriteString("[\n")
	for i, q := range quoted {
		indent(w, depth+1)
		w.WriteString(q)
		if i < len(quoted)-1 {
			w.WriteString(",")
		}
		w.WriteString("\n")
	}
	indent(w, depth)
	w.WriteString("]")
}

func indent(w *strings.Builder, depth int) {
	for i := 0; i < depth; i++ {
		w.WriteString("  ")
	}
}

// quote is a JSON string literal without HTML escaping, so that <, > and & stay readable.
func quote(s string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(buf.String(), "\n")
}
