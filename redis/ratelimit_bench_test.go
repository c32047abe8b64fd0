package redismcp_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	redismcp "github.com/protomcp/protomcp/redis"
	"github.com/protomcp/protomcp/runtime"
	"github.com/redis/go-redis/v9"
)

// BenchmarkServerCallRateLimit is one 2026-07-28 tools/call served by ServeHTTP, without a
// rate limit, with one in memory and with one in Redis (a real redis-server on loopback):
// what a rate limit costs an allowed call, at a rate no call reaches.
func BenchmarkServerCallRateLimit(b *testing.B) {
	never := runtime.Rate{Calls: 1 << 40, Period: time.Second}
	rs := startRedis(b)
	rdb := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", rs.port)})
	defer rdb.Close()
	for _, c := range []struct {
		name string
		opts []runtime.ServerOption
	}{
		{"none", nil},
		{"memory", []runtime.ServerOption{runtime.WithRateLimit(runtime.LimitTools(never))}},
		{"redis", []runtime.ServerOption{runtime.WithRateLimit(runtime.LimitTools(never), runtime.RateLimitStore(redismcp.NewLimiter(rdb, redismcp.LimiterOptions{})))}},
	} {
		b.Run(c.name, func(b *testing.B) { benchmarkCall(b, c.opts...) })
	}
}

func benchmarkCall(b *testing.B, opts ...runtime.ServerOption) {
	srv := runtime.NewServer(runtime.Implementation{Name: "bench"}, opts...)
	defer srv.Shutdown(context.Background())
	srv.AddTool(runtime.ToolSpec{Name: "echo"}, func(_ context.Context, req *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		return &runtime.CallToolResult{Content: []runtime.Content{runtime.TextContent("ok")}}, nil
	})
	const meta = `"_meta":{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
	id := 0
	call := func() *httptest.ResponseRecorder {
		id++
		body := `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/call","params":{"name":"echo","arguments":{},` + meta + `}}`
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:8080/mcp", bytes.NewReader([]byte(body)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "echo")
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		return w
	}
	if w := call(); w.Code != http.StatusOK || !bytes.Contains(w.Body.Bytes(), []byte(`"ok"`)) || bytes.Contains(w.Body.Bytes(), []byte(`"isError":true`)) {
		b.Fatalf("unexpected answer: %d %s", w.Code, w.Body.Bytes())
	}
	b.ReportAllocs()
	for b.Loop() {
		if w := call(); w.Code != http.StatusOK || bytes.Contains(w.Body.Bytes(), []byte(`"isError":true`)) {
			b.Fatalf("unexpected answer: %d %s", w.Code, w.Body.Bytes())
		}
	}
}
