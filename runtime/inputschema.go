package runtime

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// A raw tool (Server.AddTool) receives its arguments as JSON, so the runtime checks them
// against the tool's input schema before interceptors and the handler see them: the MCP spec
// has servers validate all tool inputs (Tools, Security Considerations) and report input
// validation errors as tool execution errors, results with isError set, that the model can
// read to correct its call (Tools, Error Handling). Typed tools get the same treatment from
// protojson and the checks of typedDecoder.
//
// A schema without "$schema" is JSON Schema 2020-12, the MCP default (Tools, Tool). Schemas
// are self-contained: a "$ref" resolves within the schema, never to a file or URL. "format" is
// an annotation, as in 2020-12, unless the schema's meta-schema asks for format assertion.

// Bounds of the text that reports invalid arguments of a raw tool: arguments are the model's
// input and may echo anything, so that the message stays small whatever they hold.
const (
	maxSchemaProblems   = 5   // problems listed, then "and N more"
	maxSchemaProblemLen = 200 // bytes of each problem's text
)

// compileInputSchema compiles a raw tool's input schema, as registered. It panics, like the
// other registration errors of AddTool, when the schema does not compile.
func compileInputSchema(tool string, schema json.RawMessage) *jsonschema.Schema {
	if string(schema) == `{"type":"object"}` {
		return nil // routeCallTool already refuses arguments that are not an object
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		panic(fmt.Sprintf("mcp: tool %q: input schema is not JSON: %v", tool, err))
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noSchemaLoader{})
	const loc = "mcp:///input-schema.json"
	if err := c.AddResource(loc, doc); err != nil {
		panic(fmt.Sprintf("mcp: tool %q: input schema: %v", tool, err))
	}
	s, err := c.Compile(loc)
	if err != nil {
		panic(fmt.Sprintf("mcp: tool %q: input schema does not compile: %v", tool, err))
	}
	return s
}

// noSchemaLoader refuses every external reference: a tool's schema must be self-contained
// (the compiler's default would read local files named by "$ref").
type noSchemaLoader struct{}

func (noSchemaLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("%s: a tool's input schema must be self-contained: references to other documents are not loaded", url)
}

// checkInputSchema validates a raw tool's arguments (nil or null: an empty object, as the
// handler sees no arguments) against its compiled input schema. It returns "" when they
// conform, else what is wrong, as "path: reason" problems.
func checkInputSchema(s *jsonschema.Schema, args json.RawMessage) string {
	if s == nil {
		return ""
	}
	inst, problem := schemaInstance(args)
	if problem != "" {
		return problem
	}
	err := s.Validate(inst)
	if err == nil {
		return ""
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return boundText(err.Error(), maxSchemaProblemLen)
	}
	return joinProblems(schemaProblems(inst, ve))
}

// schemaInstance decodes a raw tool's arguments for the validator: an empty object for nil or
// null; problem says why when they are not JSON.
func schemaInstance(args json.RawMessage) (inst any, problem string) {
	a := trimSpace(args)
	if len(a) == 0 || string(a) == "null" {
		return map[string]any{}, ""
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(a))
	if err != nil {
		return nil, "arguments are not valid JSON: " + err.Error()
	}
	return v, ""
}

// schemaProblems lists the broken keywords under ve as (path, reason) pairs, in a stable order
// (the validator walks maps): by path, the arguments object first.
func schemaProblems(inst any, ve *jsonschema.ValidationError) [][2]string {
	var leaves []*jsonschema.ValidationError
	schemaLeaves(ve, &leaves)
	problems := make([][2]string, len(leaves))
	for i, l := range leaves {
		problems[i] = [2]string{instancePath(inst, l.InstanceLocation), l.ErrorKind.LocalizedString(schemaPrinter)}
	}
	slices.SortFunc(problems, func(a, b [2]string) int {
		return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1]))
	})
	return problems
}

// joinProblems writes problems as "path: reason" joined by "; ", each bounded, at most
// maxSchemaProblems of them and a count of the rest.
func joinProblems(problems [][2]string) string {
	var b strings.Builder
	for i, p := range problems {
		if i == maxSchemaProblems {
			fmt.Fprintf(&b, "; and %d more", len(problems)-i)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		problem := p[1]
		if p[0] != "" {
			problem = p[0] + ": " + problem
		}
		b.WriteString(boundText(problem, maxSchemaProblemLen))
	}
	return b.String()
}

// schemaLeaves collects the errors with no causes: the broken keywords themselves, without
// the "doesn't validate with ..." groups above them.
func schemaLeaves(e *jsonschema.ValidationError, out *[]*jsonschema.ValidationError) {
	if len(e.Causes) == 0 {
		*out = append(*out, e)
		return
	}
	for _, c := range e.Causes {
		schemaLeaves(c, out)
	}
}

// schemaPrinter prints the schema errors, in English.
var schemaPrinter = message.NewPrinter(language.English)

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// instancePath writes an instance location in the style of typed tools' errors:
// "address.city", "items[2].name", `labels["a b"]`; "" for the arguments object itself.
func instancePath(inst any, loc []string) string {
	var b strings.Builder
	v := inst
	for _, tok := range loc {
		if _, isList := v.([]any); isList {
			b.WriteString("[" + tok + "]")
		} else {
			writeMemberName(&b, tok)
		}
		v = childValue(v, tok)
	}
	return b.String()
}

// writeMemberName writes an object member's name as a path step: .name after another step,
// name first, ["name"] when it is not an identifier.
func writeMemberName(b *strings.Builder, tok string) {
	switch {
	case !identRE.MatchString(tok):
		b.WriteString("[" + strconv.Quote(tok) + "]")
	case b.Len() > 0:
		b.WriteString("." + tok)
	default:
		b.WriteString(tok)
	}
}

// childValue is the item or member of v that tok, a step of an instance location, names; nil
// when there is none.
func childValue(v any, tok string) any {
	switch cur := v.(type) {
	case []any:
		if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(cur) {
			return cur[i]
		}
	case map[string]any:
		return cur[tok]
	}
	return nil
}

// boundText cuts s to at most n bytes, on a rune boundary, marking the cut with "...".
func boundText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - 3
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
