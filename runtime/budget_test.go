package runtime

import (
	"context"
	"fmt"
	"github.com/stretchr/testify/require"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The memory tests of this file each play one abuse against a real server on loopback and
// assert that the server's heap grows by no more than the budget that applies plus a small
// constant, and that the server still answers afterwards.

// connTap wraps a listener: every accepted connection gets a small kernel send buffer, so
// that a client that does not read blocks the server's writes at once (as a slow network
// would), and is watched: bytes written, and whether the server closed it.
type connTap struct {
	net.Listener
	mu    sync.Mutex
	conns []*tappedConn
}

type tappedConn struct {
	net.Conn
	written atomic.Int64
	closed  atomic.Bool
}

func (l *connTap) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4096)
	}
	t := &tappedConn{Conn: c}
	l.mu.Lock()
	l.conns = append(l.conns, t)
	l.mu.Unlock()
	return t, nil
}

// since returns the connections accepted after the first n.
func (l *connTap) since(n int) []*tappedConn {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n > len(l.conns) {
		return nil
	}
	return append([]*tappedConn(nil), l.conns[n:]...)
}

func (l *connTap) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

func (c *tappedConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.written.Add(int64(n))
	return n, err
}

func (c *tappedConn) Close() error {
	c.closed.Store(true)
	return c.Conn.Close()
}

// newTappedEnv is newHardenEnv on a tapped listener.
func newTappedEnv(t *testing.T, opts ...ServerOption) (*hardenEnv, *connTap) {
	t.Helper()
	var tap *connTap
	e := newHardenEnvOn(t, func(hs *httptest.Server) {
		tap = &connTap{Listener: hs.Listener}
		hs.Listener = tap
	}, opts...)
	return e, tap
}

// heapNow returns the bytes of live heap objects after a full collection.
func heapNow() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// stuckGET sends a GET on a raw connection with a small receive buffer and never reads the
// answer: a client that does not read. The connection is closed at the end of the test.
func (e *hardenEnv) stuckGET(sid string, hdr map[string]string) net.Conn {
	e.t.Helper()
	conn, err := net.Dial("tcp", e.hs.Listener.Addr().String())
	require.NoError(e.t, err)
	e.t.Cleanup(func() { conn.Close() })
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(4096)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "GET / HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n%s: %s\r\n%s: %s\r\n", e.hs.Listener.Addr(), headerSessionID, sid, headerProtocolVersion, LatestProtocolVersion)
	for k, v := range hdr {
		fmt.Fprintf(&b, "%s: %s\r\n", k, v)
	}
	b.WriteString("\r\n")
	if _, err := conn.Write([]byte(b.String())); err != nil {
		require.NoError(e.t, err)
	}
	return conn
}

// checkGrowth fails the test if the heap grew from before by more than limit bytes.
func checkGrowth(t *testing.T, what string, before, limit int64) {
	t.Helper()
	grown := heapNow() - before
	t.Logf("%s: heap grew by %d KiB (limit %d KiB)", what, grown>>10, limit>>10)
	require.Falsef(t, grown > limit, "%s: the heap grew by %d KiB, over the %d KiB allowed", what, grown>>10, limit>>10)
}

// Resuming a stream replays its stored events event by event, a chunk at a time, one replay
// per stream: GETs with Last-Event-ID that never read their answer cost a small constant, not a
// copy of everything stored each.
func TestBudgetReplayIsStreamed(t *testing.T) {
	e, tap := newTappedEnv(t, WithEventStore(NewMemoryEventStore(32<<20)), WithEventRetention(time.Minute))
	// 8 MiB of events on one stream, delivered and kept in the store for resumption.
	c, err := e.openSSE(e.ctx(), http.MethodPost, e.sid, toolCall("1", "stream", `{"n":64,"size":131072,"tag":"big"}`), nil)
	require.NoError(t, err)
	n := 0
	for {
		if _, ok := c.next(); !ok {
			break
		}
		n++
	}
	c.close()
	require.Falsef(t, n != 65, "read %d events, want 64 and the response", n)
	streamID, _, _ := parseEventID(c.lastID)

	const gets = 8
	before := heapNow()
	seen := tap.count()
	for range gets {
		e.stuckGET(e.sid, map[string]string{"Last-Event-ID": streamID + "_0"})
	}
	// The newest resumption of the stream replays it (and is blocked on a client that does
	// not read); the older ones lost the stream to it and their connections were closed.
	require.True(t, waitFor(10*time.Second, func() bool {
		conns := tap.since(seen)
		if len(conns) < gets {
			return false
		}
		writing, closed := 0, 0
		for _, c := range conns {
			switch {
			case c.closed.Load():
				closed++
			case c.written.Load() > 0:
				writing++
			}
		}
		return writing == 1 && closed == gets-1
	}), "the resuming GETs were not answered, or not taken over")
	// The replay holds at most a chunk and one event: well under 4 MiB, where one buffer of
	// the whole replay for each GET would be 64 MiB.
	checkGrowth(t, "8 stuck resumptions of an 8 MiB stream", before, 4<<20)
	e.mustWork(e.sid)
}

