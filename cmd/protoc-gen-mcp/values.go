package main

import (
	"bytes"
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// fieldValues is a field whose schema carries values of its own (a default, examples), to be
// checked against that schema once the whole schema, $defs included, is built.
type fieldValues struct {
	fd     protoreflect.FieldDescriptor
	schema *Schema // the field's schema as written under its object's properties
}

// valuesURL names the schema being checked inside the validator; it is never fetched.
const valuesURL = "mem:///schema.json"

// checkValues validates every field's default and examples against the field's schema, as a
// strict JSON Schema 2020-12 validator reads it (formats and content encodings asserted): the
// whole root schema is compiled once and each field's subschema is reached by its JSON
// pointer, so that its $refs resolve as a client's would.
func checkValues(root *Schema, fields []fieldValues) error {
	if len(fields) == 0 {
		return nil
	}
	c, err := compiler(root)
	if err != nil {
		return err
	}
	at := map[*Schema]string{}
	root.locate("", at)
	for _, f := range fields {
		sch, err := f.compile(c, at)
		if err != nil {
			return err
		}
		if err := f.check(sch); err != nil {
			return err
		}
	}
	return nil
}

// compile compiles the field's subschema from c, which holds the root schema, by its JSON
// pointer in at.
func (f fieldValues) compile(c *jsonschema.Compiler, at map[*Schema]string) (*jsonschema.Schema, error) {
	ptr, ok := at[f.schema]
	if !ok {
		return nil, &schemaError{f.fd, "the field's schema is not part of the tool's schema"}
	}
	sch, err := c.Compile(valuesURL + "#" + ptr)
	if err != nil {
		return nil, &schemaError{f.fd, fmt.Sprintf("the generated schema does not compile: %v", err)}
	}
	return sch, nil
}

// check validates the field's default and examples against sch, its compiled schema.
func (f fieldValues) check(sch *jsonschema.Schema) error {
	if len(f.schema.Default) > 0 {
		if why := misfit(sch, f.schema.Default); why != "" {
			return &schemaError{f.fd, fmt.Sprintf("default %s does not fit the field: %s", f.schema.Default, why)}
		}
	}
	for _, ex := range f.schema.Examples {
		if why := misfit(sch, ex); why != "" {
			return &schemaError{f.fd, fmt.Sprintf("(mcp.v1.field).examples: %s does not fit the field: %s", ex, why)}
		}
	}
	return nil
}

// compiler is a JSON Schema 2020-12 compiler holding root at valuesURL, asserting formats and
// content encodings as a strict client does.
func compiler(root *Schema) (*jsonschema.Compiler, error) {
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(root.String()))
	if err != nil {
		return nil, fmt.Errorf("the generated schema is not JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.AssertContent()
	if err := c.AddResource(valuesURL, doc); err != nil {
		return nil, fmt.Errorf("loading the generated schema: %w", err)
	}
	return c, nil
}

// locate records the JSON pointer of s and of every subschema under it.
func (s *Schema) locate(ptr string, at map[*Schema]string) {
	if s == nil {
		return
	}
	if _, seen := at[s]; seen {
		return
	}
	at[s] = ptr
	s.Items.locate(ptr+"/items", at)
	s.AdditionalProperties.locate(ptr+"/additionalProperties", at)
	s.PropertyNames.locate(ptr+"/propertyNames", at)
	s.Not.locate(ptr+"/not", at)
	for i, sub := range s.AnyOf {
		sub.locate(ptr+"/anyOf/"+strconv.Itoa(i), at)
	}
	for key, ps := range map[string][]Property{"properties": s.Properties, "patternProperties": s.PatternProperties, "$defs": s.Defs} {
		for _, p := range ps {
			p.Schema.locate(ptr+"/"+key+"/"+pointerToken(p.Name), at)
		}
	}
}

// pointerToken escapes a name as a JSON pointer token (RFC 6901) inside a URI fragment.
func pointerToken(name string) string {
	return url.PathEscape(strings.ReplaceAll(strings.ReplaceAll(name, "~", "~0"), "/", "~1"))
}

// misfit validates a JSON value against sch and returns why it does not fit, or "".
func misfit(sch *jsonschema.Schema, value []byte) string {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(value))
	if err != nil {
		return err.Error()
	}
	err = sch.Validate(v)
	if err == nil {
		return ""
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	var whys []string
	for _, leaf := range failures(ve) {
		whys = append(whys, where(v, leaf.at)+leaf.rule)
	}
	slices.Sort(whys)
	return strings.Join(slices.Compact(whys), "; ")
}

// failure is one rule a value broke, where it broke it.
type failure struct {
	at   []string // the instance location: member names and item indexes
	rule string   // "keyword: what went wrong"
}

// failures are the rules at the leaves of a validation error. Of the branches of an anyOf,
// those that failed on the value's type alone are left out when another branch accepted the
// type: an optional field's null branch ("got string, want null") says nothing about why a
// string broke the string branch's pattern. When every branch failed on the type, they are
// one failure listing the types that would do.
func failures(e *jsonschema.ValidationError) []failure {
	if len(e.Causes) == 0 {
		return []failure{{e.InstanceLocation, ruleText(e)}}
	}
	causes := e.Causes
	if _, ok := e.ErrorKind.(*kind.AnyOf); ok {
		var typeFailure *failure
		if causes, typeFailure = anyOfCauses(e); typeFailure != nil {
			return []failure{*typeFailure}
		}
	}
	var out []failure
	for _, c := range causes {
		out = append(out, failures(c)...)
	}
	return out
}

// anyOfCauses is the branches of e, an anyOf, that failed on more than the value's type; when
// every branch failed on the type alone, it is none, and typeFailure lists the types that
// would do.
func anyOfCauses(e *jsonschema.ValidationError) (typed []*jsonschema.ValidationError, typeFailure *failure) {
	var wants []string
	got := ""
	for _, c := range e.Causes {
		if t := typeOnly(c, len(e.InstanceLocation)); t != nil {
			got, wants = t.Got, append(wants, t.Want...)
			continue
		}
		typed = append(typed, c)
	}
	if len(typed) > 0 {
		return typed, nil
	}
	return nil, &failure{e.InstanceLocation, fmt.Sprintf("type: got %s, want %s", got, strings.Join(wants, " or "))}
}

// typeOnly is the type mismatch of the value itself (not of an item or member inside it) that
// is a branch's only failure, or nil.
func typeOnly(e *jsonschema.ValidationError, depth int) *kind.Type {
	for len(e.Causes) == 1 {
		e = e.Causes[0]
	}
	if t, ok := e.ErrorKind.(*kind.Type); ok && len(e.Causes) == 0 && len(e.InstanceLocation) == depth {
		return t
	}
	return nil
}

// english prints the validator's messages.
var english = message.NewPrinter(language.English)

// ruleText names the keyword a value broke and says how it broke it.
func ruleText(e *jsonschema.ValidationError) string {
	msg := ruleMessage(e)
	path := e.ErrorKind.KeywordPath()
	if len(path) == 0 {
		return msg
	}
	keyword := path[len(path)-1]
	if strings.HasPrefix(msg, keyword+":") {
		return msg
	}
	return keyword + ": " + msg
}

// ruleMessage says how a value broke a rule: bounds as plain JSON numbers and the plugin's own
// patterns in words, where the validator's messages are hard to read; otherwise its message.
func ruleMessage(e *jsonschema.ValidationError) string {
	msg := e.ErrorKind.LocalizedString(english)
	switch k := e.ErrorKind.(type) {
	case *kind.Minimum:
		msg = bound("minimum", k.Got, k.Want)
	case *kind.Maximum:
		msg = bound("maximum", k.Got, k.Want)
	case *kind.ExclusiveMinimum:
		msg = bound("exclusiveMinimum", k.Got, k.Want)
	case *kind.ExclusiveMaximum:
		msg = bound("exclusiveMaximum", k.Got, k.Want)
	case *kind.Pattern:
		if what := patternMeaning[k.Want]; what != "" {
			msg = fmt.Sprintf("pattern: %s is not %s", quote(k.Got), what)
		}
	}
	return msg
}

// patternMeaning says in words what the plugin's own patterns match, which are too long to
// quote in an error.
var patternMeaning = map[string]string{
	int32Pattern:     "a 32-bit integer",
	uint32Pattern:    "an unsigned 32-bit integer",
	int64Pattern:     "a 64-bit integer in decimal (protojson writes 64-bit integers as strings)",
	uint64Pattern:    "an unsigned 64-bit integer in decimal (protojson writes 64-bit integers as strings)",
	durationPattern:  `a duration in seconds, such as "1.5s" (protojson's form of google.protobuf.Duration)`,
	timestampPattern: `an RFC 3339 time, such as "2026-12-01T18:00:00Z" (protojson's form of google.protobuf.Timestamp)`,
	fieldMaskPattern: `comma-separated lowerCamelCase field paths, such as "name,address.city" (protojson's form of google.protobuf.FieldMask)`,
}

// bound says how a number broke a bound, both written as JSON numbers: the validator's own
// message writes them in scientific notation with superscripts.
func bound(keyword string, got, want *big.Rat) string {
	return fmt.Sprintf("%s: got %s, want %s", keyword, number(got), number(want))
}

// number writes integers of up to 20 digits (every 64-bit integer) in full, others as Go's
// shortest float form.
func number(r *big.Rat) string {
	if n := r.Num().String(); r.IsInt() && len(n) <= 20 {
		return n
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// where names a place inside a value, "item 2: city: ", from its instance location.
func where(v any, loc []string) string {
	var b strings.Builder
	for _, tok := range loc {
		switch x := v.(type) {
		case []any:
			i, _ := strconv.Atoi(tok)
			fmt.Fprintf(&b, "item %d: ", i)
			if i >= 0 && i < len(x) {
				v = x[i]
			}
		case map[string]any:
			fmt.Fprintf(&b, "%s: ", tok)
			v = x[tok]
		}
	}
	return b.String()
}
