package main

import (
	"flag"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/pluginpb"

	"github.com/protomcp/protomcp/internal/manifest"
)

// runWithManifest runs the plugin in-process as main does, with the manifest parameter.
func runWithManifest(t *testing.T, param string, files ...string) map[string]string {
	t.Helper()
	req := &pluginpb.CodeGeneratorRequest{
		FileToGenerate: files,
		Parameter:      proto.String(param),
		ProtoFile:      image(t).GetFile(),
	}
	var flags flag.FlagSet
	run := withManifest(&flags, newConfig(&flags))
	gen, err := protogen.Options{ParamFunc: flags.Set}.New(req)
	require.NoError(t, err)
	require.NoError(t, run(gen))
	resp := gen.Response()
	require.Empty(t, resp.GetError())
	out := map[string]string{}
	for _, f := range resp.GetFile() {
		out[f.GetName()] = f.GetContent()
	}
	return out
}

func TestManifest(t *testing.T) {
	const name = "weather/v1/weatherv1mcp/weather.mcp.json"
	files := runWithManifest(t, "paths=source_relative,manifest=true", "weather/v1/weather.proto")
	require.Contains(t, files, name)
	require.Contains(t, files, "weather/v1/weatherv1mcp/weather.mcp.go")

	m, err := manifest.Unmarshal([]byte(files[name]))
	require.NoError(t, err)
	assert.Equal(t, "weather/v1/weather.proto", m.Source)
	assert.Equal(t, "weather.v1", m.Package)
	require.Len(t, m.Services, 1)
	assert.Equal(t, "weather.v1.WeatherService", m.Services[0].Name)

	var names []string
	for _, tl := range m.Tools {
		names = append(names, tl.Name)
	}
	assert.Equal(t, []string{"export_forecast", "forecast_chart", "get_climate_report", "get_forecast", "list_alerts"}, names, "tools sorted by name")

	byName := map[string]manifest.Tool{}
	for _, tl := range m.Tools {
		byName[tl.Name] = tl
	}
	chart := byName["forecast_chart"]
	assert.Equal(t, "weather.v1.WeatherService/RenderForecastChart", chart.RPC)
	assert.Empty(t, chart.OutputSchema, "an mcp.v1.ToolResult tool has no output schema")
	assert.JSONEq(t, weatherServiceRenderForecastChartInputSchema(t), string(chart.InputSchema))
	forecast := byName["get_forecast"]
	require.NotNil(t, forecast.Annotations)
	assert.Equal(t, proto.Bool(true), forecast.Annotations.ReadOnlyHint)
	assert.Equal(t, proto.Bool(true), forecast.Annotations.OpenWorldHint)
	assert.Nil(t, forecast.Annotations.DestructiveHint)
	assert.True(t, byName["export_forecast"].Streaming)

	require.Len(t, m.Prompts, 1)
	assert.Equal(t, "plan_trip", m.Prompts[0].Name)
	require.Len(t, m.Prompts[0].Arguments, 3)
	assert.True(t, m.Prompts[0].Arguments[0].Required)
	require.Len(t, m.Resources, 2)
	assert.Equal(t, "weather://about", m.Resources[0].URI)
	assert.Equal(t, "weather.v1.WeatherService", m.Resources[0].Service)
	assert.Equal(t, "weather://stations/{id}", m.Resources[1].URITemplate)
	assert.Equal(t, "weather.v1.WeatherService/GetStation", m.Resources[1].RPC)

	again := runWithManifest(t, "paths=source_relative,manifest=true", "weather/v1/weather.proto")
	assert.Equal(t, files[name], again[name], "the manifest is stable from run to run")
}

// weatherServiceRenderForecastChartInputSchema is the schema the generated code holds, from
// the plugin's own computation.
func weatherServiceRenderForecastChartInputSchema(t *testing.T) string {
	t.Helper()
	files := runWithManifest(t, "paths=source_relative", "weather/v1/weather.proto")
	for name := range files {
		assert.NotContains(t, name, ".mcp.json", "no manifest without manifest=true")
	}
	return `{
	  "type": "object",
	  "description": "The arguments of RenderForecastChart.",
	  "properties": {
	    "city": {"type": "string", "description": "The city to chart."},
	    "days": {
	      "description": "How many days to chart, 1 to 14. Defaults to 7.",
	      "anyOf": [{"type": "integer", "minimum": 1, "maximum": 14}, {"type": "null"}]
	    }
	  },
	  "required": ["city"],
	  "additionalProperties": false
	}`
}

func TestManifestNoServices(t *testing.T) {
	files := runWithManifest(t, "paths=source_relative,manifest=true", "google/api/field_behavior.proto")
	assert.Empty(t, files, "a file without services has no manifest")
}

func TestManifestServerOption(t *testing.T) {
	files := runWithManifest(t, "paths=source_relative,manifest=true", "test/server/v1/server.proto")
	const name = "test/server/v1/serverv1mcp/server.mcp.json"
	require.Contains(t, files, name)
	m, err := manifest.Unmarshal([]byte(files[name]))
	require.NoError(t, err)
	assert.Equal(t, &manifest.Server{
		Name: "io.github.protomcp/echo", Title: "Echo", Description: "Echoes what it is sent.",
		WebsiteURL: "https://example.com/echo", RepositoryURL: "https://github.com/protomcp/protomcp",
	}, m.Server)

	weather := runWithManifest(t, "paths=source_relative,manifest=true", "weather/v1/weather.proto")
	assert.NotContains(t, weather["weather/v1/weatherv1mcp/weather.mcp.json"], `"server"`, "no option, no server")
}