// A resumption takes a stream over from the connection that held it, and closes that
// connection at once, even when it is blocked writing to a client that does not read: one
// connection per stream, and no goroutine or buffer held until the write timeout.
func TestBudgetTakeoverClosesReplaced(t *testing.T) {
	e, tap := newTappedEnv(t)
	c, err := e.openSSE(e.ctx(), http.MethodPost, e.sid, toolCall("1", "stream", `{"n":64,"size":131072,"tag":"t","gate":true}`), nil)
	require.NoError(t, err)
	if _, ok := c.next(); !ok {
		require.Fail(t, "no first event")
	}
	select {
	case <-e.ctl.started:
	case <-time.After(10 * time.Second):
		require.Fail(t, "the stream tool did not start")
	}
	c.close()
	streamID, _, _ := parseEventID(c.lastID)
	require.True(t, waitFor(10*time.Second, func() bool { return !e.streamAttached(e.sid, streamID) }), "the server never noticed the client went away")
	e.ctl.open() // 8 MiB of events, queued for a client that is gone

	seen := tap.count()
	e.stuckGET(e.sid, map[string]string{"Last-Event-ID": c.lastID})
	var stuck *tappedConn
	require.True(t, waitFor(10*time.Second, func() bool {
		conns := tap.since(seen)
		if len(conns) == 0 || conns[0].written.Load() == 0 {
			return false
		}
		stuck = conns[0]
		return true
	}), "the first resumption was not answered")
	// A second resumption of the same stream: the stuck one must be closed.
	done := make(chan *hardenResp, 1)
	go func() {
		r, _ := e.send(e.ctx(), http.MethodGet, e.sid, "", map[string]string{"Last-Event-ID": c.lastID})
		done <- r
	}()
	require.True(t, waitFor(10*time.Second, stuck.closed.Load), "the connection that was taken over is still open")
	select {
	case r := <-done:
		if r == nil || r.msg == nil || r.msg.Error != nil || len(r.events) != 65 {
			require.Fail(t, fmt.Sprintf("the second resumption did not get every event and the response: %d events, %s", len(r.events), dump(r)))
		}
	case <-time.After(20 * time.Second):
		require.Fail(t, "the second resumption never finished")
	}
	e.mustWork(e.sid)
}

// initialize keeps what the session needs and no more: experimental capabilities of any size
// are not kept, and a clientInfo over the state budget is refused.
func TestBudgetInitializeState(t *testing.T) {
	e := newHardenEnv(t)
	big := `{"x":[` + strings.Repeat(`{"a":1,"b":[1,2]},`, 100000) + `1]}` // ~1.8 MiB of small objects
	body := req("1", "initialize", `{"protocolVersion":"`+LatestProtocolVersion+`","capabilities":{"experimental":`+big+`},"clientInfo":{"name":"x","version":"0"}}`)
	before := heapNow()
	const sessions = 20
	for range sessions {
		r, err := e.send(e.ctx(), http.MethodPost, "", body, nil)
		require.Falsef(t, err != nil || r.status != 200, "initialize: %v %s", err, dump(r))
	}
	// Kept as decoded maps, 20 of these would hold hundreds of MiB.
	checkGrowth(t, "20 sessions with 1.8 MiB of experimental capabilities", before, 2<<20)
	e.mustWork(e.sid)
}

