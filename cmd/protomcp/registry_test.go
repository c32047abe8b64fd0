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

const sha = "fe333e598595000ae021bd27117db32ec69af6987f507ba7a63c90638ff633ce"

// Every server.json registry writes validates against the registry's schema: the command
// validates before it prints, and the test validates what it printed again.
func TestRegistry(t *testing.T) {
	cases := []struct {
		name string
		args []string
		// check looks at the decoded server.json.
		check func(t *testing.T, s map[string]any)
	}{
		{"remote", []string{"--url", "https://weather.example.com/mcp", "--repository", "https://github.com/protomcp/protomcp", "--repository-subfolder", "examples/weather"},
			func(t *testing.T, s map[string]any) {
				remotes := s["remotes"].([]any)
				require.Len(t, remotes, 1)
				assert.Equal(t, map[string]any{"type": "streamable-http", "url": "https://weather.example.com/mcp"}, remotes[0])
				assert.Equal(t, "github", s["repository"].(map[string]any)["source"])
				assert.Equal(t, "WeatherService answers questions about the weather: forecasts, active alerts and charts.", s["description"], "the service's comment")
			}},
		{"oci", []string{"--oci", "ghcr.io/protomcp/weather:0.1.0", "--stdio-arg", "-stdio", "--title", "Weather"},
			func(t *testing.T, s map[string]any) {
				p := s["packages"].([]any)[0].(map[string]any)
				assert.Equal(t, "oci", p["registryType"])
				assert.Equal(t, map[string]any{"type": "stdio"}, p["transport"])
				assert.Equal(t, []any{map[string]any{"type": "positional", "value": "-stdio"}}, p["packageArguments"])
			}},
		{"mcpb", []string{"--mcpb", "https://github.com/protomcp/protomcp/releases/download/v0.1.0/weather.mcpb", "--mcpb-sha256", sha, "--description", "Forecasts and alerts."},
			func(t *testing.T, s map[string]any) {
				p := s["packages"].([]any)[0].(map[string]any)
				assert.Equal(t, "mcpb", p["registryType"])
				assert.Equal(t, sha, p["fileSha256"])
				assert.Equal(t, "Forecasts and alerts.", s["description"])
				meta := s["_meta"].(map[string]any)["io.modelcontextprotocol.registry/publisher-provided"].(map[string]any)
				assert.Equal(t, []any{"export_forecast", "forecast_chart", "get_climate_report", "get_forecast", "list_alerts"}, meta["tools"])
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"registry", "--name", "io.github.protomcp/weather", "--version", "0.1.0", "../../gen/weather"}, c.args...)
			status, out, errOut := runCmd(t, args...)
			require.Equal(t, 0, status, errOut)
			require.NoError(t, validateServerJSON([]byte(out)))
			var s map[string]any
			require.NoError(t, json.Unmarshal([]byte(out), &s))
			assert.Equal(t, serverSchemaURL, s["$schema"])
			assert.Equal(t, "io.github.protomcp/weather", s["name"])
			assert.Equal(t, "0.1.0", s["version"])
			c.check(t, s)
		})
	}
}

func TestRegistryRefuses(t *testing.T) {
	base := []string{"registry", "../../gen/weather"}
	for _, c := range []struct {
		name   string
		args   []string
		status int // 2 for the command's own checks, 1 when the registry's schema refuses the result
	}{
		{"no name", []string{"--version", "1", "--url", "https://x.example/mcp"}, 2},
		{"name without namespace", []string{"--name", "weather", "--version", "1", "--url", "https://x.example/mcp"}, 2},
		{"no version", []string{"--name", "io.github.o/w", "--url", "https://x.example/mcp"}, 2},
		{"nowhere to run", []string{"--name", "io.github.o/w", "--version", "1"}, 2},
		{"description too long", []string{"--name", "io.github.o/w", "--version", "1", "--url", "https://x.example/mcp",
			"--description", "A server that answers every question about the weather, with forecasts, alerts, charts and much more."}, 2},
		{"mcpb without hash", []string{"--name", "io.github.o/w", "--version", "1", "--mcpb", "https://github.com/o/w/releases/download/v1/w.mcpb"}, 2},
		// Caught by the registry's schema, not by the command's own checks.
		{"bad hash", []string{"--name", "io.github.o/w", "--version", "1", "--mcpb", "https://github.com/o/w/releases/download/v1/w.mcpb", "--mcpb-sha256", "abc"}, 1},
		{"remote not http", []string{"--name", "io.github.o/w", "--version", "1", "--url", "ftp://x.example/mcp"}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, out, errOut := runCmd(t, append(base, c.args...)...)
			assert.Equal(t, c.status, status)
			assert.Empty(t, out, "nothing invalid is printed")
			assert.NotEmpty(t, errOut)
		})
	}
}

