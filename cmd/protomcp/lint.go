package main

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/protomcp/protomcp/internal/manifest"
)

// lintRule is one lint check. Rules whose Provider is set check what that model provider
// documents for tool definitions; the others check the MCP spec and what a model needs to
// use a tool well.
type lintRule struct {
	ID       string
	Provider string
	Severity Severity
	// Summary is one line for --list-rules and docs/contract.md.
	Summary string
	check   func(s *surface) []Finding
}

// surface is everything the linted manifests declare, as one server would serve it.
type surface struct {
	tools     []lintTool
	prompts   []lintItem[manifest.Prompt]
	resources []lintItem[manifest.Resource]
}

// lintTool is a tool with its decoded input schema.
type lintTool struct {
	file string
	manifest.Tool
	in schema
}

type lintItem[T any] struct {
	file string
	item T
}

func newSurface(ms []manifest.Loaded) (*surface, error) {
	s := &surface{}
	for _, m := range ms {
		for _, t := range m.Tools {
			in, err := decodeSchema(t.InputSchema)
			if err != nil {
				return nil, fmt.Errorf("%s: tool %s: input schema: %w", m.Path, t.Name, err)
			}
			s.tools = append(s.tools, lintTool{file: m.Path, Tool: t, in: in})
		}
		for _, p := range m.Prompts {
			s.prompts = append(s.prompts, lintItem[manifest.Prompt]{m.Path, p})
		}
		for _, r := range m.Resources {
			s.resources = append(s.resources, lintItem[manifest.Resource]{m.Path, r})
		}
	}
	return s, nil
}

// lintRules are every lint rule, general ones first, then by provider.
var lintRules = []lintRule{
	{
		ID: "TOOL_DESCRIPTION", Severity: SeverityError,
		Summary: "every tool has a description: it is what a model reads to choose the tool",
		check:   checkToolDescription,
	},
	{
		ID: "FIELD_DESCRIPTION", Severity: SeverityError,
		Summary: "every property of every tool's input schema, nested ones included, has a description",
		check:   checkFieldDescription,
	},
	{
		ID: "PROMPT_DESCRIPTION", Severity: SeverityWarning,
		Summary: "every prompt and prompt argument has a description",
		check:   checkPromptDescription,
	},
	{
		ID: "RESOURCE_DESCRIPTION", Severity: SeverityWarning,
		Summary: "every resource and resource template has a description",
		check:   checkResourceDescription,
	},
	{
		ID: "TOOL_NAME", Severity: SeverityError,
		Summary: "tool names are 1 to 128 characters of A-Z, a-z, 0-9, _, - and . (spec 2025-11-25, Server Features, Tools, Tool Names)",
		check:   checkSpecToolName,
	},
	{
		ID: "NAME_UNIQUE", Severity: SeverityError,
		Summary: "tool names, prompt names and resource URIs are unique across the manifests checked together (one server)",
		check:   checkNameUnique,
	},
	{
		ID: "OPENAI_TOOL_NAME", Provider: "openai", Severity: SeverityError,
		Summary: "function names match ^[a-zA-Z0-9_-]{1,64}$",
		check:   checkOpenAIToolName,
	},
	{
		ID: "OPENAI_STRICT_ROOT", Provider: "openai", Severity: SeverityError,
		Summary: "strict mode: the root schema is an object, not an anyOf",
		check:   checkOpenAIStrictRoot,
	},
	{
		ID: "OPENAI_STRICT_REQUIRED", Provider: "openai", Severity: SeverityError,
		Summary: "strict mode: every property of every object is in its required list (optional ones are nullable instead)",
		check:   checkOpenAIStrictRequired,
	},
	{
		ID: "OPENAI_STRICT_ADDITIONAL_PROPERTIES", Provider: "openai", Severity: SeverityError,
		Summary: "strict mode: every object sets additionalProperties to false",
		check:   checkOpenAIStrictAdditionalProperties,
	},
	{
		ID: "OPENAI_STRICT_KEYWORDS", Provider: "openai", Severity: SeverityError,
		Summary: "strict mode: no allOf, oneOf, not, if/then/else, dependentRequired or dependentSchemas",
		check:   checkOpenAIStrictKeywords,
	},
	{
		ID: "OPENAI_STRICT_FORMAT", Provider: "openai", Severity: SeverityError,
		Summary: "strict mode: string formats are date-time, time, date, duration, email, hostname, ipv4, ipv6 or uuid",
		check:   checkOpenAIStrictFormat,
	},
	{
		ID: "OPENAI_STRICT_LIMITS", Provider: "openai", Severity: SeverityError,
		Summary: "strict mode: at most 10 levels of object nesting, 5000 properties and 1000 enum values in a schema",
		check:   checkOpenAIStrictLimits,
	},
	{
		ID: "ANTHROPIC_TOOL_NAME", Provider: "anthropic", Severity: SeverityError,
		Summary: "tool names match ^[a-zA-Z0-9_-]{1,64}$",
		check:   checkAnthropicToolName,
	},
	{
		ID: "ANTHROPIC_INPUT_SCHEMA_TYPE", Provider: "anthropic", Severity: SeverityError,
		Summary: `input_schema has "type": "object" at the top level`,
		check:   checkAnthropicInputSchemaType,
	},
	{
		ID: "ANTHROPIC_TOP_LEVEL_COMBINATOR", Provider: "anthropic", Severity: SeverityError,
		Summary: "input_schema has no anyOf, oneOf or allOf at the top level",
		check:   checkAnthropicTopLevelCombinator,
	},
	{
		ID: "GEMINI_TOOL_NAME", Provider: "gemini", Severity: SeverityError,
		Summary: "function names start with a letter or _, then letters, digits, _, . or -, 64 characters at most",
		check:   checkGeminiToolName,
	},
	{
		ID: "GEMINI_PARAMETER_NAME", Provider: "gemini", Severity: SeverityError,
		Summary: "parameter names (top-level properties) start with a letter or _, then letters, digits or _, 64 characters at most",
		check:   checkGeminiParameterName,
	},
	{
		ID: "GEMINI_OPENAPI_SUBSET", Provider: "gemini", Severity: SeverityWarning,
		Summary: "keywords within the OpenAPI 3.0 subset of FunctionDeclaration.parameters (no $ref, $defs, additionalProperties, examples, type arrays...)",
		check:   checkGeminiOpenAPISubset,
	},
}

