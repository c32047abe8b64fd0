package main

import (
	"regexp"
	"sort"
	"strings"
)

// The provider rules check a tool's name and input schema against what each model provider
// documents for tool (function) definitions. An MCP client hands a server's tools to the
// provider as they are, and a provider that refuses one tool's schema refuses the whole
// request, so one bad tool disables a server for that provider. Each rule says whether the
// provider refuses what it finds (the request fails) or whether it is only a hint.

// openAIName is OpenAI's function name rule: "Must be a-z, A-Z, 0-9, or contain underscores
// and dashes, with a maximum length of 64."
// https://platform.openai.com/docs/api-reference/chat/create#chat-create-tools (tools[].function.name).
// Refused: the request fails with 400 invalid_request_error.
var openAIName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func checkOpenAIToolName(s *surface) []Finding {
	return checkToolNames(s, openAIName, "OpenAI refuses other function names")
}

// checkOpenAIStrictRoot: in strict mode "the root level object must be an object, and not
// use anyOf" (Structured Outputs, Supported schemas:
// https://platform.openai.com/docs/guides/structured-outputs#supported-schemas, which
// function calling with "strict": true follows:
// https://platform.openai.com/docs/guides/function-calling#strict-mode). Refused.
func checkOpenAIStrictRoot(s *surface) []Finding {
	var out []Finding
	for _, t := range s.tools {
		if _, ok := t.in["anyOf"]; ok {
			out = append(out, toolFinding(t, "/anyOf", "the root schema is an anyOf: OpenAI strict mode refuses it; make the root an object"))
		}
		if ts := types(t.in); len(ts) != 1 || ts[0] != "object" {
			out = append(out, toolFinding(t, "/type", "the root schema's type is %q, not \"object\": OpenAI strict mode refuses it", strings.Join(ts, ",")))
		}
	}
	return out
}

// checkOpenAIStrictRequired: in strict mode "all fields must be required"; an optional field
// is emulated with a union with null (Structured Outputs, Supported schemas, "All fields must
// be required": https://platform.openai.com/docs/guides/structured-outputs#all-fields-must-be-required;
// function calling: https://platform.openai.com/docs/guides/function-calling#strict-mode).
// Refused in strict mode; without strict mode OpenAI accepts the schema and the model may
// leave optional fields out.
func checkOpenAIStrictRequired(s *surface) []Finding {
	return eachNode(s, func(t lintTool, n node) []Finding {
		props := properties(n.s)
		if len(props) == 0 {
			return nil
		}
		req := required(n.s)
		var missing []string
		for _, name := range sortedKeys(props) {
			if !req[name] {
				missing = append(missing, name)
			}
		}
		if len(missing) == 0 {
			return nil
		}
		return []Finding{toolFinding(t, n.path, "properties %s are not required: OpenAI strict mode requires every property (optional ones as a union with null)", strings.Join(missing, ", "))}
	})
}

// checkOpenAIStrictAdditionalProperties: in strict mode "additionalProperties: false must
// always be set in objects" (https://platform.openai.com/docs/guides/structured-outputs#additionalproperties-false-must-always-be-set-in-objects).
// Refused in strict mode. A proto map field, whose schema has additionalProperties set to
// its values' schema, cannot be expressed in strict mode at all.
func checkOpenAIStrictAdditionalProperties(s *surface) []Finding {
	return eachNode(s, func(t lintTool, n node) []Finding {
		if !isObjectType(n.s) {
			return nil
		}
		if ap, ok := n.s["additionalProperties"].(bool); ok && !ap {
			return nil
		}
		return []Finding{toolFinding(t, n.path, "the object does not set additionalProperties to false: OpenAI strict mode refuses it (a map field cannot be used in strict mode)")}
	})
}

// openAIUnsupported are the keywords OpenAI strict mode refuses. The Supported schemas
// section lists allOf, not, dependentRequired, dependentSchemas, if, then and else as "not
// yet supported" (https://platform.openai.com/docs/guides/structured-outputs#supported-schemas);
// oneOf is not among the supported keywords, and the API refuses it with "'oneOf' is not
// permitted" (https://community.openai.com/t/official-documentation-for-supported-schemas-for-response-format-parameter-in-calls-to-client-beta-chats-completions-parse/932422).
var openAIUnsupported = []string{"allOf", "dependentRequired", "dependentSchemas", "else", "if", "not", "oneOf", "then"}

