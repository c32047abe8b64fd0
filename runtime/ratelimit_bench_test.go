package runtime_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/protomcp/protomcp/runtime"
)

// BenchmarkServerEchoRateLimit is BenchmarkServerEcho with every tool call limited per
// caller, the buckets in memory, at a rate no call reaches: the cost of the rate limit on an
// allowed call (naming the caller, one bucket taken from).
func BenchmarkServerEchoRateLimit(b *testing.B) {
	never := runtime.Rate{Calls: 1 << 40, Period: time.Second}
	benchmarkServer(b, echoCall, `"structuredContent":{"text":"`+benchText+`"}`, runtime.WithRateLimit(runtime.LimitTools(never)))
}

// BenchmarkMemoryLimiterTake is one Take of the in-memory limiter among 10000 callers'
// buckets.
func BenchmarkMemoryLimiterTake(b *testing.B) {
	m := runtime.NewMemoryLimiter()
	ctx := context.Background()
	keys := make([]string, 10000)
	for i := range keys {
		keys[i] = "tools|addr:10.0." + strconv.Itoa(i/256) + "." + strconv.Itoa(i%256)
	}
	r := runtime.Rate{Calls: 1 << 40, Period: time.Second}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if ok, _, err := m.Take(ctx, keys[i%len(keys)], r, 1); !ok || err != nil {
			b.Fatal(ok, err)
		}
		i++
	}
}
