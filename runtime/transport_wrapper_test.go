package runtime_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/protomcp/protomcp/runtime"
)

// tagTransport adds its name to the X-Wrappers header of every request, and records the
// requests it saw.
type tagTransport struct {
	name string
	next http.RoundTripper

	mu   sync.Mutex
	seen int
}

func (t *tagTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.mu.Lock()
	t.seen++
	t.mu.Unlock()
	r := req.Clone(req.Context())
	r.Header.Add("X-Wrappers", t.name)
	return t.next.RoundTrip(r)
}

// TestWithTransportWrapper: every request of the Client goes through the wrappers, each
// wrapping those given before it, and each wrapper is built once with the endpoint and the
// Client's logger.
func TestWithTransportWrapper(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	srv := runtime.NewServer(runtime.Implementation{Name: "wrapped"}, runtime.WithLogger(discardLogger()))
	srv.AddTool(runtime.ToolSpec{Name: "echo"}, func(context.Context, *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		return &runtime.CallToolResult{Content: []runtime.Content{runtime.TextContent("ok")}}, nil
	})
	var mu sync.Mutex
	var order [][]string
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		order = append(order, r.Header.Values("X-Wrappers"))
		mu.Unlock()
		srv.ServeHTTP(w, r)
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		ts.Close()
	})
	log := discardLogger()
	var built []*tagTransport
	wrapper := func(name string) runtime.ClientOption {
		return runtime.WithTransportWrapper(func(next http.RoundTripper, endpoint string, l *slog.Logger) http.RoundTripper {
			assert.Equal(t, ts.URL+"/mcp", endpoint, "endpoint given to %s", name)
			assert.Same(t, log, l, "logger given to %s", name)
			tt := &tagTransport{name: name, next: next}
			built = append(built, tt)
			return tt
		})
	}
	c := runtime.NewClient(ts.URL+"/mcp", runtime.WithLogger(log), wrapper("inner"), wrapper("outer"), runtime.WithTransportWrapper(nil))
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = c.Close(cctx)
	})
	res, err := c.CallTool(ctx, "echo", nil)
	require.NoError(t, err)
	require.NotEmpty(t, res.Content)
	assert.Equal(t, "ok", res.Content[0].Text)
	require.Len(t, built, 2, "wrappers built")
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, order, "requests at the server")
	for i, tags := range order {
		assert.Equal(t, []string{"outer", "inner"}, tags, "request %d: the later wrapper is outermost", i)
	}
	for _, tt := range built {
		tt.mu.Lock()
		assert.Equal(t, len(order), tt.seen, "requests through %s", tt.name)
		tt.mu.Unlock()
	}
}
