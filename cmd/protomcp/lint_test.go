package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/protomcp/protomcp/internal/manifest"
)

// fixture is a manifest built in a test: a tool with the given name, description and input
// schema, or prompts and resources.
type fixture struct {
	tools     []manifest.Tool
	prompts   []manifest.Prompt
	resources []manifest.Resource
}

// tool is a tool fixture; schema is its input schema's JSON text.
func tool(name, description, schema string) manifest.Tool {
	return manifest.Tool{Name: name, RPC: "test.v1.TestService/" + name, Description: description, InputSchema: json.RawMessage(schema)}
}

// writeManifests writes each fixture as a manifest file in a new directory, through
// manifest.Marshal as the plugin does, and loads them back.
func writeManifests(t *testing.T, fs ...fixture) []manifest.Loaded {
	t.Helper()
	dir := t.TempDir()
	for i, f := range fs {
		m := &manifest.File{Source: "test.proto", Package: "test.v1", Tools: f.tools, Prompts: f.prompts, Resources: f.resources}
		b, err := manifest.Marshal(m)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, string(rune('a'+i))+manifest.Suffix), b, 0o644))
	}
	ms, err := manifest.Load(dir)
	require.NoError(t, err)
	return ms
}

// strictOK is an input schema every provider rule accepts: OpenAI's own strict-mode example
// (https://platform.openai.com/docs/guides/function-calling#strict-mode, get_weather), with
// descriptions.
const strictOK = `{
  "type": "object",
  "properties": {
    "location": {"type": "string", "description": "City and country e.g. Bogotá, Colombia"},
    "units": {"type": ["string", "null"], "enum": ["celsius", "fahrenheit"], "description": "Units the temperature will be returned in."}
  },
  "required": ["location", "units"],
  "additionalProperties": false
}`

// anthropicDocExample is the get_weather tool of Anthropic's tool use documentation
// (https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use): accepted
// by Anthropic; OpenAI accepts it too, but not in strict mode (unit is optional and
// additionalProperties is unset).
const anthropicDocExample = `{
  "type": "object",
  "properties": {
    "location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA"},
    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "description": "The unit of temperature, either 'celsius' or 'fahrenheit'"}
  },
  "required": ["location"]
}`