// The schema copy rejects what the registry documents as invalid, and accepts its minimal
// example (docs/reference/server-json/examples of github.com/modelcontextprotocol/registry).
func TestServerSchema(t *testing.T) {
	assert.NoError(t, validateServerJSON([]byte(`{
	  "$schema": "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
	  "name": "io.github.example/minimal",
	  "description": "A minimal server.",
	  "version": "1.0.0"
	}`)))
	assert.Error(t, validateServerJSON([]byte(`{"description": "No name.", "version": "1.0.0"}`)))
	assert.Error(t, validateServerJSON([]byte(`{"name": "no-slash", "description": "d", "version": "1.0.0"}`)))
	assert.Error(t, validateServerJSON([]byte(`{"name": "io.github.e/p", "description": "d", "version": "1.0.0",
	  "packages": [{"registryType": "npm", "identifier": "p", "version": "latest", "transport": {"type": "stdio"}}]}`)))
}

// The proto's (mcp.v1.server) option fills what the flags leave out; files that disagree need
// the flag.
func TestRegistryFromProto(t *testing.T) {
	srv := func(name, desc string) *manifest.Server {
		return &manifest.Server{Name: name, Title: "Echo", Description: desc, RepositoryURL: "https://gitlab.com/o/echo"}
	}
	dir := t.TempDir()
	write := func(file string, s *manifest.Server) {
		b, err := manifest.Marshal(&manifest.File{Source: file, Package: "p", Server: s,
			Tools: []manifest.Tool{{Name: "echo_" + file[:1], RPC: "p.S/E", Description: "d", InputSchema: json.RawMessage(`{"type":"object"}`)}}})
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, file+manifest.Suffix), b, 0o644))
	}
	write("a", srv("io.gitlab.o/echo", "Echoes."))
	write("b", nil)

	status, out, errOut := runCmd(t, "registry", "--version", "1.0.0", "--url", "https://echo.example/mcp", dir)
	require.Equal(t, 0, status, errOut)
	var s map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &s))
	assert.Equal(t, "io.gitlab.o/echo", s["name"])
	assert.Equal(t, "Echo", s["title"])
	assert.Equal(t, "Echoes.", s["description"])
	assert.Equal(t, map[string]any{"url": "https://gitlab.com/o/echo", "source": "gitlab"}, s["repository"])

	status, out, errOut = runCmd(t, "registry", "--version", "1.0.0", "--url", "https://echo.example/mcp", "--name", "io.gitlab.o/other", dir)
	require.Equal(t, 0, status, errOut)
	assert.Contains(t, out, `"name": "io.gitlab.o/other"`, "the flag wins")

	write("b", srv("io.gitlab.o/echo", "Echoes, differently."))
	status, _, errOut = runCmd(t, "registry", "--version", "1.0.0", "--url", "https://echo.example/mcp", dir)
	assert.Equal(t, 2, status)
	assert.Contains(t, errOut, "set --description")
	status, _, errOut = runCmd(t, "registry", "--version", "1.0.0", "--url", "https://echo.example/mcp", "--description", "Echoes.", dir)
	assert.Equal(t, 0, status, errOut)
}
