package runtime

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// One test per limit: hitting it gives a clear error, the server and the session keep
// working, and nothing hangs (every wait is bounded).

// The documented defaults: a change here must change the README's Security section too.
func TestLimitDefaults(t *testing.T) {
	t.Parallel()
	c := defaultServerConfig()
	want := map[string][2]int64{
		"max body bytes":           {c.maxBodyBytes, 4 << 20},
		"max sessions":             {int64(c.maxSessions), 10000},
		"max in-flight/session":    {int64(c.maxInflight), 256},
		"max queued events/stream": {int64(c.maxQueuedEvents), 10000},
		"handler timeout":          {int64(c.handlerTimeout), int64(10 * time.Minute)},
		"session idle timeout":     {int64(c.sessionIdleTimeout), int64(30 * time.Minute)},
		"client request timeout":   {int64(c.callerRequestTimeout), int64(5 * time.Minute)},
		"event store bytes":        {int64(c.eventStore.(*MemoryEventStore).maxBytes), 16 << 20},
		"session budget":           {c.sessionBudget, 64 << 20},
		"server budget":            {c.serverBudget, 1 << 30},
		"session state":            {c.maxSessionState, 64 << 10},
		"handshake timeout":        {int64(c.handshakeTimeout), int64(10 * time.Second)},
		"body read timeout":        {int64(c.bodyReadTimeout), int64(30 * time.Second)},
	}
	for name, v := range want {
		assert.Falsef(t, v[0] != v[1], "default %s = %d, want %d", name, v[0], v[1])
	}
	cc := defaultClientConfig()
	assert.Falsef(t, cc.maxEventSize != 64<<20 || cc.maxResponse != 64<<20 || cc.maxResumes != 5 || cc.callTimeout != 5*time.Minute, "client defaults changed: %+v", cc)
	assert.Falsef(t, cc.maxServerRequests != 16 || cc.notificationBudget != 16<<20 || cc.crossOriginRedirects || minReconnectDelay != 250*time.Millisecond || maxReconnectDelay != 30*time.Second, "client budget defaults changed: %+v", cc)
	assert.True(t, c.dnsRebinding, "DNS-rebinding protection must be on by default")
}

func TestLimitBodySize(t *testing.T) {
	t.Parallel()
	e := newHardenEnv(t, WithMaxBodyBytes(1024))
	small := toolCall("1", "len", `{"s":"`+strings.Repeat("a", 1024-128)+`"}`)
	big := toolCall("2", "len", `{"s":"`+strings.Repeat("a", 1024)+`"}`)
	r, err := e.send(e.ctx(), http.MethodPost, e.sid, small, nil)
	require.Falsef(t, err != nil || r.status != 200 || r.msg == nil || r.msg.Error != nil, "a body under the limit failed: %v %s", err, dump(r))
	r, err = e.send(e.ctx(), http.MethodPost, e.sid, big, nil)
	require.NoError(t, err)
	checkHostile(t, hostileCase{status: 413, code: CodeInvalidRequest, msg: "request body exceeds the limit of 1024 bytes"}, r)
	e.mustWork(e.sid)
}

func TestLimitSessions(t *testing.T) {
	t.Parallel()
	e := newHardenEnv(t, WithMaxSessions(2))
	second := e.initialize()
	// Both sessions at work (a GET stream open): initialize cannot make room by ending an
	// idle one (TestBudgetSessionTable covers that).
	for _, sid := range []string{e.sid, second} {
		g, err := e.openSSE(e.ctx(), http.MethodGet, sid, "", nil)
		require.NoError(t, err)
		defer g.close()
	}
	body := req("1", "initialize", `{"protocolVersion":"`+LatestProtocolVersion+`","capabilities":{},"clientInfo":{"name":"x","version":"0"}}`)
	r, err := e.send(e.ctx(), http.MethodPost, "", body, nil)
	require.NoError(t, err)
	checkHostile(t, hostileCase{status: 503, code: CodeInternalError, msg: "too many sessions"}, r)
	require.False(t, r.header.Get(headerSessionID) != "", "a refused initialize handed out a session ID")
	e.mustWork(e.sid)
	e.mustWork(second)
	// Ending a session makes room.
	if d, err := e.send(e.ctx(), http.MethodDelete, second, "", nil); err != nil || d.status != 200 {
		require.Fail(t, fmt.Sprintf("DELETE: %v %s", err, dump(d)))
	}
	e.mustWork(e.initialize())
}