func TestLintRules(t *testing.T) {
	cases := []struct {
		rule      string
		bad, good fixture
		// badPath is where the bad fixture's finding points.
		badPath string
	}{
		{rule: "TOOL_DESCRIPTION",
			bad:  fixture{tools: []manifest.Tool{tool("t", "", strictOK)}},
			good: fixture{tools: []manifest.Tool{tool("t", "Gets the weather.", strictOK)}}},
		{rule: "FIELD_DESCRIPTION", badPath: "/properties/where/anyOf/0/properties/city",
			bad: fixture{tools: []manifest.Tool{tool("t", "d", `{"type":"object","properties":{"where":{"description":"Where.","anyOf":[
				{"type":"object","properties":{"city":{"type":"string"}}},{"type":"null"}]}}}`)}},
			good: fixture{tools: []manifest.Tool{tool("t", "d", `{"type":"object","properties":{
				"where":{"$ref":"#/$defs/Where"}},"$defs":{"Where":{"type":"object","description":"Where.",
				"properties":{"city":{"type":"string","description":"The city."}}}}}`)}}},
		{rule: "PROMPT_DESCRIPTION", badPath: "arguments/city",
			bad: fixture{prompts: []manifest.Prompt{{Name: "plan", Description: "Plans.",
				Arguments: []manifest.Argument{{Name: "city"}}}}},
			good: fixture{prompts: []manifest.Prompt{{Name: "plan", Description: "Plans.",
				Arguments: []manifest.Argument{{Name: "city", Description: "The city."}}}}}},
		{rule: "RESOURCE_DESCRIPTION",
			bad:  fixture{resources: []manifest.Resource{{Name: "about", URI: "x://about"}}},
			good: fixture{resources: []manifest.Resource{{Name: "about", URI: "x://about", Description: "About."}}}},
		{rule: "TOOL_NAME",
			bad:  fixture{tools: []manifest.Tool{tool("get weather", "d", strictOK)}},
			good: fixture{tools: []manifest.Tool{tool("admin.tools.list", "d", strictOK)}}},
		{rule: "OPENAI_TOOL_NAME",
			bad:  fixture{tools: []manifest.Tool{tool("admin.tools.list", "d", strictOK)}},
			good: fixture{tools: []manifest.Tool{tool("get_weather", "d", strictOK)}}},
		{rule: "OPENAI_STRICT_ROOT", badPath: "/anyOf",
			bad:  fixture{tools: []manifest.Tool{tool("t", "d", `{"type":"object","anyOf":[{"required":["a"]},{"required":["b"]}]}`)}},
			good: fixture{tools: []manifest.Tool{tool("t", "d", strictOK)}}},
		{rule: "OPENAI_STRICT_REQUIRED",
			bad:  fixture{tools: []manifest.Tool{tool("t", "d", anthropicDocExample)}},
			good: fixture{tools: []manifest.Tool{tool("t", "d", strictOK)}}},
		{rule: "OPENAI_STRICT_ADDITIONAL_PROPERTIES", badPath: "/properties/labels",
			bad: fixture{tools: []manifest.Tool{tool("t", "d", `{"type":"object","properties":{"labels":{"type":"object",
				"description":"A map.","additionalProperties":{"type":"string"}}},"required":["labels"],"additionalProperties":false}`)}},
			good: fixture{tools: []manifest.Tool{tool("t", "d", strictOK)}}},
		{rule: "OPENAI_STRICT_KEYWORDS", badPath: "/properties/a/allOf",
			bad:  fixture{tools: []manifest.Tool{tool("t", "d", `{"type":"object","properties":{"a":{"allOf":[{"type":"string"}]}}}`)}},
			good: fixture{tools: []manifest.Tool{tool("t", "d", `{"type":"object","properties":{"a":{"anyOf":[{"type":"string"},{"type":"null"}]}}}`)}}},
		{rule: "OPENAI_STRICT_FORMAT", badPath: "/properties/site/format",
			bad:  fixture{tools: []manifest.Tool{tool("t", "d", `{"type":"object","properties":{"site":{"type":"string","format":"uri"}}}`)}},
			good: fixture{tools: []manifest.Tool{tool("t", "d", `{"type":"object","properties":{"at":{"type":"string","format":"date-time"}}}`)}}},
		{rule: "OPENAI_STRICT_LIMITS",
			bad:  fixture{tools: []manifest.Tool{tool("t", "d", nested(11))}},
			good: fixture{tools: []manifest.Tool{tool("t", "d", nested(10))}}},
		{rule: "ANTHROPIC_TOOL_NAME",
			bad:  fixture{tools: []manifest.Tool{tool("admin.tools.list", "d", strictOK)}},
			good: fixture{tools: []manifest.Tool{tool("get_weather", "d", anthropicDocExample)}}},
		{rule: "ANTHROPIC_INPUT_SCHEMA_TYPE", badPath: "/type",
			bad:  fixture{tools: []manifest.Tool{tool("t", "d", `{"properties":{"a":{"type":"string"}}}`)}},
			good: fixture{tools: []manifest.Tool{tool("t", "d", anthropicDocExample)}}},
		// The schema that made Anthropic refuse every tool of a server: a top-level anyOf
		// expressing "one of these fields".
		{rule: "ANTHROPIC_TOP_LEVEL_COMBINATOR", badPath: "/anyOf",
			bad: fixture{tools: []manifest.Tool{tool("t", "d", `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},
				"anyOf":[{"required":["a"]},{"required":["b"]}]}`)}},
			good: fixture{tools: []manifest.Tool{tool("t", "d", `{"type":"object","properties":{"a":{"anyOf":[{"type":"string"},{"type":"null"}]}}}`)}}},
		{rule: "GEMINI_TOOL_NAME",
			bad:  fixture{tools: []manifest.Tool{tool("1st_tool", "d", strictOK)}},
			good: fixture{tools: []manifest.Tool{tool("admin.tools-list", "d", strictOK)}}},
		{rule: "GEMINI_PARAMETER_NAME", badPath: "/properties/user-id",
			bad:  fixture{tools: []manifest.Tool{tool("t", "d", `{"type":"object","properties":{"user-id":{"type":"string"}}}`)}},
			good: fixture{tools: []manifest.Tool{tool("t", "d", `{"type":"object","properties":{"userId":{"type":"string"}}}`)}}},
		// The Schema example of Gemini's function calling documentation is accepted; $ref is
		// not in its OpenAPI subset.
		{rule: "GEMINI_OPENAPI_SUBSET", badPath: "/properties/where",
			bad: fixture{tools: []manifest.Tool{tool("t", "d", `{"type":"object","properties":{"where":{"$ref":"#/$defs/W"}},
				"$defs":{"W":{"type":"string"}}}`)}},
			good: fixture{tools: []manifest.Tool{tool("t", "d", `{"type":"object","properties":{"param1":{"type":"string"},
				"param2":{"type":"integer","nullable":true}},"required":["param1"]}`)}}},
	}
	tested := map[string]bool{"NAME_UNIQUE": true} // TestLintNameUnique
	for _, c := range cases {
		tested[c.rule] = true
		t.Run(c.rule, func(t *testing.T) {
			cfg := &RuleConfig{Only: []string{c.rule}}
			bad, err := lint(writeManifests(t, c.bad), cfg, nil)
			require.NoError(t, err)
			require.NotEmpty(t, bad, "the rule fires on the bad case")
			for _, f := range bad {
				assert.Equal(t, c.rule, f.Rule)
				assert.NotEmpty(t, f.Message)
				assert.NotEmpty(t, f.Name)
			}
			if c.badPath != "" {
				var paths []string
				for _, f := range bad {
					paths = append(paths, f.Path)
				}
				assert.Contains(t, paths, c.badPath)
			}
			good, err := lint(writeManifests(t, c.good), cfg, nil)
			require.NoError(t, err)
			assert.Empty(t, good, "the rule is silent on the good case")
		})
	}
	for _, r := range lintRules {
		assert.True(t, tested[r.ID], "lint rule %s has no test case", r.ID)
	}
}