// providers are the provider names that rules check.
var providers = []string{"openai", "anthropic", "gemini"}

func lintRuleIDs() []string {
	ids := make([]string, len(lintRules))
	for i, r := range lintRules {
		ids[i] = r.ID
	}
	return ids
}

// lint runs the enabled rules (of the given providers; nil means all) on the manifests.
func lint(ms []manifest.Loaded, cfg *RuleConfig, only []string) ([]Finding, error) {
	s, err := newSurface(ms)
	if err != nil {
		return nil, err
	}
	var out []Finding
	for _, r := range lintRules {
		if !cfg.enabled(r.ID) {
			continue
		}
		if r.Provider != "" && only != nil && !contains(only, r.Provider) {
			continue
		}
		for _, f := range r.check(s) {
			f.Rule, f.Provider, f.Severity = r.ID, r.Provider, r.Severity
			out = append(out, f)
		}
	}
	out = cfg.apply(out)
	sortFindings(out)
	return out, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// toolFinding starts a finding about a tool.
func toolFinding(t lintTool, path, format string, args ...any) Finding {
	return Finding{File: t.file, Kind: "tool", Name: t.Name, Path: path, Message: fmt.Sprintf(format, args...)}
}

// eachNode runs check on every schema node of every tool's input.
func eachNode(s *surface, check func(t lintTool, n node) []Finding) []Finding {
	var out []Finding
	for _, t := range s.tools {
		walk(t.in, func(n node) { out = append(out, check(t, n)...) })
	}
	return out
}

func checkToolDescription(s *surface) []Finding {
	var out []Finding
	for _, t := range s.tools {
		if strings.TrimSpace(t.Description) == "" {
			out = append(out, toolFinding(t, "", "the tool has no description: write a leading comment on the rpc, or set (mcp.v1.tool).description"))
		}
	}
	return out
}

func checkFieldDescription(s *surface) []Finding {
	return eachNode(s, func(t lintTool, n node) []Finding {
		if n.property == "" || description(n.s) != "" {
			return nil
		}
		if target := resolveRef(t.in, n.s); target != nil && description(target) != "" {
			return nil
		}
		return []Finding{toolFinding(t, n.path, "property %q has no description: write a leading comment on the field", n.property)}
	})
}

// resolveRef returns the local definition a schema's $ref names ("#/$defs/X" or
// "#/definitions/X"), or nil.
func resolveRef(root, s schema) schema {
	ref, _ := s["$ref"].(string)
	for _, prefix := range []string{"#/$defs/", "#/definitions/"} {
		if name, ok := strings.CutPrefix(ref, prefix); ok {
			defs, _ := root[strings.TrimSuffix(strings.TrimPrefix(prefix, "#/"), "/")].(schema)
			def, _ := defs[name].(schema)
			return def
		}
	}
	return nil
}

func checkPromptDescription(s *surface) []Finding {
	var out []Finding
	for _, p := range s.prompts {
		f := Finding{File: p.file, Kind: "prompt", Name: p.item.Name}
		if strings.TrimSpace(p.item.Description) == "" {
			f.Message = "the prompt has no description: write a leading comment on the rpc, or set (mcp.v1.prompt).description"
			out = append(out, f)
		}
		for _, a := range p.item.Arguments {
			if strings.TrimSpace(a.Description) == "" {
				g := f
				g.Path = "arguments/" + a.Name
				g.Message = fmt.Sprintf("argument %q has no description: write a leading comment on the field", a.Name)
				out = append(out, g)
			}
		}
	}
	return out
}

func checkResourceDescription(s *surface) []Finding {
	var out []Finding
	for _, r := range s.resources {
		if strings.TrimSpace(r.item.Description) == "" {
			out = append(out, Finding{File: r.file, Kind: "resource", Name: r.item.Key(),
				Message: "the resource has no description: write a leading comment on the rpc, or set its description"})
		}
	}
	return out
}

// specToolName is the MCP spec's guidance on tool names: "between 1 and 128 characters in
// length (inclusive)", of "uppercase and lowercase ASCII letters (A-Z, a-z), digits (0-9),
// underscore (_), hyphen (-), and dot (.)" (spec 2025-11-25, Server Features, Tools, Tool
// Names).
var specToolName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

func checkSpecToolName(s *surface) []Finding {
	return checkToolNames(s, specToolName, "the MCP spec's tool names are 1 to 128 characters of A-Z, a-z, 0-9, _, - and .")
}

func checkToolNames(s *surface, re *regexp.Regexp, why string) []Finding {
	var out []Finding
	for _, t := range s.tools {
		if !re.MatchString(t.Name) {
			out = append(out, toolFinding(t, "", "tool name %q does not match %s: %s", t.Name, re, why))
		}
	}
	return out
}

func checkNameUnique(s *surface) []Finding {
	var out []Finding
	dup := func(kind, name string, files []string) {
		if len(files) < 2 {
			return
		}
		sort.Strings(files)
		for _, f := range files[1:] {
			out = append(out, Finding{File: f, Kind: kind, Name: name,
				Message: fmt.Sprintf("%s %q is also declared in %s: a server registers each name once", kind, name, files[0])})
		}
	}
	tools, prompts, resources := map[string][]string{}, map[string][]string{}, map[string][]string{}
	for _, t := range s.tools {
		tools[t.Name] = append(tools[t.Name], t.file)
	}
	for _, p := range s.prompts {
		prompts[p.item.Name] = append(prompts[p.item.Name], p.file)
	}
	for _, r := range s.resources {
		resources[r.item.Key()] = append(resources[r.item.Key()], r.file)
	}
	for _, kind := range []struct {
		name string
		m    map[string][]string
	}{{"tool", tools}, {"prompt", prompts}, {"resource", resources}} {
		for _, name := range sortedNames(kind.m) {
			dup(kind.name, name, kind.m[name])
		}
	}
	return out
}

func sortedNames(m map[string][]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
