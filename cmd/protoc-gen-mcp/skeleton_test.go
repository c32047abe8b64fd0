package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/protomcp/protomcp/runtime"
)

// The skeleton of the weather service compiles as it is written, and serves every rpc over
// stdio, each stub answering with its TODO.
func TestSkeletonCompilesAndServes(t *testing.T) {
	resp := runPlugin(t, "paths=source_relative,skeleton=true", "weather/v1/weather.proto")
	require.Nil(t, resp.Error, resp.GetError())
	var skeleton string
	for _, f := range resp.File {
		if strings.HasSuffix(f.GetName(), ".skeleton.go.txt") {
			skeleton = f.GetContent()
		}
	}
	require.NotEmpty(t, skeleton, "no .skeleton.go.txt generated")
	assert.Len(t, runPlugin(t, "paths=source_relative", "weather/v1/weather.proto").File, 1, "without skeleton=true, the plugin should write the .mcp.go file only")

	// Build it as a package main of this module, through an overlay: nothing is written into
	// the source tree.
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	require.NoError(t, os.WriteFile(src, []byte(skeleton), 0o644))
	wd, err := os.Getwd()
	require.NoError(t, err)
	overlay, _ := json.Marshal(map[string]any{"Replace": map[string]string{filepath.Join(wd, "testdata", "skeletonbuild", "main.go"): src}})
	require.NoError(t, os.WriteFile(filepath.Join(dir, "overlay.json"), overlay, 0o644))
	bin := filepath.Join(dir, "server")
	build := exec.Command("go", "build", "-overlay", filepath.Join(dir, "overlay.json"), "-o", bin, "./testdata/skeletonbuild")
	if out, err := build.CombinedOutput(); err != nil {
		require.Fail(t, fmt.Sprintf("the skeleton does not build: %v\n%s", err, out))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := runtime.NewCommandClient(exec.Command(bin, "-stdio"))
	require.NoError(t, err)
	defer c.Close(ctx)
	var tools []string
	for tool, err := range c.Tools(ctx) {
		require.NoError(t, err)
		tools = append(tools, tool.Name)
	}
	assert.Equal(t, []string{"get_forecast", "list_alerts", "forecast_chart", "export_forecast", "get_climate_report"}, tools, "tools/list")
	res, err := c.CallTool(ctx, "list_alerts", json.RawMessage(`{"regions":["FR"]}`))
	if assert.NoError(t, err, "list_alerts") {
		assert.True(t, res.IsError, "list_alerts: want the stub's error result: %+v", res)
		assert.Contains(t, res.Text(), "TODO: implement the list_alerts tool", "list_alerts")
	}
	_, err = c.GetPrompt(ctx, "plan_trip", map[string]string{"city": "Paris", "activity": "ACTIVITY_BEACH"})
	assert.ErrorContains(t, err, "TODO: implement the plan_trip prompt", "plan_trip")
}