func TestLimitInflight(t *testing.T) {
	t.Parallel()
	e := newHardenEnv(t, WithMaxInflight(2))
	var wg sync.WaitGroup
	results := make(chan *hardenResp, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := e.send(e.ctx(), http.MethodPost, e.sid, toolCall(strconv.Itoa(100+i), "block", `{"tag":"b"}`), nil)
			assert.NoError(t, err, "blocked call")
			results <- r
		}()
	}
	for range 2 {
		select {
		case <-e.ctl.started:
		case <-time.After(10 * time.Second):
			require.Fail(t, "the blocking calls did not start")
		}
	}
	r, err := e.call(e.ctx(), e.sid, "ping", `{}`)
	require.NoError(t, err)
	checkHostile(t, hostileCase{status: 429, code: CodeInvalidRequest, msg: "too many requests in flight on this session (limit 2)"}, r)
	// Another session is not affected.
	e.mustWork(e.initialize())
	e.ctl.open()
	wg.Wait()
	close(results)
	for r := range results {
		assert.Falsef(t, r == nil || r.status != 200 || r.msg == nil || r.msg.Error != nil, "a call under the limit failed: %s", dump(r))
	}
	e.mustWork(e.sid)
}

// sseConn is a POST whose SSE answer the test reads event by event.
type sseConn struct {
	resp   *http.Response
	sc     *bufio.Scanner
	lastID string
}