// nested is an input schema whose objects nest depth levels, every property required and
// closed, as OpenAI strict mode wants.
func nested(depth int) string {
	s := `{"type":"string","description":"leaf"}`
	for range depth {
		s = `{"type":"object","description":"level","properties":{"n":` + s + `},"required":["n"],"additionalProperties":false}`
	}
	return s
}

func TestLintNameUnique(t *testing.T) {
	a := fixture{tools: []manifest.Tool{tool("get", "d", strictOK)}, resources: []manifest.Resource{{URI: "x://a", Description: "d"}}}
	b := fixture{tools: []manifest.Tool{tool("get", "d", strictOK)}, resources: []manifest.Resource{{URI: "x://a", Description: "d"}}}
	c := fixture{tools: []manifest.Tool{tool("put", "d", strictOK)}, resources: []manifest.Resource{{URI: "x://c", Description: "d"}}}
	cfg := &RuleConfig{Only: []string{"NAME_UNIQUE"}}

	fs, err := lint(writeManifests(t, a, b), cfg, nil)
	require.NoError(t, err)
	require.Len(t, fs, 2)
	assert.Equal(t, "resource", fs[0].Kind)
	assert.Equal(t, "tool", fs[1].Kind)
	assert.Contains(t, fs[1].Message, "a.mcp.json", "names the other manifest")

	fs, err = lint(writeManifests(t, a, c), cfg, nil)
	require.NoError(t, err)
	assert.Empty(t, fs)
}