// Subscriptions are bounded by the session's state budget, and the server author can refuse
// them.
func TestBudgetSubscriptions(t *testing.T) {
	e := newHardenEnv(t, WithMaxSessionState(8<<10), WithSubscribeHandler(func(_ context.Context, uri string) error {
		if strings.HasPrefix(uri, "forbidden:") {
			return Errorf(CodeResourceNotFound, "no such resource: %s", uri)
		}
		return nil
	}))
	r, err := e.call(e.ctx(), e.sid, "resources/subscribe", `{"uri":"forbidden:x"}`)
	require.NoError(t, err)
	checkHostile(t, hostileCase{status: 200, code: CodeResourceNotFound, msg: "no such resource"}, r)
	before := heapNow()
	accepted := 0
	for i := range 1000 {
		r, err := e.call(e.ctx(), e.sid, "resources/subscribe", fmt.Sprintf(`{"uri":"test://r/%0100d"}`, i))
		require.NoError(t, err)
		if r.msg != nil && r.msg.Error != nil {
			checkHostile(t, hostileCase{status: 200, code: CodeInvalidParams, msg: "subscription refused"}, r)
			break
		}
		accepted++
	}
	require.Falsef(t, accepted == 0 || accepted*(100+subscriptionOverhead) > 8<<10, "%d subscriptions accepted within 8 KiB of state", accepted)
	checkGrowth(t, "subscriptions up to the state budget", before, 256<<10)
	// Unsubscribing makes room again.
	if r, err := e.call(e.ctx(), e.sid, "resources/unsubscribe", fmt.Sprintf(`{"uri":"test://r/%0100d"}`, 0)); err != nil || r.msg == nil || r.msg.Error != nil {
		require.Fail(t, fmt.Sprintf("unsubscribe: %v %s", err, dump(r)))
	}
	if r, err := e.call(e.ctx(), e.sid, "resources/subscribe", `{"uri":"test://again"}`); err != nil || r.msg == nil || r.msg.Error != nil {
		require.Fail(t, fmt.Sprintf("subscribe after unsubscribe: %v %s", err, dump(r)))
	}
	e.mustWork(e.sid)
}

// Events queued for a client that does not read are bounded in bytes by the session's
// budget: the handler's sends fail with a clear error, and the response still gets through.
func TestBudgetQueueBytes(t *testing.T) {
	e := newHardenEnv(t, WithSessionBudget(1<<20))
	c, err := e.openSSE(e.ctx(), http.MethodPost, e.sid, toolCall("1", "stream", `{"n":64,"size":65536,"tag":"q","gate":true}`), nil)
	require.NoError(t, err)
	if _, ok := c.next(); !ok {
		require.Fail(t, "no first event")
	}
	<-e.ctl.started
	c.close()
	streamID, _, _ := parseEventID(c.lastID)
	require.True(t, waitFor(10*time.Second, func() bool { return !e.streamAttached(e.sid, streamID) }), "the server never noticed the client went away")
	before := heapNow()
	e.ctl.open() // 4 MiB of events for a client that is gone
	require.True(t, waitFor(10*time.Second, func() bool { return e.runningHandlers() == 0 }), "the handler never finished")
	checkGrowth(t, "4 MiB sent to a stream nobody reads, 1 MiB budget", before, 1<<20+512<<10)
	r, err := e.send(e.ctx(), http.MethodGet, e.sid, "", map[string]string{"Last-Event-ID": c.lastID})
	require.Falsef(t, err != nil || r.msg == nil, "resuming: %v %s", err, dump(r))
	if res, err := toolResult(r); err != nil || !strings.Contains(res.Text(), "memory budget") {
		require.Fail(t, fmt.Sprintf("the response does not say the budget was spent: %s", dump(r)))
	}
	e.mustWork(e.sid)
}