func checkOpenAIStrictKeywords(s *surface) []Finding {
	return eachNode(s, func(t lintTool, n node) []Finding {
		var out []Finding
		for _, kw := range openAIUnsupported {
			if _, ok := n.s[kw]; ok {
				out = append(out, toolFinding(t, n.path+"/"+kw, "OpenAI strict mode does not support %s", kw))
			}
		}
		return out
	})
}

// openAIFormats are the string formats strict mode supports: "date-time, time, date,
// duration, email, hostname, ipv4, ipv6, uuid"
// (https://platform.openai.com/docs/guides/structured-outputs#supported-properties).
// Another format is refused in strict mode.
var openAIFormats = []string{"date", "date-time", "duration", "email", "hostname", "ipv4", "ipv6", "time", "uuid"}

func checkOpenAIStrictFormat(s *surface) []Finding {
	return eachNode(s, func(t lintTool, n node) []Finding {
		f, ok := n.s["format"].(string)
		if !ok || contains(openAIFormats, f) {
			return nil
		}
		return []Finding{toolFinding(t, n.path+"/format", "format %q is not one OpenAI strict mode supports (%s)", f, strings.Join(openAIFormats, ", "))}
	})
}

// The size limits of strict mode: "A schema may have up to 5000 object properties total,
// with up to 10 levels of nesting" and "up to 1000 enum values across all enum properties"
// (https://platform.openai.com/docs/guides/structured-outputs#objects-have-limitations-on-nesting-depth-and-size).
// Refused in strict mode.
const (
	openAIMaxDepth      = 10
	openAIMaxProperties = 5000
	openAIMaxEnumValues = 1000
)

func checkOpenAIStrictLimits(s *surface) []Finding {
	var out []Finding
	for _, t := range s.tools {
		depth, props, enums := 0, 0, 0
		deepest := ""
		walk(t.in, func(n node) {
			if n.depth > depth {
				depth, deepest = n.depth, n.path
			}
			props += len(properties(n.s))
			if e, ok := n.s["enum"].([]any); ok {
				enums += len(e)
			}
		})
		if depth > openAIMaxDepth {
			out = append(out, toolFinding(t, deepest, "objects nest %d levels deep: OpenAI strict mode allows %d", depth, openAIMaxDepth))
		}
		if props > openAIMaxProperties {
			out = append(out, toolFinding(t, "", "the schema has %d properties: OpenAI strict mode allows %d", props, openAIMaxProperties))
		}
		if enums > openAIMaxEnumValues {
			out = append(out, toolFinding(t, "", "the schema has %d enum values: OpenAI strict mode allows %d", enums, openAIMaxEnumValues))
		}
	}
	return out
}

// anthropicName is the tool name rule of the Messages API: a tool's name "must match the
// regex ^[a-zA-Z0-9_-]{1,64}$"
// (https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use#specifying-client-tools).
// Refused: the request fails with 400 invalid_request_error.
var anthropicName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func checkAnthropicToolName(s *surface) []Finding {
	return checkToolNames(s, anthropicName, "Anthropic refuses other tool names")
}

// checkAnthropicInputSchemaType: input_schema is a JSON Schema object whose top-level type
// is "object" (Messages API, tools[].input_schema, whose type field is required and
// "object": https://docs.anthropic.com/en/api/messages#body-tools; tool use:
// https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use#specifying-client-tools).
// Refused.
func checkAnthropicInputSchemaType(s *surface) []Finding {
	var out []Finding
	for _, t := range s.tools {
		if ts := types(t.in); len(ts) != 1 || ts[0] != "object" {
			out = append(out, toolFinding(t, "/type", "input_schema's top-level type is %q, not \"object\": Anthropic refuses it", strings.Join(ts, ",")))
		}
	}
	return out
}

