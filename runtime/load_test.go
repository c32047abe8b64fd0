package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	goruntime "runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestLoad runs 64 concurrent callers against one server for a bounded time: mixed tools,
// results of 1 to 500 items, some notifications, and 10% of calls aborted mid-stream by
// cancelling their context. Every call must return before its deadline (no hang), only the
// aborted ones may fail (with context.Canceled), and afterwards the goroutines and the heap
// go back near their baseline. PROTOMCP_SOAK=5m (make soak) runs it for that long and prints
// the figures.
func TestLoad(t *testing.T) {
	dur := 5 * time.Second
	if testing.Short() {
		dur = 2 * time.Second
	}
	if v := os.Getenv("PROTOMCP_SOAK"); v != "" {
		d, err := time.ParseDuration(v)
		require.NoErrorf(t, err, "PROTOMCP_SOAK=%q", v)
		dur = d
	}
	const (
		callers     = 64
		clients     = 8
		callTimeout = 60 * time.Second // a call still running after this has hung
	)
	baseG, baseHeap := settle()

	log := &hardenLog{}
	srv := NewServer(Implementation{Name: "load", Version: "1"}, WithLogger(discardLogger()))
	addHardenTools(srv, &hardenCtl{started: make(chan string, 1), release: make(chan struct{})})
	hs := httptest.NewServer(srv)
	cs := make([]*Client, clients)
	for i := range cs {
		cs[i] = NewClient(hs.URL, WithLogger(slogTo(log)), WithNotificationHandler(func(context.Context, string, json.RawMessage) {}))
	}

	var (
		calls, aborted, abortedDone, hangs, unexpected atomic.Int64
		mu                                             sync.Mutex
		lat                                            []time.Duration
		firstErrs                                      []string
	)
	fail := func(format string, args ...any) {
		unexpected.Add(1)
		mu.Lock()
		if len(firstErrs) < 10 {
			firstErrs = append(firstErrs, fmt.Sprintf(format, args...))
		}
		mu.Unlock()
	}
	stop := time.Now().Add(dur)
	var wg sync.WaitGroup
	for w := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 42))
			c := cs[w%clients]
			var mine []time.Duration
			for time.Now().Before(stop) {
				calls.Add(1)
				ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
				abort := rng.IntN(10) == 0
				items := 1 + rng.IntN(500)
				var name, args string
				switch p := rng.IntN(10); {
				case abort:
					name, args = "stream", fmt.Sprintf(`{"n":200,"size":200,"items":%d,"tag":"a"}`, items)
					delay := time.Duration(rng.IntN(3000)) * time.Microsecond
					time.AfterFunc(delay, cancel)
				case p < 5:
					name, args = "stream", fmt.Sprintf(`{"n":%d,"size":100,"items":%d,"tag":"w%d"}`, rng.IntN(4), items, w)
				case p < 8:
					name, args = "echo", fmt.Sprintf(`{"w":%d,"items":%d}`, w, items)
				default:
					name, args = "len", fmt.Sprintf(`{"pad":"%0*d"}`, items, 0)
				}
				start := time.Now()
				res, err := c.CallTool(ctx, name, json.RawMessage(args))
				el := time.Since(start)
				deadline := ctx.Err() == context.DeadlineExceeded
				cancel()
				switch {
				case deadline:
					hangs.Add(1)
					fail("%s hung: %v", name, err)
				case abort:
					aborted.Add(1)
					if err == nil {
						abortedDone.Add(1)
					} else if !errors.Is(err, context.Canceled) {
						fail("aborted %s: unexpected error %v", name, err)
					}
				case err != nil:
					fail("%s: %v", name, err)
				case res.IsError:
					fail("%s: tool error %s", name, res.Text())
				default:
					mine = append(mine, el)
					if name == "stream" {
						var out struct{ Items []string }
						if json.Unmarshal(res.StructuredContent, &out) != nil || len(out.Items) != items {
							fail("stream: %d items, want %d", len(out.Items), items)
						}
					}
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(dur + 2*callTimeout):
		require.Fail(t, "callers still running long after the load ended: a hang")
	}

	for _, c := range cs {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		assert.NoError(t, c.Close(ctx), "client close")
		cancel()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	assert.NoError(t, srv.Shutdown(ctx), "shutdown")
	cancel()
	hs.CloseClientConnections()
	hs.Close()

	var g int
	back := waitFor(20*time.Second, func() bool {
		g = goruntime.NumGoroutine()
		return g <= baseG+2
	})
	_, heap := settle()

	slices.Sort(lat)
	pct := func(p float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(len(lat)-1, int(float64(len(lat))*p))]
	}
	t.Logf("load %v: calls %d (%.0f/s), aborted %d (%d finished first), hangs %d, unexpected errors %d, p50 %v, p99 %v, goroutines %d -> %d, heap %.1f MiB -> %.1f MiB",
		dur, calls.Load(), float64(calls.Load())/dur.Seconds(), aborted.Load(), abortedDone.Load(), hangs.Load(), unexpected.Load(),
		pct(0.50), pct(0.99), baseG, g, float64(baseHeap)/(1<<20), float64(heap)/(1<<20))
	for _, e := range firstErrs {
		assert.Fail(t, fmt.Sprintf("unexpected: %s", e))
	}
	require.Falsef(t, hangs.Load() != 0 || unexpected.Load() != 0, "%d hangs and %d unexpected errors", hangs.Load(), unexpected.Load())
	require.Falsef(t, calls.Load() < callers || aborted.Load() == 0, "too little load to mean anything: %d calls, %d aborted", calls.Load(), aborted.Load())
	if !back {
		buf := make([]byte, 1<<20)
		n := goruntime.Stack(buf, true)
		require.Fail(t, fmt.Sprintf("goroutines did not return to the baseline (%d, then %d):\n%s", baseG, g, buf[:n]))
	}
	require.Falsef(t, heap > baseHeap+64<<20, "heap grew from %d to %d bytes after the load", baseHeap, heap)
}

// settle collects garbage and returns the number of goroutines and the live heap.
func settle() (int, uint64) {
	var ms goruntime.MemStats
	goruntime.GC()
	goruntime.GC()
	goruntime.ReadMemStats(&ms)
	return goruntime.NumGoroutine(), ms.HeapAlloc
}
