package runtime_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/protomcp/protomcp/runtime"
)

// A 2026-07-28 request's _meta reaches its handler as a session-era request's does (its
// progress token, its other members), though the server reads it once for both the request's
// checks and the handler. The request metadata, which the runtime reads itself, is not among
// them: the handler has it from its Caller, as in the session era, where it is not in _meta.
// A progressToken of the wrong type is refused with -32602, as in the session era (spec
// 2026-07-28, Request Metadata; the schema's ProgressToken).
func TestModernRequestMetaReachesHandler(t *testing.T) {
	t.Parallel()
	srv := runtime.NewServer(runtime.Implementation{Name: "meta", Version: "0"}, runtime.WithLogger(discardLogger()))
	seen := make(chan *runtime.RequestMeta, 4)
	callers := make(chan *runtime.Caller, 4)
	srv.AddTool(runtime.ToolSpec{Name: "meta", InputSchema: objSchema}, func(ctx context.Context, req *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		seen <- req.Meta
		c := runtime.CallerFrom(ctx)
		callers <- c
		return &runtime.CallToolResult{Content: []runtime.Content{runtime.TextContent("ok")}}, nil
	})
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	post := func(meta string) (int, string) {
		return postModernToolCall(t, hs.URL, "meta", `{}`, meta)
	}

	status, body := post(`"progressToken":"p-7","trace":"abc",`)
	require.Equal(t, http.StatusOK, status, body)
	assert.Contains(t, body, `"resultType":"complete"`)
	select {
	case m := <-seen:
		require.NotNil(t, m, "the handler's RequestMeta")
		assert.JSONEq(t, `"p-7"`, string(m.ProgressToken))
		assert.JSONEq(t, `"abc"`, string(m.Other["trace"]))
		assert.Len(t, m.Other, 1, "only trace: the request metadata is the runtime's")
		c := <-callers
		assert.Equal(t, "2026-07-28", c.ProtocolVersion())
		assert.Equal(t, "m", c.Info().Name)
	default:
		require.Fail(t, "the handler did not run")
	}

	status, body = post(``)
	require.Equal(t, http.StatusOK, status, body)
	select { // the handler ran before the answer: its values wait in the channels
	case m := <-seen:
		assert.Nil(t, m, "_meta with only the request metadata: as a request without _meta")
		<-callers
	default:
		require.Fail(t, "the handler did not run")
	}

	status, body = post(`"progressToken":{"a":1},`)
	assert.Equal(t, http.StatusOK, status, body)
	assert.Contains(t, body, `"code":-32602`)
	assert.Contains(t, body, "progressToken must be a string or a number")
	assert.Empty(t, seen, "the handler of a refused request ran")
}

// A tool's arguments are a view of the request's body, capped at their own length: a handler
// that appends to them gets a copy, and the bytes that follow in the body (here the _meta
// that RequestMeta's values are views of) stay as the client sent them.
func TestToolArgumentsDoNotAliasTheBody(t *testing.T) {
	t.Parallel()
	srv := runtime.NewServer(runtime.Implementation{Name: "args", Version: "0"}, runtime.WithLogger(discardLogger()))
	seen := make(chan string, 1)
	srv.AddTool(runtime.ToolSpec{Name: "grow", InputSchema: objSchema}, func(ctx context.Context, req *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		_ = append(req.Arguments, strings.Repeat("X", 64)...)
		seen <- string(req.Meta.Other["trace"])
		return &runtime.CallToolResult{Content: []runtime.Content{runtime.TextContent("ok")}}, nil
	})
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	status, body := postModernToolCall(t, hs.URL, "grow", `{}`, `"trace":"abc",`)
	require.Equal(t, http.StatusOK, status, body)
	select {
	case trace := <-seen:
		assert.Equal(t, `"abc"`, trace, "the body after the arguments was written over")
	case <-testCtx(t).Done():
		require.Fail(t, "the handler did not run")
	}
}

// The interceptors of server/discover and subscriptions/listen, which the runtime answers
// itself, get the request's Caller as a handler's do: the client's info and capabilities
// from the request metadata. The request has no response stream of its own: what the Caller
// would send fails with an error, and nothing panics.
func TestModernDirectRequestsHaveACaller(t *testing.T) {
	t.Parallel()
	type seen struct {
		method, client, version string
		logErr                  error
	}
	got := make(chan seen, 4)
	spy := runtime.InterceptorFunc(func(next runtime.CallFunc) runtime.CallFunc {
		return func(ctx context.Context, req *runtime.Request) (*runtime.Response, error) {
			if req.Method == "server/discover" || req.Method == "subscriptions/listen" {
				c := runtime.CallerFrom(ctx)
				got <- seen{req.Method, c.Info().Name, c.ProtocolVersion(), c.Log(ctx, runtime.LevelError, "spy", "hello")}
			}
			return next(ctx, req)
		}
	})
	srv := runtime.NewServer(runtime.Implementation{Name: "direct", Version: "0"}, runtime.WithLogger(discardLogger()), runtime.WithInterceptors(spy))
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"m","version":"1"},"io.modelcontextprotocol/logLevel":"debug"}`
	for _, tc := range []struct{ method, params string }{
		{"server/discover", `{` + meta + `}`},
		{"subscriptions/listen", `{"notifications":{"toolsListChanged":true},` + meta + `}`},
	} {
		ctx, cancel := context.WithTimeout(testCtx(t), 5*time.Second)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, hs.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"`+tc.method+`","params":`+tc.params+`}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", tc.method)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, tc.method)
		select {
		case s := <-got:
			assert.Equal(t, seen{tc.method, "m", "2026-07-28", s.logErr}, s)
			assert.Error(t, s.logErr, "%s: a Log with no stream to send on", tc.method)
		case <-ctx.Done():
			require.Fail(t, "the interceptor did not run", tc.method)
		}
		resp.Body.Close() // subscriptions/listen's stream: the server ends it when the client goes
		cancel()
	}
}

// postModernToolCall POSTs a 2026-07-28 tools/call of tool with arguments args to url, its
// _meta the members meta (each followed by a comma) and the request metadata, and returns
// the answer's status and body.
func postModernToolCall(t *testing.T, url, tool, args, meta string) (int, string) {
	t.Helper()
	status, body := postModernParams(t, url, tool, `{"name":"`+tool+`","arguments":`+args+`,"_meta":{`+meta+
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"m","version":"1"}}}`)
	return status, string(body)
}

// postModernParams POSTs a 2026-07-28 tools/call of tool whose params are params to url, with
// the headers that mirror it, and returns the answer's status and body.
func postModernParams(t *testing.T, url, tool, params string) (int, []byte) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + params + `}`
	req, err := http.NewRequestWithContext(testCtx(t), http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", tool)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b
}