// Responses of requests whose client went away are kept for a resumption only within the
// session's budget; beyond it they are dropped (logged), and a resumption gets 404.
func TestBudgetOrphanResponses(t *testing.T) {
	e := newHardenEnv(t, WithSessionBudget(1<<20))
	const calls = 24
	var ids []string
	for i := range calls {
		c, err := e.openSSE(e.ctx(), http.MethodPost, e.sid, toolCall(fmt.Sprint(100+i), "stream", `{"n":0,"items":20000,"tag":"o","gate":true}`), nil)
		require.NoError(t, err)
		if _, ok := c.next(); !ok {
			require.Fail(t, "no first event")
		}
		<-e.ctl.started
		c.close()
		ids = append(ids, c.lastID)
	}
	for _, id := range ids {
		streamID, _, _ := parseEventID(id)
		require.True(t, waitFor(10*time.Second, func() bool { return !e.streamAttached(e.sid, streamID) }), "the server never noticed a client went away")
	}
	before := heapNow()
	e.ctl.open() // 24 responses of ~400 KiB each, for clients that are gone
	require.True(t, waitFor(10*time.Second, func() bool { return e.runningHandlers() == 0 }), "the handlers never finished")
	checkGrowth(t, "24 orphaned responses of 400 KiB, 1 MiB budget", before, 1<<20+512<<10)
	require.Contains(t, e.log.String(), "the response was dropped", "no dropped response was logged")
	dropped := 0
	for _, id := range ids {
		r, err := e.send(e.ctx(), http.MethodGet, e.sid, "", map[string]string{"Last-Event-ID": id})
		require.NoError(t, err)
		if r.status == http.StatusNotFound {
			dropped++
		} else if r.msg == nil || r.msg.Error != nil {
			require.Fail(t, fmt.Sprintf("a kept response did not resume: %s", dump(r)))
		}
	}
	require.Falsef(t, dropped == 0 || dropped == calls, "%d of %d responses dropped; want some kept, the rest dropped", dropped, calls)
	e.mustWork(e.sid)
}

// A request's _meta is decoded once, and is bounded: its cost in allocations stays a small
// multiple of its size (it was decoded twice, at 36 times its size).
func TestBudgetMetaDecodedOnce(t *testing.T) {
	e := newHardenEnv(t)
	var meta strings.Builder
	meta.WriteString(`{"progressToken":"p"`)
	for i := 0; meta.Len() < 60<<10; i++ {
		fmt.Fprintf(&meta, `,"k%d":1`, i)
	}
	meta.WriteString("}")
	body := req("1", "tools/call", `{"name":"len","arguments":{},"_meta":`+meta.String()+`}`)
	const calls = 20
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range calls {
		r, err := e.send(e.ctx(), http.MethodPost, e.sid, body, nil)
		require.Falsef(t, err != nil || r.msg == nil || r.msg.Error != nil, "call: %v %s", err, dump(r))
	}
	runtime.ReadMemStats(&after)
	per := float64(after.TotalAlloc-before.TotalAlloc) / calls / float64(meta.Len())
	t.Logf("allocated %.1f bytes per byte of _meta", per)
	if per > 30 { // once: about 20 (24 under -race); twice, as before: about 40
		require.Fail(t, fmt.Sprintf("allocated %.1f bytes per byte of _meta: decoded more than once", per))
	}
}

// tableSize returns the number of sessions in the server's table.
func (e *hardenEnv) tableSize() int {
	e.srv.mu.RLock()
	defer e.srv.mu.RUnlock()
	return len(e.srv.sessions)
}

