package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/protomcp/protomcp/runtime"
)

// A 2026-07-28 handler's Caller.Capabilities are its own down to the declared extensions and
// task capabilities, though the server decodes a repeated declaration once: a handler that
// changes its copy (an extension added, task requests filled in) changes nothing another
// request with the same declaration sees, and handlers that do it at once do not race with
// the server's own reading of them (the tasks extension decides whether a call may be a
// task: spec 2026-07-28, Extensions).
func TestModernCapabilityExtensionsAreTheRequests(t *testing.T) {
	t.Parallel()
	srv := runtime.NewServer(runtime.Implementation{Name: "caps", Version: "0"}, runtime.WithLogger(discardLogger()))
	srv.AddTool(runtime.ToolSpec{Name: "caps", InputSchema: objSchema}, func(ctx context.Context, _ *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		caps := runtime.CallerFrom(ctx).Capabilities()
		text := fmt.Sprintf("extensions=%d requests=%v", len(caps.Extensions), caps.Tasks != nil && caps.Tasks.Requests != nil)
		// The handler fills in its copy as it pleases.
		if caps.Extensions != nil {
			caps.Extensions["io.example/added"] = json.RawMessage(`{}`)
		}
		if caps.Tasks != nil {
			caps.Tasks.Requests = &runtime.TaskRequestsCapability{Tools: &runtime.TaskToolsCapability{Call: &runtime.Supported{}}}
		}
		return &runtime.CallToolResult{Content: []runtime.Content{runtime.TextContent(text)}}, nil
	})
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	ctx := testCtx(t)
	post := func(id int) (int, string) {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"caps","arguments":{},"_meta":{`+
			`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},`+
			`"io.modelcontextprotocol/clientCapabilities":{"tasks":{},"extensions":{"io.example/x":{}}}}}}`, id)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, hs.URL, strings.NewReader(body))
		if !assert.NoError(t, err) { // assert, not require: post runs on other goroutines too
			return 0, ""
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "caps")
		resp, err := http.DefaultClient.Do(req)
		if !assert.NoError(t, err) {
			return 0, ""
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		assert.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	for i := range 3 {
		status, body := post(i)
		require.Equal(t, http.StatusOK, status, body)
		assert.Contains(t, body, `extensions=1 requests=false`, "request %d sees its own capabilities", i)
	}
	// At once: under -race, a shared map or struct written by one handler as another request
	// reads it is reported.
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			status, body := post(10 + i)
			assert.Equal(t, http.StatusOK, status, body)
			assert.Contains(t, body, `extensions=1 requests=false`)
		})
	}
	wg.Wait()
}
