package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runCmd runs the command line and returns its exit status and output.
func runCmd(t *testing.T, args ...string) (status int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	status = run(args, &out, &errOut)
	return status, out.String(), errOut.String()
}

// emptyConfig is a configuration with every rule on.
func emptyConfig(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "protomcp.json")
	require.NoError(t, os.WriteFile(p, []byte(`{}`), 0o644))
	return p
}

// The weather example passes lint with the repository's configuration, and fails OpenAI's
// strict mode without it: its optional fields are not required.
func TestLintWeather(t *testing.T) {
	status, out, errOut := runCmd(t, "lint", "--config", "../../protomcp.json", "../../gen/weather")
	assert.Equal(t, 0, status, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.NotContains(t, out, "(error)")

	status, out, _ = runCmd(t, "lint", "../../gen/weather", "--config", emptyConfig(t), "--format", "json")
	assert.Equal(t, 1, status)
	var fs []Finding
	require.NoError(t, json.Unmarshal([]byte(out), &fs))
	require.NotEmpty(t, fs)
	for _, f := range fs {
		assert.Contains(t, []string{"OPENAI_STRICT_REQUIRED", "GEMINI_OPENAPI_SUBSET"}, f.Rule, "%+v", f)
	}

	status, out, _ = runCmd(t, "lint", "--config", emptyConfig(t), "--except", "OPENAI_STRICT_REQUIRED", "../../gen/weather")
	assert.Equal(t, 0, status, out)

	status, out, _ = runCmd(t, "lint", "--config", emptyConfig(t), "--provider", "anthropic,gemini", "../../gen/weather")
	assert.Equal(t, 0, status, out)
	assert.NotContains(t, out, "OPENAI")

	status, out, _ = runCmd(t, "lint", "--config", emptyConfig(t), "--only", "TOOL_DESCRIPTION,FIELD_DESCRIPTION", "--format", "json", "../../gen")
	assert.Equal(t, 0, status, out)
	assert.Equal(t, "[]\n", out, "every example tool and field is described")
}

func TestBreakingCommand(t *testing.T) {
	status, out, errOut := runCmd(t, "breaking", "../../gen/weather", "../../gen/weather")
	assert.Equal(t, 0, status, "%s%s", out, errOut)
	assert.Empty(t, out)

	// The weather example against the conformance one: every weather tool is gone.
	status, out, _ = runCmd(t, "breaking", "--old-name", "v1", "../../gen/weather", "../../gen/conformance")
	assert.Equal(t, 1, status)
	assert.Contains(t, out, "v1:../../gen/conformance/v1/weatherv1mcp/weather.mcp.json: tool get_forecast: TOOL_REMOVED (error)")
	assert.True(t, strings.HasSuffix(out, "error(s), 0 warning(s)\n"), out)
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"nope"},
		{"lint"},
		{"lint", "--format", "xml", "../../gen/weather"},
		{"lint", "--provider", "mistral", "../../gen/weather"},
		{"lint", "--except", "NO_SUCH_RULE", "../../gen/weather"},
		{"lint", "testdata"}, // a directory without manifests
		{"lint", "no/such/dir"},
		{"breaking", "../../gen/weather"},
		{"registry", "../../gen/weather"},
	} {
		status, _, errOut := runCmd(t, args...)
		assert.Equal(t, 2, status, "%q", args)
		assert.NotEmpty(t, errOut, "%q says why", args)
	}
	status, out, _ := runCmd(t, "rules")
	assert.Equal(t, 0, status)
	for _, r := range lintRules {
		assert.Contains(t, out, r.ID)
	}
	for _, r := range breakingRules {
		assert.Contains(t, out, r.ID)
	}
}
