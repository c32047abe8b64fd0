//go:build !race

package runtime_test

// Allocation counts are exact only without the race detector, under which sync.Pool drops
// items at random: make test runs this file in its second, race-free pass.

import (
	"context"
	"fmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"net/http"
	"testing"

	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
	"github.com/protomcp/protomcp/runtime"
)

// TestObservingInterceptorCostsNoAllocation checks the property behind "an interceptor that
// only observes must not cost the fast path": a typed tool's call allocates no more with one
// pass-through interceptor than without, on the server and on the client.
func TestObservingInterceptorCostsNoAllocation(t *testing.T) {
	serverAllocs := func(opts ...runtime.ServerOption) float64 {
		s := newBenchServer(t, opts...)
		id := 100
		return testing.AllocsPerRun(200, func() {
			id++
			s.post(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,%s`, id, echoCall))
		})
	}
	base, with := serverAllocs(), serverAllocs(runtime.WithInterceptors(noopInterceptor))
	assert.Falsef(t, with > base, "server: %.1f allocations per call with a no-op interceptor, %.1f without", with, base)
	t.Logf("server: %.1f allocations per call without an interceptor, %.1f with one", base, with)

	clientAllocs := func(opts ...runtime.ClientOption) float64 {
		res := `{"content":[{"type":"text","text":"{\"text\":\"hi\"}"}],"structuredContent":{"text":"hi"}}`
		opts = append([]runtime.ClientOption{runtime.WithHTTPClient(&http.Client{Transport: &memTransport{result: res}})}, opts...)
		c := runtime.NewClient("http://mem/mcp", opts...)
		ctx := context.Background()
		defer c.Close(ctx)
		req := &mcpv1.TextContent{Text: "hi"}
		return testing.AllocsPerRun(200, func() {
			if _, err := runtime.CallTypedTool[mcpv1.TextContent](ctx, c, "echo", req); err != nil {
				require.NoError(t, err)
			}
		})
	}
	base, with = clientAllocs(), clientAllocs(runtime.WithInterceptors(noopInterceptor))
	assert.Falsef(t, with > base, "client: %.1f allocations per call with a no-op interceptor, %.1f without", with, base)
	t.Logf("client: %.1f allocations per call without an interceptor, %.1f with one", base, with)
}
