package runtime

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/protomcp/protomcp/internal/fieldrules"
)

// The required-field contract. protoc-gen-mcp lists a field in an input schema's "required"
// when it is a proto2/editions required field, google.api.field_behavior = REQUIRED or
// (mcp.v1.field).required, at any depth (internal/fieldrules decides, for the generator and
// for this file alike). The server refuses arguments without such a field, naming its path
// (address.city), since protojson alone cannot tell an absent implicit-presence field from its
// zero value. A required repeated field or map needs at least one entry, and a required enum
// refuses the X_UNSPECIFIED placeholder. The typed client, in turn, always sends a required
// field that has implicit presence, its zero value included, so that what the schema requires
// is what goes on the wire; a required field with explicit presence (a message, optional, a
// oneof member) is sent only when it is set.

// requiredPlan is what the required-field contract needs to know about one message type.
type requiredPlan struct {
	required []protoreflect.FieldDescriptor // fields the schema requires
	children []protoreflect.FieldDescriptor // message fields whose types have rules below
	// fills reports whether a required implicit-presence field is reachable from here: the
	// client then re-reads protojson's output to add the zero values it left out.
	fills bool
}

func (p *requiredPlan) empty() bool { return len(p.required) == 0 && len(p.children) == 0 }

var requiredPlans sync.Map // protoreflect.FullName -> *requiredPlan

// planFor returns md's plan, computed once per message type.
func planFor(md protoreflect.MessageDescriptor) *requiredPlan {
	if p, ok := requiredPlans.Load(md.FullName()); ok {
		return p.(*requiredPlan)
	}
	// Every message type reachable from md, then the rules reachable from each, to a fixed
	// point: recursive types reach themselves.
	ps := planSet{plans: map[protoreflect.FullName]*requiredPlan{}, descs: map[protoreflect.FullName]protoreflect.MessageDescriptor{}}
	ps.collect(md)
	ps.addChildren(ps.propagate())
	for name, p := range ps.plans {
		requiredPlans.LoadOrStore(name, p)
	}
	p, _ := requiredPlans.Load(md.FullName())
	return p.(*requiredPlan)
}

// planSet is the plans of the message types reachable from one, while planFor makes them.
type planSet struct {
	plans map[protoreflect.FullName]*requiredPlan
	descs map[protoreflect.FullName]protoreflect.MessageDescriptor
}

// collect adds m and every message type reachable from it, each with its required fields.
func (ps *planSet) collect(m protoreflect.MessageDescriptor) {
	if _, ok := ps.plans[m.FullName()]; ok {
		return
	}
	p := &requiredPlan{}
	ps.plans[m.FullName()], ps.descs[m.FullName()] = p, m
	if m.ParentFile().Package() == "google.protobuf" {
		return // well-known types: their JSON forms have no required members
	}
	fields := m.Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if fieldrules.Required(fd) {
			p.required = append(p.required, fd)
			p.fills = p.fills || implicitScalar(fd)
		}
		if c := fieldMessage(fd); c != nil {
			ps.collect(c)
		}
	}
}

// messageFields calls fn with each message-typed field (map values included) of the type
// name, and the message type of its values; none for a well-known type.
func (ps *planSet) messageFields(name protoreflect.FullName, fn func(fd protoreflect.FieldDescriptor, c protoreflect.MessageDescriptor)) {
	md := ps.descs[name]
	if md.ParentFile().Package() == "google.protobuf" {
		return
	}
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		if c := fieldMessage(fields.Get(i)); c != nil {
			fn(fields.Get(i), c)
		}
	}
}

// propagate returns which types have rules at any depth, and marks the plans that reach a
// required implicit-presence field (fills), repeating until nothing changes.
func (ps *planSet) propagate() map[protoreflect.FullName]bool {
	rules := map[protoreflect.FullName]bool{}
	for name, p := range ps.plans {
		rules[name] = len(p.required) > 0
	}
	for changed := true; changed; {
		changed = false
		for name, p := range ps.plans {
			changed = ps.spread(name, p, rules) || changed
		}
	}
	return rules
}

// spread takes into name's entries, and p, its plan, what the types of its message fields
// have: rules at any depth, and fills; it reports whether either changed.
func (ps *planSet) spread(name protoreflect.FullName, p *requiredPlan, rules map[protoreflect.FullName]bool) (changed bool) {
	ps.messageFields(name, func(_ protoreflect.FieldDescriptor, c protoreflect.MessageDescriptor) {
		if rules[c.FullName()] && !rules[name] {
			rules[name], changed = true, true
		}
		if ps.plans[c.FullName()].fills && !p.fills {
			p.fills, changed = true, true
		}
	})
	return changed
}