func TestLintProvidersAndConfig(t *testing.T) {
	ms := writeManifests(t, fixture{tools: []manifest.Tool{tool("admin.list", "", anthropicDocExample)}})

	all, err := lint(ms, &RuleConfig{}, nil)
	require.NoError(t, err)
	rules := map[string]bool{}
	for _, f := range all {
		rules[f.Rule] = true
	}
	assert.True(t, rules["TOOL_DESCRIPTION"])
	assert.True(t, rules["OPENAI_TOOL_NAME"])
	assert.True(t, rules["ANTHROPIC_TOOL_NAME"])
	assert.False(t, rules["GEMINI_TOOL_NAME"], "Gemini allows dots")

	only, err := lint(ms, &RuleConfig{}, []string{"anthropic"})
	require.NoError(t, err)
	for _, f := range only {
		assert.Contains(t, []string{"", "anthropic"}, f.Provider, "only general and anthropic rules: %s", f.Rule)
	}

	cfg := &RuleConfig{
		Except:   map[string]string{"OPENAI_TOOL_NAME": "no OpenAI client"},
		Severity: map[string]Severity{"TOOL_DESCRIPTION": SeverityWarning},
		Ignore:   map[string]Ignore{"ANTHROPIC_TOOL_NAME": {Names: []string{"admin.list"}, Reason: "renamed by the client"}},
	}
	require.NoError(t, cfg.check("lint", lintRuleIDs()))
	fs, err := lint(ms, cfg, nil)
	require.NoError(t, err)
	for _, f := range fs {
		assert.NotEqual(t, "OPENAI_TOOL_NAME", f.Rule)
		assert.NotEqual(t, "ANTHROPIC_TOOL_NAME", f.Rule)
		if f.Rule == "TOOL_DESCRIPTION" {
			assert.Equal(t, SeverityWarning, f.Severity)
		}
	}

	assert.Error(t, (&RuleConfig{Except: map[string]string{"NO_SUCH_RULE": "x"}}).check("lint", lintRuleIDs()))
	assert.Error(t, (&RuleConfig{Except: map[string]string{"TOOL_NAME": ""}}).check("lint", lintRuleIDs()), "a rule turned off needs a reason")
	assert.Error(t, (&RuleConfig{Severity: map[string]Severity{"TOOL_NAME": "fatal"}}).check("lint", lintRuleIDs()))
}

// Each provider's documented example is accepted by every rule of that provider, and the
// schema that made Anthropic, OpenAI and Bedrock refuse whole servers (a top-level anyOf, in
// the form Go JSON Schema generators emit for "one of these arguments") is refused.
func TestProviderDocumentedExamples(t *testing.T) {
	// Gemini's function calling example: "type: OBJECT properties: param1: type: STRING
	// param2: type: INTEGER required: - param1"
	// (https://cloud.google.com/vertex-ai/docs/reference/rest/v1beta1/FunctionDeclaration).
	const geminiDocExample = `{"type":"object","properties":{"param1":{"type":"string","description":"p1"},
		"param2":{"type":"integer","description":"p2"}},"required":["param1"]}`
	const topLevelAnyOf = `{"type":"object","properties":{"id":{"type":"string","description":"ID."},
		"name":{"type":"string","description":"Name."}},"additionalProperties":false,"required":["id","name"],
		"anyOf":[{"required":["id"]},{"required":["name"]}]}`
	for _, c := range []struct {
		provider string
		schema   string
		want     []string // the rules that fire; none for an accepted example
	}{
		{"openai", strictOK, nil},
		{"anthropic", anthropicDocExample, nil},
		{"gemini", geminiDocExample, nil},
		{"anthropic", topLevelAnyOf, []string{"ANTHROPIC_TOP_LEVEL_COMBINATOR"}},
		{"openai", topLevelAnyOf, []string{"OPENAI_STRICT_ROOT"}},
	} {
		ms := writeManifests(t, fixture{tools: []manifest.Tool{tool("get_weather", "Gets the weather.", c.schema)}})
		fs, err := lint(ms, &RuleConfig{}, []string{c.provider})
		require.NoError(t, err)
		var got []string
		for _, f := range fs {
			if f.Provider != "" {
				got = append(got, f.Rule)
			}
		}
		assert.Equal(t, c.want, got, "%s on %s", c.provider, c.schema)
	}
}
