package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// streamDetached reports whether no connection is writing the session's stream any more
// (the server noticed that the client went away).
func streamDetached(ts *testServer, sid, streamID string) bool {
	ts.srv.mu.RLock()
	sess := ts.srv.sessions[sid]
	ts.srv.mu.RUnlock()
	if sess == nil {
		return true
	}
	st := sess.lookupStream(streamID)
	if st == nil {
		return true
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return !st.attached
}

// resumeGET resumes a stream with GET and Last-Event-ID. While the server has not yet noticed
// that the previous connection dropped, it answers 409; that is waited out, within ctx.
func resumeGET(ctx context.Context, t *testing.T, ts *testServer, sid, lastEventID string) *http.Response {
	t.Helper()
	for {
		resp := ts.do(ctx, t, rawReq{method: http.MethodGet, session: sid, header: map[string]string{"Last-Event-ID": lastEventID}})
		if resp.StatusCode != http.StatusConflict {
			return resp
		}
		readBody(t, resp)
		select {
		case <-ctx.Done():
			t.Fatalf("the stream stayed attached to the dropped connection: %v", ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// countTool sends progress 1..n (message "i"), pausing between events, and returns the text
// "counted n". If gate is not nil it waits for it after the gateAt-th event (gateAt == n: just
// before the response).
func countTool(n, gateAt int, gate <-chan struct{}, pause time.Duration) ToolHandler {
	return func(ctx context.Context, _ *CallToolRequest) (*CallToolResult, error) {
		wait := func() error {
			select {
			case <-gate:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		for i := 1; i <= n; i++ {
			if i == gateAt+1 && gate != nil {
				if err := wait(); err != nil {
					return nil, err
				}
			}
			if err := CallerFrom(ctx).NotifyProgress(ctx, float64(i), float64(n), strconv.Itoa(i)); err != nil {
				return nil, err
			}
			if pause > 0 {
				time.Sleep(pause) // pacing only: the events trickle out over time
			}
		}
		if gateAt == n && gate != nil {
			if err := wait(); err != nil {
				return nil, err
			}
		}
		return &CallToolResult{Content: []Content{TextContent(fmt.Sprintf("counted %d", n))}}, nil
	}
}

// streamLog collects what a (possibly resumed) request stream delivered.
type streamLog struct {
	stream   string
	lastSeq  uint64
	lastID   string
	progress []int
	results  []string
}

// take records one message event, checking that its ID continues the stream: same stream,
// next sequence number (so nothing is skipped or repeated).
func (l *streamLog) take(t *testing.T, ev sseEvent, m rpcResponse) {
	t.Helper()
	stream, seq, ok := parseEventID(ev.id)
	if !ok || stream != l.stream {
		t.Fatalf("event id %q is not on stream %q", ev.id, l.stream)
	}
	if seq != l.lastSeq+1 {
		t.Fatalf("event id %q after seq %d: events skipped or repeated", ev.id, l.lastSeq)
	}
	l.lastSeq, l.lastID = seq, ev.id
	switch {
	case m.Method == "notifications/progress":
		var p ProgressParams
		if err := json.Unmarshal(m.Params, &p); err != nil {
			t.Fatal(err)
		}
		l.progress = append(l.progress, int(p.Progress))
	case m.Method == "" && len(m.ID) > 0:
		if m.Error != nil {
			t.Fatalf("error response %+v", m.Error)
		}
		l.results = append(l.results, resultText(t, m.Result))
	default:
		t.Fatalf("unexpected message on a request stream: %+v", m)
	}
}

// check asserts that the stream delivered progress 1..n and then the one response, each
// exactly once and in order.
func (l *streamLog) check(t *testing.T, n int) {
	t.Helper()
	if len(l.progress) != n {
		t.Fatalf("got %d progress events %v, want exactly 1..%d", len(l.progress), l.progress, n)
	}
	for i, p := range l.progress {
		if p != i+1 {
			t.Fatalf("progress events %v are not exactly 1..%d in order", l.progress, n)
		}
	}
	if len(l.results) != 1 || l.results[0] != fmt.Sprintf("counted %d", n) {
		t.Fatalf("responses %q, want exactly one \"counted %d\"", l.results, n)
	}
}

// readToEnd reads message events until the body ends.
func (l *streamLog) readToEnd(t *testing.T, r *sseReader) {
	t.Helper()
	for {
		ev, err := r.next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("reading the resumed stream: %v", err)
		}
		if ev.data == "" {
			continue
		}
		l.take(t, ev, decodeRPC(t, []byte(ev.data)))
	}
}

// TestResumeAfterDrop: a request stream dropped after k events and resumed with GET and
// Last-Event-ID delivers every event exactly once and in order, then the response.
func TestResumeAfterDrop(t *testing.T) {
	const n = 20
	for _, tc := range []struct {
		name  string
		opts  []ServerOption
		k     int           // events read before the drop
		gated bool          // the handler waits after k events until the server saw the drop
		pause time.Duration // between events, for the free-running variant
	}{
		{name: "gated/json-upgraded", k: 5, gated: true},
		{name: "gated/sse", opts: []ServerOption{WithSSEResponses()}, k: 5, gated: true},
		{name: "gated/drop-after-priming", opts: []ServerOption{WithSSEResponses()}, k: 0, gated: true},
		// Free-running: events keep coming while the connection drops, so some are written
		// into the dead connection; only the response waits until the server saw the drop
		// (see the note on the gate below).
		{name: "free-running/sse", opts: []ServerOption{WithSSEResponses()}, k: 7, pause: time.Millisecond},
		{name: "free-running/json-upgraded", k: 3, pause: time.Millisecond},
		{name: "free-running/sse-unpaced", opts: []ServerOption{WithSSEResponses()}, k: 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			ts := newTestServer(t, tc.opts...)
			// The response waits until the server has seen the drop: a stream whose response
			// was written (even into a connection that then turned out dead) counts as
			// delivered and is forgotten, so a drop racing with the response cannot be
			// resumed. That is a known limit of the runtime, not what this test is about.
			gate := make(chan struct{})
			gateAt := n
			if tc.gated {
				gateAt = tc.k
			}
			ts.srv.AddTool(ToolSpec{Name: "count"}, countTool(n, gateAt, gate, tc.pause))
			sid := ts.initSession(ctx, t)

			resp := ts.do(ctx, t, rawReq{session: sid, body: wireToolCallProgress("1", "count", "", "tok")})
			if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
				t.Fatalf("Content-Type %q, want an SSE answer", ct)
			}
			r := newSSEReader(resp.Body)
			log := &streamLog{}
			priming := mustNext(t, r)
			log.stream = checkPriming(t, priming)
			log.lastID = priming.id
			for range tc.k {
				ev, m := r.nextMessage(t)
				log.take(t, ev, m)
			}
			resp.Body.Close() // drop the connection mid-stream

			waitUntil(ctx, t, "the server to notice the drop", func() bool { return streamDetached(ts, sid, log.stream) })
			close(gate)
			resumed := resumeGET(ctx, t, ts, sid, log.lastID)
			defer resumed.Body.Close()
			if resumed.StatusCode != http.StatusOK {
				t.Fatalf("resume: %s %s", resumed.Status, readBody(t, resumed))
			}
			if ct := resumed.Header.Get("Content-Type"); ct != "text/event-stream" {
				t.Fatalf("resume Content-Type %q", ct)
			}
			log.readToEnd(t, newSSEReader(resumed.Body))
			log.check(t, n)

			// The stream is finished: resuming it again replays nothing.
			again := ts.do(ctx, t, rawReq{method: http.MethodGet, session: sid, header: map[string]string{"Last-Event-ID": log.lastID}})
			if b := readBody(t, again); again.StatusCode == http.StatusOK && strings.Contains(string(b), "data: {") {
				t.Fatalf("a delivered stream was replayed again: %q", b)
			}
		})
	}
}

// TestResumeNeverCrossesSessions: a Last-Event-ID from one session, sent on another, replays
// nothing; the owning session can still resume with it.
func TestResumeNeverCrossesSessions(t *testing.T) {
	ctx := testCtx(t)
	ts := newTestServer(t, WithSSEResponses())
	gate := make(chan struct{})
	const n = 6
	ts.srv.AddTool(ToolSpec{Name: "count"}, countTool(n, 2, gate, 0))
	owner := ts.initSession(ctx, t)
	other := ts.initSession(ctx, t)

	resp := ts.do(ctx, t, rawReq{session: owner, body: wireToolCallProgress("1", "count", "", "secret-token")})
	r := newSSEReader(resp.Body)
	log := &streamLog{}
	log.stream = checkPriming(t, mustNext(t, r))
	for range 2 {
		ev, m := r.nextMessage(t)
		log.take(t, ev, m)
	}
	resp.Body.Close()
	waitUntil(ctx, t, "the server to notice the drop", func() bool { return streamDetached(ts, owner, log.stream) })

	for _, id := range []string{log.lastID, log.stream + "_0"} {
		for _, sess := range []string{other, newSessionID()} {
			stolen := ts.do(ctx, t, rawReq{method: http.MethodGet, session: sess, header: map[string]string{"Last-Event-ID": id}})
			b := readBody(t, stolen)
			if stolen.StatusCode != http.StatusNotFound && stolen.StatusCode != http.StatusBadRequest {
				t.Fatalf("Last-Event-ID %q of another session: %s %q, want 404 or 400", id, stolen.Status, b)
			}
			if strings.Contains(string(b), "secret-token") || strings.Contains(string(b), "progress") {
				t.Fatalf("another session's events were replayed: %q", b)
			}
		}
	}
	noSess := ts.do(ctx, t, rawReq{method: http.MethodGet, header: map[string]string{"Last-Event-ID": log.lastID}})
	if b := readBody(t, noSess); noSess.StatusCode != http.StatusBadRequest || strings.Contains(string(b), "secret-token") {
		t.Fatalf("Last-Event-ID without a session: %s %q, want 400", noSess.Status, b)
	}

	close(gate)
	resumed := resumeGET(ctx, t, ts, owner, log.lastID)
	defer resumed.Body.Close()
	if resumed.StatusCode != http.StatusOK {
		t.Fatalf("the owner's resume: %s", resumed.Status)
	}
	log.readToEnd(t, newSSEReader(resumed.Body))
	log.check(t, n)
}

// TestCloseSSEStreamThenResume: a handler that closes its SSE connection (SEP-1699 polling)
// ends it with a retry field, without the response; GET with Last-Event-ID then delivers the
// rest and the response.
func TestCloseSSEStreamThenResume(t *testing.T) {
	for _, mode := range []struct {
		name string
		opts []ServerOption
	}{{"json", nil}, {"sse", []ServerOption{WithSSEResponses()}}} {
		t.Run(mode.name, func(t *testing.T) {
			ctx := testCtx(t)
			ts := newTestServer(t, append(mode.opts, WithRetryInterval(250*time.Millisecond))...)
			gate := make(chan struct{})
			ts.srv.AddTool(ToolSpec{Name: "poll"}, func(ctx context.Context, _ *CallToolRequest) (*CallToolResult, error) {
				if err := CallerFrom(ctx).NotifyProgress(ctx, 1, 3, "1"); err != nil {
					return nil, err
				}
				if err := CallerFrom(ctx).CloseSSEStream(); err != nil {
					return nil, err
				}
				select {
				case <-gate:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				if err := CallerFrom(ctx).NotifyProgress(ctx, 2, 3, "2"); err != nil {
					return nil, err
				}
				if err := CallerFrom(ctx).NotifyProgress(ctx, 3, 3, "3"); err != nil {
					return nil, err
				}
				return &CallToolResult{Content: []Content{TextContent("counted 3")}}, nil
			})
			sid := ts.initSession(ctx, t)
			resp := ts.do(ctx, t, rawReq{session: sid, body: wireToolCallProgress("1", "poll", "", "tok")})
			if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
				t.Fatalf("Content-Type %q, want SSE", ct)
			}
			evs := readAllEvents(t, readBody(t, resp)) // the server closes the connection
			if len(evs) < 2 {
				t.Fatalf("got %d events before the close, want the priming event and progress 1", len(evs))
			}
			log := &streamLog{stream: checkPriming(t, evs[0])}
			for _, ev := range evs[1:] {
				if ev.data != "" {
					log.take(t, ev, decodeRPC(t, []byte(ev.data)))
				}
			}
			if last := evs[len(evs)-1]; !last.hasRetry || last.retry != "250" {
				t.Fatalf("the connection was closed without a retry field last (T15): %+v", last)
			}
			if len(log.results) != 0 || len(log.progress) != 1 {
				t.Fatalf("before the close: progress %v, responses %v; want progress 1 and no response", log.progress, log.results)
			}
			resumed := resumeGET(ctx, t, ts, sid, log.lastID)
			defer resumed.Body.Close()
			if resumed.StatusCode != http.StatusOK {
				t.Fatalf("resume: %s %s", resumed.Status, readBody(t, resumed))
			}
			close(gate) // the handler continues while the resumed stream is attached
			log.readToEnd(t, newSSEReader(resumed.Body))
			log.check(t, 3)
		})
	}
}

// TestCloseSSEStreamThenAnswerAtOnce: what a handler sends after CloseSSEStream goes out on
// the connection the client resumes with, even when the handler has answered before the
// server wrote anything (a fast handler: the writer finds the kick and the response queued
// together); the closed connection carries only what came before the kick.
func TestCloseSSEStreamThenAnswerAtOnce(t *testing.T) {
	for _, mode := range []struct {
		name string
		opts []ServerOption
	}{{"json", nil}, {"sse", []ServerOption{WithSSEResponses()}}} {
		t.Run(mode.name, func(t *testing.T) {
			ctx := testCtx(t)
			ts := newTestServer(t, append(mode.opts, WithRetryInterval(250*time.Millisecond))...)
			ts.srv.AddTool(ToolSpec{Name: "poll"}, func(ctx context.Context, _ *CallToolRequest) (*CallToolResult, error) {
				if err := CallerFrom(ctx).NotifyProgress(ctx, 1, 2, "1"); err != nil {
					return nil, err
				}
				if err := CallerFrom(ctx).CloseSSEStream(); err != nil {
					return nil, err
				}
				if err := CallerFrom(ctx).NotifyProgress(ctx, 2, 2, "2"); err != nil {
					return nil, err
				}
				return &CallToolResult{Content: []Content{TextContent("counted 2")}}, nil
			})
			sid := ts.initSession(ctx, t)
			resp := ts.do(ctx, t, rawReq{session: sid, body: wireToolCallProgress("1", "poll", "", "tok")})
			require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
			evs := readAllEvents(t, readBody(t, resp)) // the server closes the connection
			require.GreaterOrEqual(t, len(evs), 2, "the priming event and progress 1 before the close")
			log := &streamLog{stream: checkPriming(t, evs[0])}
			for _, ev := range evs[1:] {
				if ev.data != "" {
					log.take(t, ev, decodeRPC(t, []byte(ev.data)))
				}
			}
			last := evs[len(evs)-1]
			assert.True(t, last.hasRetry && last.retry == "250", "a retry field last before the close: %+v", last)
			require.Equal(t, []int{1}, log.progress, "progress before the close")
			require.Empty(t, log.results, "responses before the close")
			resumed := resumeGET(ctx, t, ts, sid, log.lastID)
			defer resumed.Body.Close()
			require.Equal(t, http.StatusOK, resumed.StatusCode)
			log.readToEnd(t, newSSEReader(resumed.Body))
			log.check(t, 2)
		})
	}
}

// TestCloseSSEStreamClientResumes: the runtime client follows a server-initiated close by
// itself: it waits the retry interval, resumes with GET and returns the result, with every
// progress notification delivered once.
func TestCloseSSEStreamClientResumes(t *testing.T) {
	ctx := testCtx(t)
	ts := newTestServer(t, WithRetryInterval(20*time.Millisecond))
	ts.srv.AddTool(ToolSpec{Name: "poll"}, func(ctx context.Context, _ *CallToolRequest) (*CallToolResult, error) {
		for i := 1; i <= 4; i++ {
			if err := CallerFrom(ctx).NotifyProgress(ctx, float64(i), 4, ""); err != nil {
				return nil, err
			}
			if i%2 == 1 {
				if err := CallerFrom(ctx).CloseSSEStream(); err != nil {
					return nil, err
				}
			}
		}
		return &CallToolResult{Content: []Content{TextContent("polled")}}, nil
	})
	c := ts.newClient(t)
	var seen []float64
	res, err := c.CallTool(ctx, "poll", nil, WithProgress(func(p *ProgressParams) { seen = append(seen, p.Progress) }))
	if err != nil {
		t.Fatal(err)
	}
	if res.Text() != "polled" || fmt.Sprint(seen) != "[1 2 3 4]" {
		t.Fatalf("result %q progress %v, want \"polled\" and [1 2 3 4]", res.Text(), seen)
	}
}

// TestDisconnectIsNotCancellation: a client that drops an SSE response mid-way does not
// cancel the handler (Streamable HTTP transport: disconnection is not cancellation), and the next calls on the session are served normally.
func TestDisconnectIsNotCancellation(t *testing.T) {
	ctx := testCtx(t)
	ts := newTestServer(t, WithSSEResponses())
	gate := make(chan struct{})
	handlerErr := make(chan error, 1)
	const n = 5
	ts.srv.AddTool(ToolSpec{Name: "count"}, func(hctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		res, err := countTool(n, 1, gate, 0)(hctx, req)
		handlerErr <- errors.Join(err, hctx.Err())
		return res, err
	})
	sid := ts.initSession(ctx, t)
	resp := ts.do(ctx, t, rawReq{session: sid, body: wireToolCallProgress("1", "count", "", "tok")})
	r := newSSEReader(resp.Body)
	stream := checkPriming(t, mustNext(t, r))
	resp.Body.Close()
	waitUntil(ctx, t, "the server to notice the drop", func() bool { return streamDetached(ts, sid, stream) })

	for i := range 5 {
		call := ts.do(ctx, t, rawReq{session: sid, body: wireToolCall(strconv.Itoa(10+i), "echo", `{"next":true}`)})
		evs := readAllEvents(t, readBody(t, call))
		if len(evs) != 2 || !strings.Contains(evs[1].data, `"result"`) {
			t.Fatalf("call %d after the drop: %+v", i, evs)
		}
	}
	c := ts.newClient(t)
	if _, err := c.CallTool(ctx, "echo", nil); err != nil {
		t.Fatalf("another session after the drop: %v", err)
	}
	select {
	case err := <-handlerErr:
		t.Fatalf("the handler ended (%v) when its client disconnected", err)
	default:
	}
	close(gate)
	if err := recvWithin(ctx, t, "the handler to finish", handlerErr); err != nil {
		t.Fatalf("the dropped call's handler saw %v; a disconnect must not cancel it", err)
	}
	// Its events and response are kept for the client to resume.
	resumed := resumeGET(ctx, t, ts, sid, stream+"_0")
	defer resumed.Body.Close()
	log := &streamLog{stream: stream}
	log.readToEnd(t, newSSEReader(resumed.Body))
	log.check(t, n)
}

// TestCloseSSEStreamOverHTTP2: over HTTP/2, where the server cannot take the connection to
// end a response early, the handler runs on a worker (takeable) and its CloseSSEStream ends
// the stream at once; the client gets every progress notification once and the result, and
// nothing hangs.
func TestCloseSSEStreamOverHTTP2(t *testing.T) {
	srv := NewServer(Implementation{Name: "h2", Version: "1"}, WithLogger(discardLogger()), WithRetryInterval(20*time.Millisecond))
	srv.AddTool(ToolSpec{Name: "poll"}, func(ctx context.Context, _ *CallToolRequest) (*CallToolResult, error) {
		c := CallerFrom(ctx)
		if err := c.NotifyProgress(ctx, 1, 2, ""); err != nil {
			return nil, err
		}
		if err := c.CloseSSEStream(); err != nil {
			return nil, err
		}
		if err := c.NotifyProgress(ctx, 2, 2, ""); err != nil {
			return nil, err
		}
		return &CallToolResult{Content: []Content{TextContent("polled over " + c.Header().Get("X-Proto"))}}, nil
	})
	var protos []string
	var mu sync.Mutex
	hs := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		protos = append(protos, r.Proto)
		mu.Unlock()
		r.Header.Set("X-Proto", r.Proto)
		srv.ServeHTTP(w, r)
	}))
	hs.EnableHTTP2 = true
	hs.StartTLS()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		hs.Close()
	})
	c := NewClient(hs.URL, WithEra(EraLegacy), WithHTTPClient(hs.Client()))
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	var seen []float64
	res, err := c.CallTool(testCtx(t), "poll", nil, WithProgress(func(p *ProgressParams) { seen = append(seen, p.Progress) }))
	require.NoError(t, err)
	assert.Equal(t, "polled over HTTP/2.0", res.Text())
	assert.Equal(t, []float64{1, 2}, seen, "progress notifications")
	mu.Lock()
	defer mu.Unlock()
	assert.NotEmpty(t, protos)
	for _, p := range protos {
		assert.Equal(t, "HTTP/2.0", p, "every request over HTTP/2")
	}
}
