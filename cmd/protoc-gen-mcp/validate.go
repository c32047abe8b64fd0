package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
)

// buf.validate (protovalidate) rules in input schemas. Each rule with a JSON Schema keyword
// becomes that keyword (minimum, maxLength, pattern, format, enum, minItems, uniqueItems,
// minProperties, required, ...); the rules without one (CEL expressions, timestamps relative
// to now, byte lengths, 64-bit bounds on integers the schema carries as strings, ...) are
// stated in the field's description. protovalidate enforces all of them on the server, through
// runtime.ToolSpec.Validate, whatever a client's validator makes of the schema. Output schemas
// carry no rules: they describe what the server writes, which protovalidate does not check.

// fieldRules returns fd's buf.validate rules, or nil.
func fieldRules(fd protoreflect.FieldDescriptor) *validate.FieldRules {
	opts, _ := fd.Options().(*descriptorpb.FieldOptions)
	if opts == nil || !proto.HasExtension(opts, validate.E_Field) {
		return nil
	}
	r, _ := proto.GetExtension(opts, validate.E_Field).(*validate.FieldRules)
	return r
}

// validateRequired reports whether buf.validate requires fd: (buf.validate.field).required.
func validateRequired(fd protoreflect.FieldDescriptor) bool {
	return fieldRules(fd).GetRequired()
}

// oneofRequired reports whether (buf.validate.oneof).required is set: exactly one member.
func oneofRequired(od protoreflect.OneofDescriptor) bool {
	opts, _ := od.Options().(*descriptorpb.OneofOptions)
	if opts == nil || !proto.HasExtension(opts, validate.E_Oneof) {
		return false
	}
	r, _ := proto.GetExtension(opts, validate.E_Oneof).(*validate.OneofRules)
	return r.GetRequired()
}

// messageRuleNotes describes the rules of (buf.validate.message): CEL expressions and oneof
// rules that span several fields.
func messageRuleNotes(md protoreflect.MessageDescriptor) []string {
	opts, _ := md.Options().(*descriptorpb.MessageOptions)
	if opts == nil || !proto.HasExtension(opts, validate.E_Message) {
		return nil
	}
	r, _ := proto.GetExtension(opts, validate.E_Message).(*validate.MessageRules)
	notes := celNotes(r.GetCel(), r.GetCelExpression())
	for _, o := range r.GetOneof() {
		what := "at most one"
		if o.GetRequired() {
			what = "exactly one"
		}
		notes = append(notes, fmt.Sprintf("set %s of: %s", what, strings.Join(o.GetFields(), ", ")))
	}
	return notes
}

// celNotes describes CEL rules: each by its message, else its expression, then the bare
// expressions.
func celNotes(cel []*validate.Rule, exprs []string) []string {
	var notes []string
	for _, c := range cel {
		notes = append(notes, celNote(c))
	}
	for _, e := range exprs {
		notes = append(notes, "`"+e+"`")
	}
	return notes
}

// celNote describes one CEL rule: its message, else its expression.
func celNote(c *validate.Rule) string {
	if m := c.GetMessage(); m != "" {
		return m
	}
	return "`" + c.GetExpression() + "`"
}

// usesValidate reports whether md, or a message reachable from it, has buf.validate rules: the
// generated registration then validates the tool's arguments with protovalidate.
func usesValidate(md protoreflect.MessageDescriptor) bool {
	seen := map[protoreflect.FullName]bool{}
	var visit func(md protoreflect.MessageDescriptor) bool
	visit = func(md protoreflect.MessageDescriptor) bool {
		if seen[md.FullName()] {
			return false
		}
		seen[md.FullName()] = true
		if hasOwnRules(md) {
			return true
		}
		fields := md.Fields()
		for i := 0; i < fields.Len(); i++ {
			if m := fieldMessage(fields.Get(i)); m != nil && visit(m) {
				return true
			}
		}
		return false
	}
	return visit(md)
}

// hasOwnRules reports whether md itself has buf.validate rules: on the message, on one of its
// oneofs or on one of its fields.
func hasOwnRules(md protoreflect.MessageDescriptor) bool {
	if opts, _ := md.Options().(*descriptorpb.MessageOptions); opts != nil && proto.HasExtension(opts, validate.E_Message) {
		return true
	}
	return hasOneofRules(md) || hasFieldRules(md)
}

// hasOneofRules reports whether one of md's oneofs has (buf.validate.oneof) rules.
func hasOneofRules(md protoreflect.MessageDescriptor) bool {
	oneofs := md.Oneofs()
	for i := 0; i < oneofs.Len(); i++ {
		if opts, _ := oneofs.Get(i).Options().(*descriptorpb.OneofOptions); opts != nil && proto.HasExtension(opts, validate.E_Oneof) {
			return true
		}
	}
	return false
}

