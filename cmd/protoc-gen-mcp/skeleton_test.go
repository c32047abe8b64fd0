package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/protomcp/protomcp/runtime"
)

// The skeleton of the weather service compiles as it is written, and serves every rpc over
// stdio, each stub answering with its TODO.
func TestSkeletonCompilesAndServes(t *testing.T) {
	resp := runPlugin(t, "paths=source_relative,skeleton=true", "weather/v1/weather.proto")
	if resp.Error != nil {
		t.Fatal(resp.GetError())
	}
	var skeleton string
	for _, f := range resp.File {
		if strings.HasSuffix(f.GetName(), ".skeleton.go.txt") {
			skeleton = f.GetContent()
		}
	}
	if skeleton == "" {
		t.Fatal("no .skeleton.go.txt generated")
	}
	if len(runPlugin(t, "paths=source_relative", "weather/v1/weather.proto").File) != 1 {
		t.Error("without skeleton=true, the plugin should write the .mcp.go file only")
	}

	// Build it as a package main of this module, through an overlay: nothing is written into
	// the source tree.
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte(skeleton), 0o644); err != nil {
		t.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	overlay, _ := json.Marshal(map[string]any{"Replace": map[string]string{filepath.Join(wd, "testdata", "skeletonbuild", "main.go"): src}})
	if err := os.WriteFile(filepath.Join(dir, "overlay.json"), overlay, 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "server")
	build := exec.Command("go", "build", "-overlay", filepath.Join(dir, "overlay.json"), "-o", bin, "./testdata/skeletonbuild")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("the skeleton does not build: %v\n%s", err, out)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := runtime.NewCommandClient(exec.Command(bin, "-stdio"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var tools []string
	for tool, err := range c.Tools(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		tools = append(tools, tool.Name)
	}
	if strings.Join(tools, ",") != "get_forecast,list_alerts,forecast_chart,export_forecast" {
		t.Errorf("tools/list = %v", tools)
	}
	res, err := c.CallTool(ctx, "list_alerts", json.RawMessage(`{"regions":["FR"]}`))
	if err != nil || !res.IsError || !strings.Contains(res.Text(), "TODO: implement the list_alerts tool") {
		t.Errorf("list_alerts = %+v, %v; want the stub's TODO", res, err)
	}
	if _, err := c.GetPrompt(ctx, "plan_trip", map[string]string{"city": "Paris", "activity": "ACTIVITY_BEACH"}); err == nil || !strings.Contains(err.Error(), "TODO: implement the plan_trip prompt") {
		t.Errorf("plan_trip: %v; want the stub's TODO", err)
	}
}