// addChildren lists, in each plan, the message fields whose types have rules.
func (ps *planSet) addChildren(rules map[protoreflect.FullName]bool) {
	for name, p := range ps.plans {
		ps.messageFields(name, func(fd protoreflect.FieldDescriptor, c protoreflect.MessageDescriptor) {
			if rules[c.FullName()] {
				p.children = append(p.children, fd)
			}
		})
	}
}

// fieldMessage is the message type of a field's values (its map values, for a map), or nil.
func fieldMessage(fd protoreflect.FieldDescriptor) protoreflect.MessageDescriptor {
	if fd.IsMap() {
		fd = fd.MapValue()
	}
	return fd.Message()
}

// implicitScalar reports whether fd is a singular field without presence: protojson leaves it
// out when it holds its zero value.
func implicitScalar(fd protoreflect.FieldDescriptor) bool {
	return !fd.IsList() && !fd.IsMap() && !fd.HasPresence()
}

// checkRequiredPlan checks the arguments object of a tool against the required-field
// contract, with p, the plan of md (planFor), and returns one message per problem, each
// naming the field's path.
func checkRequiredPlan(p *requiredPlan, md protoreflect.MessageDescriptor, args json.RawMessage) []string {
	if p.empty() {
		return nil
	}
	var problems, missing []string
	checkObject(p, md, args, "", &missing, &problems)
	if len(missing) > 0 {
		problems = append([]string{"missing required field " + strings.Join(missing, ", ")}, problems...)
	}
	return problems
}

// checkObject checks raw, an object of type md, against p, its plan: its required fields,
// then the messages below that have rules. Problems name each field by its path, after path.
func checkObject(p *requiredPlan, md protoreflect.MessageDescriptor, raw json.RawMessage, path string, missing, problems *[]string) {
	var obj map[string]json.RawMessage
	if len(raw) > 0 && json.Unmarshal(raw, &obj) != nil {
		return // not an object: protojson has already reported it
	}
	checkRequired(p, obj, path, missing, problems)
	for _, fd := range p.children {
		if v, ok := memberOf(obj, fd); ok {
			checkChild(fd, v, path+fd.JSONName(), missing, problems)
		}
	}
}

// checkRequired adds to missing each required field of p that obj lacks, and to problems what
// is wrong with those it has.
func checkRequired(p *requiredPlan, obj map[string]json.RawMessage, path string, missing, problems *[]string) {
	for _, fd := range p.required {
		name := path + fd.JSONName()
		v, ok := memberOf(obj, fd)
		if !ok {
			*missing = append(*missing, strconv.Quote(name))
		} else if problem := requiredProblem(fd, v); problem != "" {
			*problems = append(*problems, fmt.Sprintf("required field %q %s", name, problem))
		}
	}
}

// memberOf returns the member of obj that holds fd, under either name protojson accepts; a
// null one is absent.
func memberOf(obj map[string]json.RawMessage, fd protoreflect.FieldDescriptor) (json.RawMessage, bool) {
	v, ok := obj[fd.JSONName()]
	if !ok {
		v, ok = obj[string(fd.Name())]
	}
	if ok && string(bytes.TrimSpace(v)) == "null" {
		return nil, false
	}
	return v, ok
}

// requiredProblem says what is wrong with v, the value of a required field that is present:
// an empty list or map, or an enum's placeholder for no value; "" when nothing is.
func requiredProblem(fd protoreflect.FieldDescriptor, v json.RawMessage) string {
	switch {
	case fd.IsList():
		if decodesEmpty[[]json.RawMessage](v) {
			return "must have at least one item"
		}
	case fd.IsMap():
		if decodesEmpty[map[string]json.RawMessage](v) {
			return "must have at least one entry"
		}
	case fd.Enum() != nil && fieldrules.PlaceholderZero(fd.Enum()):
		return placeholderProblem(fd.Enum(), v)
	}
	return ""
}

// decodesEmpty reports whether v decodes into an empty T: an array without items or an object
// without members.
func decodesEmpty[T ~[]json.RawMessage | ~map[string]json.RawMessage](v json.RawMessage) bool {
	var x T
	return json.Unmarshal(v, &x) == nil && len(x) == 0
}

