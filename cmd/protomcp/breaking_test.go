package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/protomcp/protomcp/internal/manifest"
)

// forecastIn is a tool input schema in the form protoc-gen-mcp writes: an optional enum, an
// optional nested message, a required string.
const forecastIn = `{
  "type": "object",
  "properties": {
    "city": {"type": "string", "description": "The city."},
    "days": {"description": "Days.", "anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}]},
    "unit": {"description": "Unit.", "anyOf": [{"type": "string", "enum": ["CELSIUS", "FAHRENHEIT"]}, {"type": "null"}]},
    "at": {"description": "Where.", "anyOf": [{"type": "object", "properties": {
      "lat": {"type": "number", "description": "Latitude."}}, "additionalProperties": false}, {"type": "null"}]}
  },
  "required": ["city"],
  "additionalProperties": false
}`

const forecastOut = `{
  "type": "object",
  "properties": {
    "place": {"type": "string", "description": "The place."},
    "days": {"type": "array", "items": {"type": "object", "properties": {
      "high": {"type": "number", "description": "High."}}, "additionalProperties": false}}
  },
  "additionalProperties": false
}`

// forecast is the base tool the breaking cases change.
func forecast() manifest.Tool {
	return manifest.Tool{
		Name: "get_forecast", RPC: "weather.v1.WeatherService/GetForecast", Title: "Forecast",
		Description: "Returns the forecast.", Scopes: []string{"weather.read"},
		Annotations:  &manifest.Annotations{ReadOnlyHint: proto.Bool(true), OpenWorldHint: proto.Bool(false)},
		InputSchema:  json.RawMessage(forecastIn),
		OutputSchema: json.RawMessage(forecastOut),
	}
}

// edit returns the base tool changed by f.
func edit(f func(t *manifest.Tool)) manifest.Tool {
	t := forecast()
	f(&t)
	return t
}

// patchSchema replaces text in a schema, failing the test when it is not there.
func patchSchema(t *testing.T, s json.RawMessage, old, new string) json.RawMessage {
	t.Helper()
	out := replaceOnce(string(s), old, new)
	require.NotEqual(t, string(s), out, "patch %q not found", old)
	return json.RawMessage(out)
}

func replaceOnce(s, old, new string) string {
	for i := 0; i+len(old) <= len(s); i++ {
		if s[i:i+len(old)] == old {
			return s[:i] + new + s[i+len(old):]
		}
	}
	return s
}