func (e *hardenEnv) openSSE(ctx context.Context, method, sid, body string, hdr map[string]string) (*sseConn, error) {
	hreq, err := http.NewRequestWithContext(ctx, method, e.url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	if method == http.MethodPost {
		hreq.Header.Set("Content-Type", "application/json")
		hreq.Header.Set("Accept", "application/json, text/event-stream")
	} else {
		hreq.Header.Set("Accept", "text/event-stream")
	}
	hreq.Header.Set(headerSessionID, sid)
	for k, v := range hdr {
		hreq.Header.Set(k, v)
	}
	resp, err := e.hc.Do(hreq)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		resp.Body.Close()
		return nil, errors.New("not an SSE answer: " + resp.Status + " " + resp.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	return &sseConn{resp: resp, sc: sc}, nil
}

// next returns the data of the next event that has data; ok is false at the end.
func (c *sseConn) next() (data string, ok bool) {
	for c.sc.Scan() {
		line := c.sc.Text()
		if v, found := strings.CutPrefix(line, "id: "); found {
			c.lastID = v
		}
		if v, found := strings.CutPrefix(line, "data: "); found && v != "" {
			data = v
		}
		if line == "" && data != "" {
			return data, true
		}
	}
	return data, data != ""
}

func (c *sseConn) close() { c.resp.Body.Close() }

// streamAttached reports whether a stream of the session has a connection writing it.
func (e *hardenEnv) streamAttached(sid, streamID string) bool {
	e.srv.mu.RLock()
	sess := e.srv.sessions[sid]
	e.srv.mu.RUnlock()
	if sess == nil {
		return false
	}
	st := sess.lookupStream(streamID)
	if st == nil {
		return false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.attached
}

// A client that stops reading: the events of its stream pile up to the limit, the handler's
// sends then fail with a clear error (logged), and the response still reaches the client
// when it resumes: nothing is lost silently and nothing waits forever.
func TestLimitQueuedEvents(t *testing.T) {
	t.Parallel()
	e := newHardenEnv(t, WithMaxQueuedEvents(8))
	c, err := e.openSSE(e.ctx(), http.MethodPost, e.sid, toolCall("1", "stream", `{"n":50,"size":10,"tag":"q","gate":true}`), nil)
	require.NoError(t, err)
	if d, ok := c.next(); !ok || !strings.Contains(d, "first of q") {
		require.Fail(t, fmt.Sprintf("first event: %q", d))
	}
	select {
	case <-e.ctl.started:
	case <-time.After(10 * time.Second):
		require.Fail(t, "the stream tool did not start")
	}
	c.close()
	streamID, _, _ := parseEventID(c.lastID)
	require.True(t, waitFor(10*time.Second, func() bool { return !e.streamAttached(e.sid, streamID) }), "the server never noticed the client went away")
	e.ctl.open() // the tool now sends 50 events to a stream nobody reads
	require.Truef(t, waitFor(10*time.Second, func() bool { return strings.Contains(e.log.String(), "stream is full") }), "the full stream was not logged:\n%s", e.log.String())
	// Resume: the queued events, then the response, which says what happened.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := e.send(ctx, http.MethodGet, e.sid, "", map[string]string{"Last-Event-ID": c.lastID})
	require.NoError(t, err, "resuming the full stream")
	require.Falsef(t, r.msg == nil, "the response was lost: %s", dump(r))
	if n := len(r.events); n != 8+1 {
		assert.Fail(t, fmt.Sprintf("resumed %d events, want the 8 queued ones and the response", n))
	}
	var text string
	if r.msg.Error != nil {
		text = r.msg.Error.Message
	} else if res, err := toolResult(r); err == nil {
		text = res.Text()
	}
	assert.Containsf(t, text, "stream is full", "the response does not say the stream was full: %s", dump(r))
	e.mustWork(e.sid)
}

func TestLimitHandlerTimeout(t *testing.T) {
	t.Parallel()
	e := newHardenEnv(t, WithHandlerTimeout(100*time.Millisecond))
	r, err := e.call(e.ctx(), e.sid, "tools/call", `{"name":"block","arguments":{"tag":"t"}}`)
	require.NoError(t, err)
	checkHostile(t, hostileCase{status: 200, code: CodeInternalError, msg: "request timed out"}, r)
	<-e.ctl.started
	e.mustWork(e.sid)
}

// Panicking handlers are recovered into a JSON-RPC internal error (not an isError result: a
// panic is a bug in the server, not something the model can correct), logged with the
// stack, and the server goes on.
func TestLimitHandlerPanic(t *testing.T) {
	t.Parallel()
	e := newHardenEnv(t)
	for _, tool := range []string{"panic", "panic_typed"} {
		r, err := e.call(e.ctx(), e.sid, "tools/call", `{"name":"`+tool+`","arguments":{}}`)
		require.NoError(t, err)
		checkHostile(t, hostileCase{status: 200, code: CodeInternalError, msg: `internal error: the tool "` + tool + `" handler panicked`}, r)
		require.NotContainsf(t, string(r.body), "goroutine", "the stack leaked to the client: %s", r.body)
		e.mustWork(e.sid)
	}
	log := e.log.String()
	for _, want := range []string{`msg="mcp: handler panicked"`, "raw tool exploded", "nil pointer dereference", "stack="} {
		assert.Containsf(t, log, want, "the log lacks %q:\n%s", want, truncate(log, 4000))
	}
}

// The memory event store stays within its bound across streams: the oldest streams go
// first, and a resumption of an evicted stream gets a clear 404, never another stream's data.
func TestLimitEventStoreBytes(t *testing.T) {
	t.Parallel()
	store := NewMemoryEventStore(4096)
	ctx := context.Background()
	data := []byte(strings.Repeat("e", 1000))
	for s := 1; s <= 10; s++ {
		for seq := uint64(1); seq <= 2; seq++ {
			require.NoError(t, store.Append(ctx, "sess", strconv.Itoa(s), seq, data))
		}
		store.mu.Lock()
		n := store.sessions["sess"].bytes
		store.mu.Unlock()
		require.Falsef(t, n > 4096, "after stream %d the store holds %d bytes, over its 4096 bound", s, n)
	}
	count := func(stream string) int {
		n := 0
		_ = store.Replay(ctx, "sess", stream, 0, func(uint64, []byte) error { n++; return nil })
		return n
	}
	require.Falsef(t, count("1") != 0 || count("10") != 2, "eviction kept the wrong streams: stream 1 has %d events, stream 10 %d", count("1"), count("10"))
	if n := 0; store.Replay(ctx, "other", "10", 0, func(uint64, []byte) error { n++; return nil }) != nil || n != 0 {
		require.Fail(t, "another session's events were replayed")
	}

	// Through the server: a small store still serves resumption of the live stream.
	e := newHardenEnv(t, WithEventStore(NewMemoryEventStore(2048)))
	c, err := e.openSSE(e.ctx(), http.MethodPost, e.sid, toolCall("1", "stream", `{"n":3,"size":100,"tag":"s","gate":true}`), nil)
	require.NoError(t, err)
	if _, ok := c.next(); !ok {
		require.Fail(t, "no first event")
	}
	<-e.ctl.started
	c.close()
	streamID, _, _ := parseEventID(c.lastID)
	require.True(t, waitFor(10*time.Second, func() bool { return !e.streamAttached(e.sid, streamID) }), "the server never noticed the client went away")
	e.ctl.open()
	r, err := e.send(e.ctx(), http.MethodGet, e.sid, "", map[string]string{"Last-Event-ID": streamID + "_0"})
	require.Falsef(t, err != nil || r.msg == nil || r.msg.Error != nil, "resume: %v %s", err, dump(r))
	if n := len(r.events); n != 1+3+1 {
		assert.Fail(t, fmt.Sprintf("resumed %d events, want 5 (first, 3 more, response)", n))
	}
	e.mustWork(e.sid)
}

// The client bounds what it reads: an SSE event or a JSON body over WithMaxEventSize is a
// clear error at once, not a retry loop, and the client keeps working.
func TestLimitClientMaxEventSize(t *testing.T) {
	t.Parallel()
	e := newHardenEnv(t)
	c := NewClient(e.url, WithEra(EraLegacy), WithMaxEventSize(4096), WithLogger(e.logger()))
	defer c.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name string
		args string
	}{
		{"SSE event", `{"n":1,"size":8192,"tag":"big"}`},
		{"JSON body", `{"n":0,"items":2000,"tag":"big"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, err := c.CallTool(ctx, "stream", json.RawMessage(tc.args))
			require.Error(t, err, "an answer over the client's limit was accepted")
			assert.Containsf(t, err.Error(), "4096", "the error does not name the limit: %v", err)
			require.Falsef(t, ctx.Err() != nil, "the call only ended with its context (%v): %v", time.Since(start), err)
			if _, err := c.CallTool(ctx, "echo", json.RawMessage(`{}`)); err != nil {
				require.Fail(t, fmt.Sprintf("the client is broken after the limit: %v", err))
			}
		})
	}
}

// logger returns a logger writing into the env's log.
func (e *hardenEnv) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(e.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// A client that never reads its SSE answer does not hold the server's writer forever: after
// the write timeout the server drops the connection (the stream stays resumable), and the
// handler finishes.
func TestLimitWriteTimeout(t *testing.T) {
	t.Parallel()
	require.False(t, defaultServerConfig().writeTimeout != time.Minute, "the default write timeout changed; update the README")
	e := newHardenEnv(t, WithWriteTimeout(200*time.Millisecond))
	conn, err := net.Dial("tcp", e.hs.Listener.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	body := toolCall("1", "stream", `{"n":500,"size":65536,"tag":"stuck"}`)
	fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n%s: %s\r\nContent-Length: %d\r\n\r\n%s",
		e.hs.Listener.Addr(), headerSessionID, e.sid, len(body), body)
	require.Truef(t, waitFor(20*time.Second, func() bool { return strings.Contains(e.log.String(), "client went away mid-stream") }), "the writer never gave up on the client that does not read:\n%s", truncate(e.log.String(), 3000))
	require.True(t, waitFor(10*time.Second, func() bool { return !e.streamAttached(e.sid, "1") && e.runningHandlers() == 0 }), "the stream is still held, or its handler still running")
	// The server closed the connection: the client finds its end without reading it all.
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.Copy(io.Discard, conn); err != nil && !errors.Is(err, syscall.ECONNRESET) {
		require.Fail(t, fmt.Sprintf("the stuck connection was not closed: %v", err))
	}
	e.mustWork(e.sid)
}

// The memory event store keeps its bound even for one stream, and never replays around a
// gap: a resumption that would skip evicted events gets a clear error (404 on the wire)
// instead of a stream with events silently missing.
func TestLimitEventStoreEviction(t *testing.T) {
	t.Parallel()
	store := NewMemoryEventStore(3000)
	ctx := context.Background()
	data := []byte(strings.Repeat("e", 1000))
	for seq := uint64(1); seq <= 10; seq++ {
		require.NoError(t, store.Append(ctx, "s", "1", seq, data))
	}
	store.mu.Lock()
	n := store.sessions["s"].bytes
	store.mu.Unlock()
	require.Falsef(t, n > 3000, "one stream holds %d bytes, over the store's 3000", n)
	var got []uint64
	if err := store.Replay(ctx, "s", "1", 0, func(seq uint64, _ []byte) error { got = append(got, seq); return nil }); !errors.Is(err, ErrEventsEvicted) || len(got) != 0 {
		require.Fail(t, fmt.Sprintf("replay across evicted events: %v, replayed %v", err, got))
	}
	if err := store.Replay(ctx, "s", "1", 7, func(seq uint64, _ []byte) error { got = append(got, seq); return nil }); err != nil || !slices.Equal(got, []uint64{8, 9, 10}) {
		require.Fail(t, fmt.Sprintf("replay after the evicted events: %v, %v", err, got))
	}
	// A whole stream evicted by newer ones.
	_ = store.Append(ctx, "s", "2", 1, data)
	_ = store.Append(ctx, "s", "2", 2, data)
	_ = store.Append(ctx, "s", "2", 3, data)
	if err := store.Replay(ctx, "s", "1", 9, func(uint64, []byte) error { return nil }); !errors.Is(err, ErrEventsEvicted) {
		require.Fail(t, fmt.Sprintf("replay of an evicted stream: %v", err))
	}

	// On the wire: a live stream whose first event was evicted by another stream's events.
	e := newHardenEnv(t, WithEventStore(NewMemoryEventStore(2048)))
	c, err := e.openSSE(e.ctx(), http.MethodPost, e.sid, toolCall("1", "stream", `{"n":0,"size":10,"tag":"ev","gate":true}`), nil)
	require.NoError(t, err)
	if _, ok := c.next(); !ok {
		require.Fail(t, "no first event")
	}
	<-e.ctl.started
	c.close()
	streamID, _, _ := parseEventID(c.lastID)
	require.True(t, waitFor(10*time.Second, func() bool { return !e.streamAttached(e.sid, streamID) }), "the server never noticed the client went away")
	if r, err := e.call(e.ctx(), e.sid, "tools/call", `{"name":"stream","arguments":{"n":5,"size":1000,"tag":"big"}}`); err != nil || r.msg == nil || r.msg.Error != nil {
		require.Fail(t, fmt.Sprintf("the evicting call: %v %s", err, dump(r)))
	}
	r, err := e.send(e.ctx(), http.MethodGet, e.sid, "", map[string]string{"Last-Event-ID": streamID + "_0"})
	require.NoError(t, err)
	checkHostile(t, hostileCase{status: 404, code: CodeInvalidRequest, msg: "no longer stored"}, r)
	// From the event the client did receive, nothing is missing: the stream resumes.
	done := make(chan *hardenResp, 1)
	go func() {
		r, _ := e.send(e.ctx(), http.MethodGet, e.sid, "", map[string]string{"Last-Event-ID": c.lastID})
		done <- r
	}()
	e.ctl.open()
	select {
	case r := <-done:
		require.Falsef(t, r == nil || r.msg == nil || r.msg.Error != nil, "resuming from the last event received: %s", dump(r))
	case <-time.After(15 * time.Second):
		require.Fail(t, "the resumption never finished")
	}
	e.mustWork(e.sid)
}