// A flood of initializes cannot lock other clients out: sessions that never complete the
// handshake expire fast and are the first to go when the table is full, then idle ones;
// sessions at work (here: one with its GET stream open) are never evicted.
func TestBudgetSessionTable(t *testing.T) {
	const max = 20
	// No grace period: one client's flood here churns through its own half-open sessions
	// (TestHostileSessionFlood covers the grace period and other clients' newcomers).
	e := newHardenEnv(t, WithMaxSessions(max), WithHandshakeTimeout(200*time.Millisecond), withEvictionGrace(0))
	live := e.initialize()
	get, err := e.openSSE(e.ctx(), http.MethodGet, live, "", nil)
	require.NoError(t, err)
	defer get.close()
	initBody := req("1", "initialize", `{"protocolVersion":"`+LatestProtocolVersion+`","capabilities":{},"clientInfo":{"name":"flood","version":"0"}}`)
	ctx := e.ctx() // one for the whole flood: each e.ctx() is kept until the test ends
	flood := func(n int, handshake bool) {
		for range n {
			r, err := e.send(ctx, http.MethodPost, "", initBody, nil)
			require.Falsef(t, err != nil || r.status != http.StatusOK, "initialize %d under pressure: %v %s", n, err, dump(r))
			if handshake {
				sid := r.header.Get(headerSessionID)
				if a, err := e.send(ctx, http.MethodPost, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil); err != nil || a.status != http.StatusAccepted {
					require.Fail(t, fmt.Sprintf("notifications/initialized: %v %s", err, dump(a)))
				}
			}
		}
	}
	before := heapNow()
	flood(1000, false) // initialize only: each evicts an older half-open one
	if n := e.tableSize(); n > max {
		require.Fail(t, fmt.Sprintf("%d sessions in a table of %d", n, max))
	}
	e.mustWork(e.sid) // established sessions were not touched
	e.mustWork(live)
	flood(200, true) // complete handshakes: idle sessions go, least recently used first
	if n := e.tableSize(); n > max {
		require.Fail(t, fmt.Sprintf("%d sessions in a table of %d", n, max))
	}
	e.mustWork(live) // the session with its GET stream open is at work: never evicted
	// The test's log of the server holds a few hundred bytes per session started.
	checkGrowth(t, "1200 initializes into a table of 20", before, 512<<10+2*int64(len(e.log.String())))
	// Sessions that never complete the handshake expire on their own, fast.
	flood(5, false)
	require.True(t, waitFor(10*time.Second, func() bool {
		e.srv.mu.RLock()
		defer e.srv.mu.RUnlock()
		for _, s := range e.srv.sessions {
			if !s.established.Load() {
				return false
			}
		}
		return true
	}), "sessions that never completed the handshake were not reaped")
	e.mustWork(live)
}

// The memory event store has a bound for all sessions together, not only per session: the
// oldest streams of any session go first, and resuming them is refused, never replayed
// with a gap.
func TestBudgetEventStoreTotal(t *testing.T) {
	require.False(t, NewMemoryEventStore(0).maxTotal != 256<<20, "the default total changed; update the README")
	store := NewMemoryEventStore(1<<20, WithMaxTotalEventBytes(2<<20))
	ctx := context.Background()
	before := heapNow()
	for s := range 200 {
		for seq := uint64(1); seq <= 4; seq++ {
			data := make([]byte, 32<<10) // 128 KiB per session, 25 MiB in all
			require.NoError(t, store.Append(ctx, fmt.Sprint("s", s), "1", seq, data))
		}
	}
	store.mu.Lock()
	total, nstreams, order := store.total, store.nstreams, len(store.order)
	store.mu.Unlock()
	require.Falsef(t, total > 2<<20, "the store holds %d bytes, over its total of 2 MiB", total)
	require.Falsef(t, order > 2*nstreams+1024, "the store's order has %d entries for %d streams", order, nstreams)
	checkGrowth(t, "25 MiB appended to a store bounded at 2 MiB", before, 3<<20)
	if err := store.Replay(ctx, "s0", "1", 0, func(uint64, []byte) error { return nil }); err != ErrEventsEvicted {
		require.Fail(t, fmt.Sprintf("replay of the oldest session's evicted stream: %v", err))
	}
	n := 0
	if err := store.Replay(ctx, "s199", "1", 0, func(uint64, []byte) error { n++; return nil }); err != nil || n != 4 {
		require.Fail(t, fmt.Sprintf("replay of the newest stream: %v, %d events", err, n))
	}
	for s := range 200 {
		_ = store.DeleteSession(ctx, fmt.Sprint("s", s))
	}
	store.mu.Lock()
	defer store.mu.Unlock()
	require.Falsef(t, store.total != 0 || store.nstreams != 0, "after deleting every session: %d bytes, %d streams", store.total, store.nstreams)
}