// checkAnthropicTopLevelCombinator: the Messages API refuses a tool whose input_schema has
// anyOf, oneOf or allOf at the top level, failing the whole request with "input_schema does
// not support oneOf, allOf, or anyOf at the top level". Anthropic's tool use documentation
// does not state this limit; the API's error does
// (https://github.com/anthropics/claude-code/issues/5319, and the fix of an MCP server that
// met it: https://github.com/marianfoo/mcp-sap-docs/pull/51). Nested combinators are accepted.
// Refused.
func checkAnthropicTopLevelCombinator(s *surface) []Finding {
	var out []Finding
	for _, t := range s.tools {
		for _, kw := range []string{"allOf", "anyOf", "oneOf"} {
			if _, ok := t.in[kw]; ok {
				out = append(out, toolFinding(t, "/"+kw, "input_schema has %s at the top level: Anthropic refuses the request (\"input_schema does not support oneOf, allOf, or anyOf at the top level\")", kw))
			}
		}
	}
	return out
}

// geminiName is the function name rule of Gemini function declarations: "Must start with a
// letter or an underscore. Must be a-z, A-Z, 0-9, or contain underscores, dots and dashes,
// with a maximum length of 64" (Vertex AI:
// https://cloud.google.com/vertex-ai/docs/reference/rest/v1beta1/FunctionDeclaration; the
// Gemini API, https://ai.google.dev/api/caching#FunctionDeclaration, also allows colons; this
// is the rule both accept). Refused: the request fails with 400 INVALID_ARGUMENT.
var geminiName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_.-]{0,63}$`)

func checkGeminiToolName(s *surface) []Finding {
	return checkToolNames(s, geminiName, "Gemini refuses other function names")
}

// geminiParameterName is the rule of FunctionDeclaration.parameters: "Parameter names must
// start with a letter or an underscore and must only contain chars a-z, A-Z, 0-9, or
// underscores with a maximum length of 64"
// (https://cloud.google.com/vertex-ai/docs/reference/rest/v1beta1/FunctionDeclaration).
// Refused.
var geminiParameterName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]{0,63}$`)

func checkGeminiParameterName(s *surface) []Finding {
	var out []Finding
	for _, t := range s.tools {
		for _, name := range sortedKeys(properties(t.in)) {
			if !geminiParameterName.MatchString(name) {
				out = append(out, toolFinding(t, "/properties/"+escapePointer(name), "parameter name %q does not match %s: Gemini refuses it", name, geminiParameterName))
			}
		}
	}
	return out
}

// geminiSchemaFields are the fields of the Schema object of FunctionDeclaration.parameters,
// "a select subset of an OpenAPI 3.0 schema object", as the Gemini API documents it
// (https://ai.google.dev/api/caching#Schema). The API decodes parameters as that message,
// so a keyword outside it ($ref, $defs, additionalProperties, examples, const, oneOf,
// exclusiveMinimum...) is refused with 400 INVALID_ARGUMENT ("Invalid JSON payload received.
// Unknown name ..."), and type must be one value, not an array. The subset grows by API and
// version: Vertex AI's Schema (https://cloud.google.com/vertex-ai/docs/reference/rest/v1/Schema)
// has added additionalProperties, and ref and defs spelled without "$"; and
// FunctionDeclaration.parametersJsonSchema (https://ai.google.dev/api/caching#FunctionDeclaration)
// takes JSON Schema as it is. A client that sends MCP schemas there is not affected, hence
// the rule's default severity, warning.
var geminiSchemaFields = []string{
	"anyOf", "default", "description", "enum", "example", "format", "items", "maxItems",
	"maxLength", "maxProperties", "maximum", "minItems", "minLength", "minProperties",
	"minimum", "nullable", "pattern", "properties", "propertyOrdering", "required", "title",
	"type",
}

func checkGeminiOpenAPISubset(s *surface) []Finding {
	return eachNode(s, func(t lintTool, n node) []Finding {
		var bad []string
		for _, kw := range sortedKeys(n.s) {
			if !contains(geminiSchemaFields, kw) {
				bad = append(bad, kw)
			}
		}
		var out []Finding
		if len(bad) > 0 {
			sort.Strings(bad)
			out = append(out, toolFinding(t, n.path, "%s: outside the OpenAPI 3.0 subset of Gemini's FunctionDeclaration.parameters, which may refuse them (parametersJsonSchema accepts them)", strings.Join(bad, ", ")))
		}
		if _, isArray := n.s["type"].([]any); isArray {
			out = append(out, toolFinding(t, n.path+"/type", "type is an array: Gemini's parameters take one type (use nullable or anyOf)"))
		}
		return out
	})
}