// hasFieldRules reports whether one of md's own fields has buf.validate rules.
func hasFieldRules(md protoreflect.MessageDescriptor) bool {
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		if fieldRules(fields.Get(i)) != nil {
			return true
		}
	}
	return false
}

// applyRules writes fd's buf.validate rules into its input schema: s is the field's schema,
// elem the schema of one value (s itself for a singular field).
func (b *schemaBuilder) applyRules(fd protoreflect.FieldDescriptor, s, elem *Schema) {
	rules := fieldRules(fd)
	if rules == nil || b.dir != input {
		return
	}
	notes := append(celNotes(rules.GetCel(), rules.GetCelExpression()), b.typedRules(fd, s, elem, typeRules(rules))...)
	if ed := fd.Enum(); ed != nil && !fd.IsMap() {
		// The rules may have narrowed the names: list only those in the descriptions.
		s.Description = dropEnumLines(s.Description, ed, elem.Enum)
		elem.Description = dropEnumLines(elem.Description, ed, elem.Enum)
	}
	if len(notes) > 0 {
		s.Description = join(s.Description, "Checked by the server: "+strings.Join(notes, "; ")+".")
	}
}

// typedRules writes the rules of fd's type (typed, nil when the field has none) into its
// schema s and elem, the schema of one value, by the field's shape: map, list or singular.
func (b *schemaBuilder) typedRules(fd protoreflect.FieldDescriptor, s, elem *Schema, typed protoreflect.Message) []string {
	switch {
	case typed == nil:
		return nil
	case fd.IsMap():
		return b.mapRules(fd, s, elem, typed)
	case fd.IsList():
		return b.listRules(fd, s, elem, typed)
	}
	return valueRules(fd, elem, typed)
}

