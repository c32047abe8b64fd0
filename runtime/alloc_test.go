//go:build !race

package runtime_test

// Allocation counts are exact only without the race detector, under which sync.Pool drops
// items at random: make test runs this file in its second, race-free pass.

import (
	goruntime "runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/protomcp/protomcp/runtime"
)

// TestServerEchoAllocations bounds the server's own cost of a small typed tools/call answered
// with JSON (BenchmarkServerEcho's call, on an initialized session, through Server.ServeHTTP
// with a reusable request and response writer): at most 30 allocations and 2 KB per call. The
// SSE answer's cost is logged.
func TestServerEchoAllocations(t *testing.T) {
	const (
		maxAllocs = 30
		maxBytes  = 2 << 10
		runs      = 500
	)
	for _, tc := range []struct {
		name  string
		check bool
		sse   bool
	}{{"json", true, false}, {"sse", false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			var opts []runtime.ServerOption
			if tc.sse {
				opts = append(opts, runtime.WithSSEResponses())
			}
			s := newBenchServer(t, opts...)
			// Every call needs its own request ID: the messages are made before measuring, so
			// that the harness allocates nothing while it is measured.
			msgs := make([][]byte, 0, 2*runs+2)
			for id := 100; len(msgs) < cap(msgs); id++ {
				msgs = append(msgs, []byte(`{"jsonrpc":"2.0","id":`+strconv.Itoa(id)+`,`+echoCall))
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
			if s.w.code >= 300 || !strings.Contains(s.w.body.String(), `"structuredContent":{"text":"`+benchText+`"}`) {
				t.Fatalf("status %d: %s", s.w.code, s.w.body.Bytes())
			}
			allocs := testing.AllocsPerRun(runs-1, call) // runs calls: AllocsPerRun adds one
			var before, after goruntime.MemStats
			goruntime.ReadMemStats(&before)
			for range runs {
				call()
			}
			goruntime.ReadMemStats(&after)
			bytes := float64(after.TotalAlloc-before.TotalAlloc) / runs
			t.Logf("%s: %.1f allocations, %.0f bytes per call", tc.name, allocs, bytes)
			if tc.check && allocs > maxAllocs {
				t.Errorf("%.1f allocations per echo call, want at most %d", allocs, maxAllocs)
			}
			if tc.check && bytes > maxBytes {
				t.Errorf("%.0f bytes allocated per echo call, want at most %d", bytes, maxBytes)
			}
		})
	}
}