// Ids are echoed in full only where JSON-RPC requires it (the response's own id): error
// messages and logs carry the first 64 bytes.
func TestBudgetLogsCutIDs(t *testing.T) {
	e := newHardenEnv(t)
	huge := strings.Repeat("i", 100<<10)
	r, err := e.send(e.ctx(), http.MethodPost, e.sid, `{"jsonrpc":"2.0","id":"`+huge+`","result":{}}`, nil)
	require.Falsef(t, err != nil || r.status != http.StatusBadRequest, "%v %s", err, dump(r))
	r, err = e.send(e.ctx(), http.MethodPost, e.sid, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"`+huge+`"}}`, nil)
	require.Falsef(t, err != nil || r.status != http.StatusAccepted, "%v %s", err, dump(r))
	require.NotContainsf(t, e.log.String(), strings.Repeat("i", 100), "the log echoes an attacker-sized id: %d bytes of log", len(e.log.String()))
	e.mustWork(e.sid)
}

// A takeover also ends a connection that was idle (its writer waiting for events), not only
// one blocked in a write.
func TestBudgetTakeoverClosesIdle(t *testing.T) {
	e := newHardenEnv(t)
	c, err := e.openSSE(e.ctx(), http.MethodPost, e.sid, toolCall("1", "stream", `{"n":1,"size":10,"tag":"i","gate":true}`), nil)
	require.NoError(t, err)
	defer c.close()
	if _, ok := c.next(); !ok {
		require.Fail(t, "no first event")
	}
	<-e.ctl.started
	last := c.lastID
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		for {
			if _, ok := c.next(); !ok {
				return
			}
		}
	}()
	done := make(chan *hardenResp, 1)
	go func() {
		r, _ := e.send(e.ctx(), http.MethodGet, e.sid, "", map[string]string{"Last-Event-ID": last})
		done <- r
	}()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		require.Fail(t, "the idle connection that was taken over is still open")
	}
	e.ctl.open()
	select {
	case r := <-done:
		require.Falsef(t, r == nil || r.msg == nil || r.msg.Error != nil, "the resumption: %s", dump(r))
	case <-time.After(10 * time.Second):
		require.Fail(t, "the resumption never finished")
	}
	e.mustWork(e.sid)
}

// A POST body that trickles in is bounded by the runtime itself: 408, and the connection
// is closed, whatever http.Server the handler is mounted on.
func TestBudgetSlowBody(t *testing.T) {
	e := newHardenEnv(t, WithBodyReadTimeout(200*time.Millisecond))
	conn, err := net.Dial("tcp", e.hs.Listener.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n%s: %s\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\":", e.hs.Listener.Addr(), headerSessionID, e.sid)
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	b, err := io.ReadAll(conn) // to EOF: the server closes the connection
	require.NoError(t, err, "the slow request's connection was not closed")
	require.Falsef(t, !strings.HasPrefix(string(b), "HTTP/1.1 408") || !strings.Contains(string(b), "did not arrive within 200ms"), "want 408 naming the limit, got %q", truncate(string(b), 300))
	e.mustWork(e.sid)
}

// The hardened http.Server the README shows, with a ReadTimeout against slow headers and
// bodies, does not cut long streams: net/http clears the read deadline once a body is read.
func TestBudgetReadTimeoutKeepsStreams(t *testing.T) {
	const readTimeout = 100 * time.Millisecond
	e := newHardenEnvOn(t, func(hs *httptest.Server) { hs.Config.ReadTimeout = readTimeout })
	get, err := e.openSSE(e.ctx(), http.MethodGet, e.sid, "", nil)
	require.NoError(t, err)
	defer get.close()
	post, err := e.openSSE(e.ctx(), http.MethodPost, e.sid, toolCall("1", "notify_block", `{"tag":"rt"}`), nil)
	require.NoError(t, err)
	defer post.close()
	<-e.ctl.started
	time.Sleep(5 * readTimeout) // the streams must outlive the ReadTimeout
	e.srv.AddTool(ToolSpec{Name: "late"}, func(context.Context, *CallToolRequest) (*CallToolResult, error) { return nil, nil })
	if d, ok := get.next(); !ok || !strings.Contains(d, "list_changed") {
		require.Fail(t, fmt.Sprintf("the GET stream was cut: %q", d))
	}
	e.ctl.open()
	var last string
	for {
		d, ok := post.next()
		if !ok {
			break
		}
		last = d
	}
	require.Containsf(t, last, "released rt", "the POST stream was cut before its response: last event %q", last)
}