// dropEnumLines removes from an enum's value list ("- NAME: comment" lines) the values of ed
// that are not in kept.
func dropEnumLines(doc string, ed protoreflect.EnumDescriptor, kept []string) string {
	keep := map[string]bool{}
	for _, k := range kept {
		keep[k] = true
	}
	lines := strings.Split(doc, "\n")
	out := lines[:0]
	for _, line := range lines {
		if rest, ok := strings.CutPrefix(line, "- "); ok {
			name, _, _ := strings.Cut(rest, ":")
			if ed.Values().ByName(protoreflect.Name(name)) != nil && !keep[name] {
				continue
			}
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// typeRules is the set member of FieldRules' type oneof (Int32Rules, StringRules, ...), or nil.
func typeRules(r *validate.FieldRules) protoreflect.Message {
	if r == nil {
		return nil
	}
	m := r.ProtoReflect()
	od := m.Descriptor().Oneofs().ByName("type")
	if od == nil {
		return nil
	}
	fd := m.WhichOneof(od)
	if fd == nil || fd.Message() == nil {
		return nil
	}
	return m.Get(fd).Message()
}

func (b *schemaBuilder) listRules(fd protoreflect.FieldDescriptor, s, elem *Schema, r protoreflect.Message) []string {
	var notes []string
	rule(r, "min_items", func(v protoreflect.Value) { s.MinItems = strconv.FormatUint(v.Uint(), 10) })
	rule(r, "max_items", func(v protoreflect.Value) { s.MaxItems = strconv.FormatUint(v.Uint(), 10) })
	rule(r, "unique", func(v protoreflect.Value) { s.UniqueItems = v.Bool() })
	rule(r, "items", func(v protoreflect.Value) {
		items, _ := v.Message().Interface().(*validate.FieldRules)
		notes = append(notes, prefixed("each item", valueRules(fd, elem, typeRules(items)))...)
	})
	return notes
}

func (b *schemaBuilder) mapRules(fd protoreflect.FieldDescriptor, s, elem *Schema, r protoreflect.Message) []string {
	var notes []string
	rule(r, "min_pairs", func(v protoreflect.Value) { s.MinProperties = strconv.FormatUint(v.Uint(), 10) })
	rule(r, "max_pairs", func(v protoreflect.Value) { s.MaxProperties = strconv.FormatUint(v.Uint(), 10) })
	rule(r, "keys", func(v protoreflect.Value) {
		keys, _ := v.Message().Interface().(*validate.FieldRules)
		if s.PropertyNames == nil {
			s.PropertyNames = &Schema{}
		}
		if fd.MapKey().Kind() == protoreflect.StringKind {
			s.PropertyNames.Type = []string{"string"}
		}
		notes = append(notes, prefixed("each key", valueRules(fd.MapKey(), s.PropertyNames, typeRules(keys)))...)
	})
	rule(r, "values", func(v protoreflect.Value) {
		values, _ := v.Message().Interface().(*validate.FieldRules)
		notes = append(notes, prefixed("each value", valueRules(fd.MapValue(), elem, typeRules(values)))...)
	})
	return notes
}

func prefixed(what string, notes []string) []string {
	for i, n := range notes {
		notes[i] = what + ": " + n
	}
	return notes
}

// rule calls f with the value of r's field name when it is set.
func rule(r protoreflect.Message, name protoreflect.Name, f func(protoreflect.Value)) {
	if r == nil {
		return
	}
	fd := r.Descriptor().Fields().ByName(name)
	if fd != nil && r.Has(fd) {
		f(r.Get(fd))
	}
}

// valueRules writes the rules of one value (a singular field, a list item, a map key or
// value) into t, returning notes for the rules that have no keyword.
func valueRules(fd protoreflect.FieldDescriptor, t *Schema, r protoreflect.Message) []string {
	if r == nil || t == nil {
		return nil
	}
	var notes []string
	kind := string(r.Descriptor().Name())
	switch kind {
	case "Int32Rules", "SInt32Rules", "SFixed32Rules", "UInt32Rules", "Fixed32Rules", "FloatRules", "DoubleRules":
		notes = append(notes, numberRules(t, r)...)
	case "Int64Rules", "SInt64Rules", "SFixed64Rules", "UInt64Rules", "Fixed64Rules":
		// 64-bit integers are strings in input schemas: their bounds have no keyword.
		notes = append(notes, describeRules(r)...)
	case "StringRules":
		notes = append(notes, stringRules(t, r)...)
	case "EnumRules":
		notes = append(notes, enumRules(fd, t, r)...)
	default:
		notes = append(notes, describeRules(r)...)
	}
	return notes
}

// numberRules maps bounds, const and in of a 32-bit or floating-point field.
func numberRules(t *Schema, r protoreflect.Message) []string {
	var notes []string
	num := numberText
	lo, hi := "", ""
	rule(r, "gt", func(v protoreflect.Value) { lo = num(v); t.ExclusiveMinimum, t.Minimum = lo, "" })
	rule(r, "gte", func(v protoreflect.Value) { lo = num(v); t.Minimum = lo })
	rule(r, "lt", func(v protoreflect.Value) { hi = num(v); t.ExclusiveMaximum, t.Maximum = hi, "" })
	rule(r, "lte", func(v protoreflect.Value) { hi = num(v); t.Maximum = hi })
	if lo != "" && hi != "" {
		l, _ := strconv.ParseFloat(lo, 64)
		h, _ := strconv.ParseFloat(hi, 64)
		if l > h {
			// An exclusive range: the value must lie outside [hi, lo]. No keyword says it
			// without anyOf at the field; the description does.
			t.Minimum, t.Maximum, t.ExclusiveMinimum, t.ExclusiveMaximum = "", "", "", ""
			notes = append(notes, fmt.Sprintf("outside the range %s to %s", hi, lo))
		}
	}
	rule(r, "const", func(v protoreflect.Value) { t.Const = num(v) })
	rule(r, "in", func(v protoreflect.Value) { t.NumEnum = append(t.NumEnum, listTexts(v, num)...) })
	rule(r, "not_in", func(v protoreflect.Value) { t.Not = &Schema{NumEnum: listTexts(v, num)} })
	rule(r, "finite", func(v protoreflect.Value) {
		if v.Bool() {
			notes = append(notes, "a finite number")
		}
	})
	return notes
}

// numberText writes a rule's number as JSON: floats in their shortest form.
func numberText(v protoreflect.Value) string {
	switch x := v.Interface().(type) {
	case float32:
		return strconv.FormatFloat(float64(x), 'g', -1, 32)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	return v.String()
}

// listTexts writes each value of a rule's list with text.
func listTexts(v protoreflect.Value, text func(protoreflect.Value) string) []string {
	var out []string
	for i := 0; i < v.List().Len(); i++ {
		out = append(out, text(v.List().Get(i)))
	}
	return out
}

// knownStringFormats maps StringRules' well-known formats to JSON Schema formats.
var knownStringFormats = map[protoreflect.Name]string{
	"email": "email", "hostname": "hostname", "ipv4": "ipv4", "ipv6": "ipv6", "uri": "uri",
	"uri_ref": "uri-reference", "uuid": "uuid",
}

func stringRules(t *Schema, r protoreflect.Message) []string {
	var notes []string
	count := func(v protoreflect.Value) string { return strconv.FormatUint(v.Uint(), 10) }
	rule(r, "len", func(v protoreflect.Value) { t.MinLength, t.MaxLength = count(v), count(v) })
	rule(r, "min_len", func(v protoreflect.Value) { t.MinLength = count(v) })
	rule(r, "max_len", func(v protoreflect.Value) { t.MaxLength = count(v) })
	rule(r, "pattern", func(v protoreflect.Value) {
		if t.Pattern == "" {
			t.Pattern = v.String()
		} else {
			notes = append(notes, "matches "+strconv.Quote(v.String()))
		}
	})
	rule(r, "const", func(v protoreflect.Value) { t.Const = quote(v.String()) })
	rule(r, "in", func(v protoreflect.Value) { t.Enum = append(t.Enum, listTexts(v, protoreflect.Value.String)...) })
	rule(r, "not_in", func(v protoreflect.Value) { t.Not = &Schema{Enum: listTexts(v, protoreflect.Value.String)} })
	for name, format := range knownStringFormats {
		rule(r, name, func(v protoreflect.Value) {
			if v.Bool() {
				t.Format = format
			}
		})
	}
	// The rest (prefix, suffix, contains, byte lengths, ip, address, ...) is described.
	handled := map[protoreflect.Name]bool{"len": true, "min_len": true, "max_len": true, "pattern": true, "const": true, "in": true, "not_in": true}
	for name := range knownStringFormats {
		handled[name] = true
	}
	notes = append(notes, describeRulesExcept(r, handled)...)
	return notes
}

// enumRules narrows the enum's names to in, without not_in, or to const; defined_only is what
// the schema says already (it lists the names).
func enumRules(fd protoreflect.FieldDescriptor, t *Schema, r protoreflect.Message) []string {
	ed := fd.Enum()
	if ed == nil {
		return nil
	}
	keep := func(pred func(n protoreflect.EnumNumber) bool) {
		var names []string
		for _, name := range t.Enum {
			if v := ed.Values().ByName(protoreflect.Name(name)); v != nil && pred(v.Number()) {
				names = append(names, name)
			}
		}
		t.Enum = names
	}
	numbers := func(v protoreflect.Value) map[protoreflect.EnumNumber]bool {
		set := map[protoreflect.EnumNumber]bool{}
		for i := 0; i < v.List().Len(); i++ {
			set[protoreflect.EnumNumber(v.List().Get(i).Int())] = true
		}
		return set
	}
	rule(r, "in", func(v protoreflect.Value) {
		set := numbers(v)
		keep(func(n protoreflect.EnumNumber) bool { return set[n] })
	})
	rule(r, "not_in", func(v protoreflect.Value) {
		set := numbers(v)
		keep(func(n protoreflect.EnumNumber) bool { return !set[n] })
	})
	rule(r, "const", func(v protoreflect.Value) {
		keep(func(n protoreflect.EnumNumber) bool { return n == protoreflect.EnumNumber(v.Int()) })
	})
	return nil
}

// describeRules states every set rule of r in words, for rules without a keyword.
func describeRules(r protoreflect.Message) []string {
	return describeRulesExcept(r, nil)
}

func describeRulesExcept(r protoreflect.Message, except map[protoreflect.Name]bool) []string {
	var notes []string
	names := map[protoreflect.Name]string{
		"gt": "greater than", "gte": "at least", "lt": "less than", "lte": "at most",
		"gt_now": "in the future", "lt_now": "in the past", "within": "within",
		"const": "equal to", "in": "one of", "not_in": "none of",
		"prefix": "starting with", "suffix": "ending with", "contains": "containing",
		"not_contains": "not containing", "min_bytes": "at least this many bytes:",
		"max_bytes": "at most this many bytes:", "len_bytes": "exactly this many bytes:",
	}
	r.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if except[fd.Name()] || fd.Name() == "example" {
			return true
		}
		what, ok := names[fd.Name()]
		if !ok {
			what = strings.ReplaceAll(string(fd.Name()), "_", " ")
		}
		switch {
		case fd.Kind() == protoreflect.BoolKind:
			if v.Bool() {
				notes = append(notes, what)
			}
		default:
			notes = append(notes, what+" "+ruleValueText(fd, v))
		}
		return true
	})
	return notes
}

// ruleValueText writes a rule's value as the proto3 JSON of its type would.
func ruleValueText(fd protoreflect.FieldDescriptor, v protoreflect.Value) string {
	switch {
	case fd.IsList():
		var parts []string
		for i := 0; i < v.List().Len(); i++ {
			parts = append(parts, scalarText(fd, v.List().Get(i)))
		}
		return strings.Join(parts, ", ")
	case fd.Message() != nil:
		b, err := protojson.Marshal(v.Message().Interface())
		if err != nil {
			return "?"
		}
		return strings.Trim(string(b), `"`)
	}
	return scalarText(fd, v)
}

func scalarText(fd protoreflect.FieldDescriptor, v protoreflect.Value) string {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return strconv.Quote(v.String())
	case protoreflect.BytesKind:
		return strconv.Quote(string(v.Bytes()))
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		if f := v.Float(); math.IsInf(f, 0) || math.IsNaN(f) {
			return fmt.Sprint(f)
		}
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	}
	return v.String()
}
