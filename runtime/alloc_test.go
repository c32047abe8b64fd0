//go:build !race

package runtime_test

// Allocation counts are exact only without the race detector, under which sync.Pool drops
// items at random: make test runs this file in its second, race-free pass.

import (
	goruntime "runtime"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
			if tc.check {
				assert.LessOrEqual(t, allocs, float64(maxAllocs), "allocations per echo call")
				assert.LessOrEqual(t, bytes, float64(maxBytes), "bytes allocated per echo call")
			}
		})
	}
}
