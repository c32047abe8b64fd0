//go:build !race

package runtime_test

// Allocation counts are exact only without the race detector, under which sync.Pool drops
// items at random: make test runs this file in its second, race-free pass.

import (
	"context"
	"encoding/json"
	"net/http"
	goruntime "runtime"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
	"github.com/protomcp/protomcp/runtime"
)

// TestServerEchoAllocations bounds the server's own cost of a small typed tools/call answered
// with JSON (BenchmarkServerEcho's call, on an initialized session, through Server.ServeHTTP
// with a reusable request and response writer): at most 16 allocations and 1.6 KB per call
// (13 and ~1520 B measured); the same call answered with SSE
// (a priming event and the response, stored in the in-memory event store for the retention
// period) at most 18 allocations and 2.4 KB (15 and ~2100-2300 B measured: the store's copy of the
// event and its bookkeeping); the same call in 2026-07-28 (BenchmarkServerEchoModern's: no
// session, the request metadata in _meta and headers) at most 16 allocations and 2.6 KB (16
// and ~2500 B measured: its transient session and state are one 1152-byte allocation).
func TestServerEchoAllocations(t *testing.T) {
	const runs = 500
	for _, tc := range []struct {
		name      string
		sse       bool
		modern    bool
		maxAllocs float64
		maxBytes  float64
	}{
		{"json", false, false, 16, 1.6 * (1 << 10)},
		{"sse", true, false, 18, 2.4 * (1 << 10)},
		{"2026-07-28", false, true, 16, 2.6 * (1 << 10)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var opts []runtime.ServerOption
			if tc.sse {
				opts = append(opts, runtime.WithSSEResponses())
			}
			s := newBenchServer(t, opts...)
			body := echoCall
			if tc.modern {
				s.req.Header.Del("Mcp-Session-Id")
				s.req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
				s.req.Header.Set("Mcp-Method", "tools/call")
				s.req.Header.Set("Mcp-Name", "echo")
				body = modernEchoCall
			}
			// Every call needs its own request ID: the messages are made before measuring, so
			// that the harness allocates nothing while it is measured.
			msgs := make([][]byte, 0, 2*runs+2)
			for id := 100; len(msgs) < cap(msgs); id++ {
				msgs = append(msgs, []byte(`{"jsonrpc":"2.0","id":`+strconv.Itoa(id)+`,`+body))
			}
			next := 0
			call := func() {
				m := msgs[next]
				next++
				s.w.reset()
				s.body.Reset(m)
				s.req.Body = &s.body
				s.req.ContentLength = int64(len(m))
				s.s.ServeHTTP(&s.w, s.req)
			}
			call() // warm up: pools, the tool's result buffer size
			require.Less(t, s.w.code, 300, "status of the warm-up call")
			require.Contains(t, s.w.body.String(), `"structuredContent":{"text":"`+benchText+`"}`, "the warm-up call's answer")
			allocs := testing.AllocsPerRun(runs-1, call) // runs calls: AllocsPerRun adds one
			var before, after goruntime.MemStats
			goruntime.ReadMemStats(&before)
			for range runs {
				call()
			}
			goruntime.ReadMemStats(&after)
			bytes := float64(after.TotalAlloc-before.TotalAlloc) / runs
			t.Logf("%s: %.1f allocations, %.0f bytes per call", tc.name, allocs, bytes)
			assert.LessOrEqual(t, allocs, tc.maxAllocs, "allocations per echo call")
			assert.LessOrEqual(t, bytes, tc.maxBytes, "bytes allocated per echo call")
		})
	}
}

// TestClientEchoAllocations bounds the client's own cost of a small typed call
// (BenchmarkClientEcho's and BenchmarkClientEchoSSE's call: runtime.CallTypedTool to an in-memory
// RoundTripper, whose own allocations count too): at most 40
// allocations for a JSON answer and 60 for an SSE one (this RoundTripper's stream reports its
// end only after the response has been read, so the background drain runs).
func TestClientEchoAllocations(t *testing.T) {
	for _, tc := range []struct {
		name      string
		sse       bool
		maxAllocs float64
	}{{"json", false, 40}, {"sse", true, 60}} {
		t.Run(tc.name, func(t *testing.T) {
			sc := `{"text":"` + benchText + `"}`
			text, _ := json.Marshal(sc)
			res := `{"content":[{"type":"text","text":` + string(text) + `}],"structuredContent":` + sc + `}`
			c := runtime.NewClient("http://mem/mcp", runtime.WithHTTPClient(&http.Client{Transport: &memTransport{result: res, sse: tc.sse}}))
			ctx := context.Background()
			require.NoError(t, c.Connect(ctx))
			t.Cleanup(func() { _ = c.Close(ctx) })
			in := &mcpv1.TextContent{Text: benchText}
			var (
				out *mcpv1.TextContent
				err error
			)
			call := func() { out, err = runtime.CallTypedTool[mcpv1.TextContent](ctx, c, "echo", in) }
			call() // warm up
			require.NoError(t, err)
			require.Equal(t, benchText, out.GetText(), "the echoed text")
			allocs := testing.AllocsPerRun(200, call)
			require.NoError(t, err)
			t.Logf("%s: %.1f allocations per call", tc.name, allocs)
			assert.LessOrEqual(t, allocs, tc.maxAllocs, "allocations per echo call")
		})
	}
}

// TestClientAllocationsBeyondNetHTTP bounds what the client allocates for a call over a real
// loopback connection beyond what net/http allocates for the same exchange made bare
// (BenchmarkClientEchoLoopback against BenchmarkNetHTTPEchoLoopback, one server answering
// both from memory): at most 16 allocations (14 measured, 24 before the client stopped
// going through http.Client.Do: the default call timeout, the call's request, the context that
// lets an SSE answer be drained after the call, the JSON-RPC envelope both ways, the decoded
// result).
func TestClientAllocationsBeyondNetHTTP(t *testing.T) {
	url := newLoopbackEcho(t)
	bare := bareEchoCall(url)
	c := runtime.NewClient(url)
	ctx := context.Background()
	require.NoError(t, c.Connect(ctx))
	t.Cleanup(func() { _ = c.Close(ctx) })
	in := &mcpv1.TextContent{Text: benchText}
	var err error
	ours := func() { _, err = runtime.CallTypedTool[mcpv1.TextContent](ctx, c, "echo", in) }
	var bareErr error
	for range 10 { // warm up both: connections, pools
		ours()
		bareErr = bare()
	}
	require.NoError(t, err)
	require.NoError(t, bareErr)
	a := testing.AllocsPerRun(500, ours)
	b := testing.AllocsPerRun(500, func() { bareErr = bare() })
	require.NoError(t, err)
	require.NoError(t, bareErr)
	t.Logf("allocations per call: %.1f with the client, %.1f bare (both sides of the loopback exchange)", a, b)
	assert.LessOrEqual(t, a-b, 16.0, "the client's allocations beyond net/http's per call")
}
