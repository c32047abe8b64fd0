package runtime

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"
)

func TestSmoke(t *testing.T) {
	s := NewServer(Implementation{Name: "smoke", Version: "1"})
	s.AddTool(ToolSpec{Name: "echo", Description: "echo", InputSchema: `{"type":"object"}`}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		_ = NotifyProgress(ctx, 1, 2, "half")
		return &CallToolResult{Content: []Content{TextContent(string(req.Arguments))}}, nil
	})
	hs := httptest.NewServer(s)
	defer hs.Close()
	c := NewClient(hs.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, withProgress := range []bool{false, true} {
		var opts []CallOption
		got := 0
		if withProgress {
			opts = append(opts, WithProgress(func(p *ProgressParams) { got++ }))
		}
		res, err := c.CallTool(ctx, "echo", json.RawMessage(`{"a":1}`), opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%+v progress=%d", res, got)
	}
	tools, err := c.ListTools(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", tools)
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	s.Shutdown(ctx)
}
