package main

import (
	"bytes"
	"flag"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/pluginpb"
)

// runFiltered runs the plugin as runPlugin does, returning what it warned too.
func runFiltered(t *testing.T, param string, files ...string) (*pluginpb.CodeGeneratorResponse, string) {
	t.Helper()
	req := &pluginpb.CodeGeneratorRequest{FileToGenerate: files, Parameter: proto.String(param), ProtoFile: image(t).GetFile()}
	var flags flag.FlagSet
	cfg := newConfig(&flags)
	var warnings bytes.Buffer
	cfg.filter.out = &warnings
	gen, err := protogen.Options{ParamFunc: flags.Set}.New(req)
	if err != nil {
		return &pluginpb.CodeGeneratorResponse{Error: proto.String(err.Error())}, ""
	}
	if err := cfg.generate(gen); err != nil {
		gen.Error(err)
	}
	return gen.Response(), warnings.String()
}

// generated returns the content of the response's .mcp.go file.
func generated(resp *pluginpb.CodeGeneratorResponse) string {
	for _, f := range resp.GetFile() {
		if strings.HasSuffix(f.GetName(), ".mcp.go") {
			return f.GetContent()
		}
	}
	return ""
}

// TestFilters proves that include, exclude and read_only choose the rpcs that become tools
// without editing the proto, and tool_prefix names them.
func TestFilters(t *testing.T) {
	resp, _ := runFiltered(t, "paths=source_relative,read_only=true,tool_prefix=lib_", "test/surface/v1/surface.proto")
	require.Nil(t, resp.Error, resp.GetError())
	code := generated(resp)
	assert.NotContains(t, code, `"lib_find_books"`, "FindBooks is not read-only")
	assert.NotContains(t, code, "FindBooks(", "FindBooks is left out of the handler too")

	resp, _ = runFiltered(t, "paths=source_relative,include=*.GetForecast|*.ListAlerts,exclude=*.ListAlerts,tool_prefix=wx_", "weather/v1/weather.proto")
	require.Nil(t, resp.Error, resp.GetError())
	code = generated(resp)
	assert.Contains(t, code, `WeatherServiceGetForecastToolName = "wx_get_forecast"`)
	for _, gone := range []string{"ListAlerts", "ExportForecast", "PlanTrip", "GetStation", "RenderForecastChart"} {
		assert.NotContains(t, code, gone+"(", "%s is not included, or excluded", gone)
	}

	resp, _ = runFiltered(t, "paths=source_relative,include=[", "weather/v1/weather.proto")
	assert.Contains(t, resp.GetError(), "syntax error in pattern", "a bad pattern fails")
}

// TestWarnUndocumented proves that the plugin warns about an rpc and fields without a
// comment, and only about those.
func TestWarnUndocumented(t *testing.T) {
	resp, warnings := runFiltered(t, "paths=source_relative", "test/v1/types.proto")
	require.Nil(t, resp.Error, resp.GetError())
	_, documented := runFiltered(t, "paths=source_relative", "weather/v1/weather.proto")
	assert.Empty(t, documented, "the weather example documents every rpc and field")
	_, silenced := runFiltered(t, "paths=source_relative,warn_undocumented=false", "test/v1/types.proto")
	assert.Empty(t, silenced)
	require.NotEmpty(t, warnings, "types.proto has fields without a comment")
	for _, line := range strings.Split(strings.TrimSpace(warnings), "\n") {
		assert.True(t, strings.HasPrefix(line, "protoc-gen-mcp: warning: test/v1/types.proto: "), line)
		assert.Regexp(t, `has no comment`, line)
	}
}
