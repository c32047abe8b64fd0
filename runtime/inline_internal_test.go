package runtime

import (
	"context"
	"fmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestPrimingEventsWhileHandlersRun: SSE answers whose handlers run on (inline, without
// sending anything) get their priming events while the handlers still run, each about
// primingDelay after its start, however many wait together and however their starts are
// spread: the server's one timer re-arms for each. Then every answer arrives.
func TestPrimingEventsWhileHandlersRun(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	ts := newTestServer(t, WithSSEResponses())
	gate := make(chan struct{})
	ts.srv.AddTool(ToolSpec{Name: "wait"}, func(ctx context.Context, _ *CallToolRequest) (*CallToolResult, error) {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &CallToolResult{Content: []Content{TextContent("done")}}, nil
	})
	sid := ts.initSession(ctx, t)
	const n = 8
	var primed, answered sync.WaitGroup
	primed.Add(n)
	answered.Add(n)
	errs := make(chan string, 2*n)
	for i := range n {
		time.Sleep(3 * time.Millisecond) // starts spread over more than primingDelay
		go func() {
			defer answered.Done()
			name := "call " + strconv.Itoa(i) + ": "
			resp, err := ts.doErr(ctx, rawReq{session: sid, body: wireToolCall(strconv.Itoa(i+1), "wait", "{}")})
			if err != nil {
				errs <- name + err.Error()
				primed.Done()
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
				errs <- name + resp.Status + " " + resp.Header.Get("Content-Type")
				primed.Done()
				return
			}
			r := newSSEReader(resp.Body)
			ev, err := r.next()
			if err != nil || !ev.hasID || ev.data != "" {
				errs <- name + "no priming event first"
			}
			primed.Done()
			for {
				ev, err := r.next()
				if err != nil {
					errs <- name + "no answer: " + err.Error()
					return
				}
				if ev.data != "" {
					if !strings.Contains(ev.data, `"done"`) {
						errs <- name + "answer " + ev.data
					}
					return
				}
			}
		}()
	}
	waitGroupOrFail(ctx, t, &primed, "every priming event while the handlers run")
	close(gate)
	waitGroupOrFail(ctx, t, &answered, "every answer")
	close(errs)
	for e := range errs {
		assert.Fail(t, fmt.Sprint(e))
	}
}

// waitGroupOrFail waits for wg, failing the test when ctx ends first.
func waitGroupOrFail(ctx context.Context, t *testing.T, wg *sync.WaitGroup, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		require.Fail(t, fmt.Sprintf("timed out waiting for %s", what))
	}
}