func TestBreakingRules(t *testing.T) {
	base := fixture{
		tools:     []manifest.Tool{forecast()},
		prompts:   []manifest.Prompt{{Name: "plan", RPC: "w.S/Plan", Description: "Plans.", Arguments: []manifest.Argument{{Name: "city", Description: "c", Required: true}, {Name: "days", Description: "d"}}}},
		resources: []manifest.Resource{{Name: "station", URITemplate: "weather://stations/{id}", Description: "A station."}},
	}
	with := func(tools ...manifest.Tool) fixture {
		f := base
		f.tools = tools
		return f
	}
	cases := []struct {
		rule      string
		bad, good func(t *testing.T) fixture
		badPath   string
	}{
		{rule: "TOOL_REMOVED",
			bad: func(t *testing.T) fixture { return with() },
			good: func(t *testing.T) fixture {
				return with(forecast(), edit(func(x *manifest.Tool) { x.Name, x.RPC = "get_alerts", "w.S/GetAlerts" }))
			}},
		{rule: "TOOL_RENAMED",
			bad: func(t *testing.T) fixture { return with(edit(func(x *manifest.Tool) { x.Name = "forecast" })) },
			good: func(t *testing.T) fixture {
				return with(edit(func(x *manifest.Tool) { x.RPC = "weather.v2.WeatherService/GetForecast" }))
			}},
		{rule: "PROMPT_REMOVED",
			bad: func(t *testing.T) fixture { f := base; f.prompts = nil; return f },
			good: func(t *testing.T) fixture {
				f := base
				f.prompts = append([]manifest.Prompt{{Name: "other", Description: "d"}}, base.prompts...)
				return f
			}},
		{rule: "RESOURCE_REMOVED",
			bad: func(t *testing.T) fixture {
				f := base
				f.resources = []manifest.Resource{{Name: "station", URITemplate: "weather://station/{id}", Description: "A station."}}
				return f
			},
			good: func(t *testing.T) fixture {
				f := base
				f.resources = append(f.resources, manifest.Resource{Name: "about", URI: "weather://about", Description: "d"})
				return f
			}},
		{rule: "REQUIRED_INPUT_ADDED", badPath: "/properties/days",
			bad: func(t *testing.T) fixture {
				return with(edit(func(x *manifest.Tool) {
					x.InputSchema = patchSchema(t, x.InputSchema, `"required": ["city"]`, `"required": ["city", "days"]`)
				}))
			},
			good: func(t *testing.T) fixture {
				return with(edit(func(x *manifest.Tool) {
					x.InputSchema = patchSchema(t, x.InputSchema, `"city": {`, `"country": {"type": "string", "description": "Country."}, "city": {`)
				}))
			}},
		{rule: "REQUIRED_INPUT_ADDED", badPath: "arguments/days",
			bad: func(t *testing.T) fixture {
				f := base
				f.prompts = []manifest.Prompt{{Name: "plan", RPC: "w.S/Plan", Description: "Plans.", Arguments: []manifest.Argument{{Name: "city", Description: "c", Required: true}, {Name: "days", Description: "d", Required: true}}}}
				return f
			},
			good: func(t *testing.T) fixture {
				f := base
				f.prompts = []manifest.Prompt{{Name: "plan", RPC: "w.S/Plan", Description: "Plans.", Arguments: []manifest.Argument{{Name: "city", Description: "c"}, {Name: "days", Description: "d"}}}}
				return f
			}},
		{rule: "INPUT_PROPERTY_REMOVED", badPath: "/properties/at/properties/lat",
			bad: func(t *testing.T) fixture {
				return with(edit(func(x *manifest.Tool) {
					x.InputSchema = patchSchema(t, x.InputSchema, `"lat": {"type": "number", "description": "Latitude."}`, `"lng": {"type": "number", "description": "Longitude."}`)
				}))
			},
			good: func(t *testing.T) fixture {
				return with(edit(func(x *manifest.Tool) {
					x.InputSchema = patchSchema(t, x.InputSchema, `"additionalProperties": false}, {"type": "null"}`, `"additionalProperties": true}, {"type": "null"}`)
					x.InputSchema = patchSchema(t, x.InputSchema, `"lat": {"type": "number", "description": "Latitude."}`, `"lng": {"type": "number", "description": "Longitude."}`)
				}))
			}},
		{rule: "INPUT_TYPE_NARROWED", badPath: "/properties/days",
			bad: func(t *testing.T) fixture {
				return with(edit(func(x *manifest.Tool) {
					x.InputSchema = patchSchema(t, x.InputSchema, `[{"type": "integer", "minimum": 1}, {"type": "null"}]`, `[{"type": "integer", "minimum": 1}]`)
				}))
			},
			good: func(t *testing.T) fixture {
				return with(edit(func(x *manifest.Tool) {
					x.InputSchema = patchSchema(t, x.InputSchema, `{"type": "integer", "minimum": 1}`, `{"type": "number"}`)
				}))
			}},
		{rule: "INPUT_ENUM_NARROWED", badPath: "/properties/unit",
			bad: func(t *testing.T) fixture {
				return with(edit(func(x *manifest.Tool) {
					x.InputSchema = patchSchema(t, x.InputSchema, `["CELSIUS", "FAHRENHEIT"]`, `["CELSIUS"]`)
				}))
			},
			good: func(t *testing.T) fixture {
				return with(edit(func(x *manifest.Tool) {
					x.InputSchema = patchSchema(t, x.InputSchema, `["CELSIUS", "FAHRENHEIT"]`, `["CELSIUS", "FAHRENHEIT", "KELVIN"]`)
				}))
			}},
		{rule: "OUTPUT_FIELD_REMOVED", badPath: "outputSchema/properties/days/items/properties/high",
			bad: func(t *testing.T) fixture {
				return with(edit(func(x *manifest.Tool) {
					x.OutputSchema = patchSchema(t, x.OutputSchema, `"high": {"type": "number", "description": "High."}`, `"low": {"type": "number", "description": "Low."}`)
				}))
			},
			good: func(t *testing.T) fixture {
				return with(edit(func(x *manifest.Tool) {
					x.OutputSchema = patchSchema(t, x.OutputSchema, `"high": {`, `"low": {"type": "number", "description": "Low."}, "high": {`)
				}))
			}},
		{rule: "OUTPUT_FIELD_REMOVED", badPath: "outputSchema",
			bad:  func(t *testing.T) fixture { return with(edit(func(x *manifest.Tool) { x.OutputSchema = nil })) },
			good: func(t *testing.T) fixture { return with(forecast()) }},
		{rule: "OUTPUT_TYPE_CHANGED", badPath: "outputSchema/properties/place",
			bad: func(t *testing.T) fixture {
				return with(edit(func(x *manifest.Tool) {
					x.OutputSchema = patchSchema(t, x.OutputSchema, `"place": {"type": "string"`, `"place": {"type": ["string", "object"]`)
				}))
			},
			good: func(t *testing.T) fixture {
				return with(edit(func(x *manifest.Tool) {
					x.OutputSchema = patchSchema(t, x.OutputSchema, `"place": {"type": "string"`, `"place": {"type": "string", "maxLength": 80`)
				}))
			}},
		{rule: "ANNOTATION_RISK_WIDENED", badPath: "annotations",
			bad: func(t *testing.T) fixture {
				return with(edit(func(x *manifest.Tool) { x.Annotations = &manifest.Annotations{ReadOnlyHint: proto.Bool(false)} }))
			},
			good: func(t *testing.T) fixture {
				return with(edit(func(x *manifest.Tool) {
					x.Annotations = &manifest.Annotations{ReadOnlyHint: proto.Bool(true), IdempotentHint: proto.Bool(true), OpenWorldHint: proto.Bool(false)}
				}))
			}},
		{rule: "SCOPE_ADDED", badPath: "scopes",
			bad: func(t *testing.T) fixture {
				return with(edit(func(x *manifest.Tool) { x.Scopes = []string{"weather.read", "weather.admin"} }))
			},
			good: func(t *testing.T) fixture { return with(edit(func(x *manifest.Tool) { x.Scopes = nil })) }},
		{rule: "DESCRIPTION_CHANGED", badPath: "/properties/city",
			bad: func(t *testing.T) fixture {
				return with(edit(func(x *manifest.Tool) { x.InputSchema = patchSchema(t, x.InputSchema, `"The city."`, `"A city name."`) }))
			},
			good: func(t *testing.T) fixture { return with(edit(func(x *manifest.Tool) { x.Scopes = nil })) }},
	}
	tested := map[string]bool{}
	for _, c := range cases {
		tested[c.rule] = true
		t.Run(c.rule, func(t *testing.T) {
			cfg := &RuleConfig{Only: []string{c.rule}}
			old := writeManifests(t, base)
			bad, err := breaking(old, writeManifests(t, c.bad(t)), cfg)
			require.NoError(t, err)
			require.NotEmpty(t, bad, "the rule fires on the breaking change")
			var paths []string
			for _, f := range bad {
				assert.Equal(t, c.rule, f.Rule)
				assert.Equal(t, breakingRuleByID(c.rule).Severity, f.Severity)
				assert.NotEmpty(t, f.Message)
				paths = append(paths, f.Path)
			}
			if c.badPath != "" {
				assert.Contains(t, paths, c.badPath)
			}
			good, err := breaking(old, writeManifests(t, c.good(t)), cfg)
			require.NoError(t, err)
			assert.Empty(t, good, "the rule is silent on the compatible change")
		})
	}
	for _, r := range breakingRules {
		assert.True(t, tested[r.ID], "breaking rule %s has no test case", r.ID)
	}
}

func TestBreakingUnchanged(t *testing.T) {
	ms, err := manifest.Load("../../gen/weather")
	require.NoError(t, err)
	fs, err := breaking(ms, ms, &RuleConfig{})
	require.NoError(t, err)
	assert.Empty(t, fs, "a manifest compared with itself has no findings")
}

func TestRiskWidened(t *testing.T) {
	b := proto.Bool
	cases := []struct {
		old, new *manifest.Annotations
		want     string
	}{
		{nil, nil, ""},
		{&manifest.Annotations{ReadOnlyHint: b(true)}, nil, "no longer read-only, now destructive"},
		{&manifest.Annotations{DestructiveHint: b(false)}, &manifest.Annotations{}, "now destructive"},
		{&manifest.Annotations{DestructiveHint: b(false)}, &manifest.Annotations{ReadOnlyHint: b(true)}, ""},
		{&manifest.Annotations{IdempotentHint: b(true), OpenWorldHint: b(false)}, nil, "no longer idempotent, now open-world"},
		{nil, &manifest.Annotations{ReadOnlyHint: b(true), OpenWorldHint: b(false)}, ""},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, riskWidened(c.old, c.new), "%+v -> %+v", c.old, c.new)
	}
}