// placeholderProblem refuses v, the value of a required field of enum ed, when it is ed's
// placeholder for no value (its zero), by name or by number.
func placeholderProblem(ed protoreflect.EnumDescriptor, v json.RawMessage) string {
	zero := ed.Values().ByNumber(0)
	var s string
	var n json.Number
	if (json.Unmarshal(v, &s) == nil && s == string(zero.Name())) ||
		(json.Unmarshal(v, &n) == nil && n.String() == "0") {
		return "must not be " + string(zero.Name()) + ", the placeholder for no value"
	}
	return ""
}

// checkChild checks the message (or the list items, or map values) that v, the value of the
// message field fd at path name, holds.
func checkChild(fd protoreflect.FieldDescriptor, v json.RawMessage, name string, missing, problems *[]string) {
	m := fieldMessage(fd)
	cp := planFor(m)
	switch {
	case fd.IsList():
		var items []json.RawMessage
		if json.Unmarshal(v, &items) != nil {
			return
		}
		for i, item := range items {
			checkObject(cp, m, item, name+"["+strconv.Itoa(i)+"].", missing, problems)
		}
	case fd.IsMap():
		var entries map[string]json.RawMessage
		if json.Unmarshal(v, &entries) != nil {
			return
		}
		for _, k := range sortedKeys(entries) {
			checkObject(cp, m, entries[k], name+"["+strconv.Quote(k)+"].", missing, problems)
		}
	default:
		checkObject(cp, m, v, name+".", missing, problems)
	}
}

// sortedKeys returns m's keys in order, so that errors list problems deterministically.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// marshalArgs encodes a typed client's request with protojson, adding the required
// implicit-presence fields that protojson leaves out when they hold their zero value.
func marshalArgs(req proto.Message) ([]byte, error) {
	b, err := argsMarshal.Marshal(req)
	if err != nil {
		return nil, err
	}
	m := req.ProtoReflect()
	p := planFor(m.Descriptor())
	if !p.fills {
		return b, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return nil, fmt.Errorf("re-read arguments: %w", err)
	}
	fillRequired(m, p, obj)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(obj); err != nil {
		return nil, fmt.Errorf("re-encode arguments: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// fillRequired adds to obj, protojson's output for m re-read, the zero values of m's required
// implicit-presence fields that protojson left out, and does the same in the messages below
// whose plans reach such a field.
func fillRequired(m protoreflect.Message, p *requiredPlan, obj map[string]any) {
	for _, fd := range p.required {
		if _, ok := obj[fd.JSONName()]; !ok && implicitScalar(fd) {
			obj[fd.JSONName()] = zeroJSON(fd)
		}
	}
	for _, fd := range p.children {
		if cp := planFor(fieldMessage(fd)); cp.fills && m.Has(fd) {
			fillChild(m, fd, cp, obj[fd.JSONName()])
		}
	}
}

// fillChild is fillRequired for the messages that v, the output of m's message field fd, holds:
// the field's message, each list item or each map value, each with cp, their plan.
func fillChild(m protoreflect.Message, fd protoreflect.FieldDescriptor, cp *requiredPlan, v any) {
	switch {
	case fd.IsList():
		items, _ := v.([]any)
		list := m.Get(fd).List()
		for i := 0; i < list.Len() && i < len(items); i++ {
			fillObject(list.Get(i).Message(), cp, items[i])
		}
	case fd.IsMap():
		entries, _ := v.(map[string]any)
		m.Get(fd).Map().Range(func(k protoreflect.MapKey, val protoreflect.Value) bool {
			fillObject(val.Message(), cp, entries[k.String()])
			return true
		})
	default:
		fillObject(m.Get(fd).Message(), cp, v)
	}
}

// fillObject is fillRequired for v when it is a JSON object.
func fillObject(m protoreflect.Message, p *requiredPlan, v any) {
	if o, ok := v.(map[string]any); ok {
		fillRequired(m, p, o)
	}
}

// zeroJSON is the proto3 JSON form of fd's zero value.
func zeroJSON(fd protoreflect.FieldDescriptor) any {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return false
	case protoreflect.StringKind, protoreflect.BytesKind:
		return ""
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind,
		protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return "0"
	case protoreflect.EnumKind:
		if v := fd.Enum().Values().ByNumber(0); v != nil {
			return string(v.Name())
		}
	}
	return json.Number("0")
}
