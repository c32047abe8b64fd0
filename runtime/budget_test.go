package runtime

import (
	"fmt"
	"net"
	"net/http"
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
	e := newHardenEnvOn(t, func(l net.Listener) net.Listener {
		tap = &connTap{Listener: l}
		return tap
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
	if err != nil {
		e.t.Fatal(err)
	}
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
		e.t.Fatal(err)
	}
	return conn
}

// checkGrowth fails the test if the heap grew from before by more than limit bytes.
func checkGrowth(t *testing.T, what string, before, limit int64) {
	t.Helper()
	grown := heapNow() - before
	t.Logf("%s: heap grew by %d KiB (limit %d KiB)", what, grown>>10, limit>>10)
	if grown > limit {
		t.Fatalf("%s: the heap grew by %d KiB, over the %d KiB allowed", what, grown>>10, limit>>10)
	}
}

// Resuming a stream replays its stored events event by event, a chunk at a time: GETs with
// Last-Event-ID that never read their answer cost a small constant each, not a copy of
// everything stored.
func TestBudgetReplayIsStreamed(t *testing.T) {
	e, tap := newTappedEnv(t, WithEventStore(NewMemoryEventStore(32<<20)), WithEventRetention(time.Minute))
	// 8 MiB of events on one stream, delivered and kept in the store for resumption.
	c, err := e.openSSE(e.ctx(), http.MethodPost, e.sid, toolCall("1", "stream", `{"n":64,"size":131072,"tag":"big"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		if _, ok := c.next(); !ok {
			break
		}
		n++
	}
	c.close()
	if n != 65 {
		t.Fatalf("read %d events, want 64 and the response", n)
	}
	streamID, _, _ := parseEventID(c.lastID)

	const gets = 8
	before := heapNow()
	seen := tap.count()
	for range gets {
		e.stuckGET(e.sid, map[string]string{"Last-Event-ID": streamID + "_0"})
	}
	// Every GET has started writing its replay (and is blocked on a client that does not read).
	if !waitFor(10*time.Second, func() bool {
		conns := tap.since(seen)
		if len(conns) < gets {
			return false
		}
		for _, c := range conns {
			if c.written.Load() == 0 {
				return false
			}
		}
		return true
	}) {
		t.Fatal("the resuming GETs were not answered")
	}
	// Each holds at most a chunk and one event: 8 of them well under 4 MiB, where one
	// buffer of the whole replay each would be 64 MiB.
	checkGrowth(t, "8 stuck replays of an 8 MiB stream", before, 4<<20)
	e.mustWork(e.sid)
}

// A resumption takes a stream over from the connection that held it, and closes that
// connection at once, even when it is blocked writing to a client that does not read: one
// connection per stream, and no goroutine or buffer held until the write timeout.
func TestBudgetTakeoverClosesReplaced(t *testing.T) {
	e, tap := newTappedEnv(t)
	c, err := e.openSSE(e.ctx(), http.MethodPost, e.sid, toolCall("1", "stream", `{"n":64,"size":131072,"tag":"t","gate":true}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.next(); !ok {
		t.Fatal("no first event")
	}
	select {
	case <-e.ctl.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the stream tool did not start")
	}
	c.close()
	streamID, _, _ := parseEventID(c.lastID)
	if !waitFor(10*time.Second, func() bool { return !e.streamAttached(e.sid, streamID) }) {
		t.Fatal("the server never noticed the client went away")
	}
	e.ctl.open() // 8 MiB of events, queued for a client that is gone

	seen := tap.count()
	e.stuckGET(e.sid, map[string]string{"Last-Event-ID": c.lastID})
	var stuck *tappedConn
	if !waitFor(10*time.Second, func() bool {
		conns := tap.since(seen)
		if len(conns) == 0 || conns[0].written.Load() == 0 {
			return false
		}
		stuck = conns[0]
		return true
	}) {
		t.Fatal("the first resumption was not answered")
	}
	// A second resumption of the same stream: the stuck one must be closed.
	done := make(chan *hardenResp, 1)
	go func() {
		r, _ := e.send(e.ctx(), http.MethodGet, e.sid, "", map[string]string{"Last-Event-ID": c.lastID})
		done <- r
	}()
	if !waitFor(10*time.Second, stuck.closed.Load) {
		t.Fatal("the connection that was taken over is still open")
	}
	select {
	case r := <-done:
		if r == nil || r.msg == nil || r.msg.Error != nil || len(r.events) != 65 {
			t.Fatalf("the second resumption did not get every event and the response: %d events, %s", len(r.events), dump(r))
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the second resumption never finished")
	}
	e.mustWork(e.sid)
}
