package runtime

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	goruntime "runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rawStream is a GET stream read off a bare connection, the way a client that holds many of
// them would: the response parsed by net/http (its chunked body decoded), nothing else.
type rawStream struct {
	conn net.Conn
	resp *http.Response
	br   *bufio.Reader // the body's lines
}

// openRawStream sends a GET for session sid's stream on a new connection (proto: "HTTP/1.1"
// or "HTTP/1.0"; lastEventID: a resumption, or "") and reads the response's head.
func openRawStream(t *testing.T, e *hardenEnv, sid, proto, lastEventID string) *rawStream {
	t.Helper()
	conn, err := net.DialTimeout("tcp", e.hs.Listener.Addr().String(), testTimeout)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	hdr := ""
	if lastEventID != "" {
		hdr = "Last-Event-ID: " + lastEventID + "\r\n"
	}
	_, err = fmt.Fprintf(conn, "GET / %s\r\nHost: %s\r\nAccept: text/event-stream\r\nMcp-Session-Id: %s\r\nMcp-Protocol-Version: %s\r\n%s\r\n",
		proto, e.hs.Listener.Addr(), sid, LatestProtocolVersion, hdr)
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(testTimeout)))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	return &rawStream{conn: conn, resp: resp, br: bufio.NewReader(resp.Body)}
}

// next returns the data and ID of the stream's next event that carries data.
func (rs *rawStream) next(t *testing.T) (data, id string) {
	t.Helper()
	for {
		line, err := rs.br.ReadString('\n')
		require.NoError(t, err, "reading the stream")
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, "id: "):
			id = line[len("id: "):]
		case strings.HasPrefix(line, "data: ") && len(line) > len("data: "):
			data = line[len("data: "):]
		case line == "" && data != "":
			return data, id
		}
	}
}

// primingID returns the ID of the stream's priming event, its first.
func (rs *rawStream) primingID(t *testing.T) string {
	t.Helper()
	for {
		line, err := rs.br.ReadString('\n')
		require.NoError(t, err, "reading the priming event")
		if id, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), "id: "); ok {
			return id
		}
	}
}

// goroutinesWith counts the goroutines whose stacks hold all of fns.
func goroutinesWith(fns ...string) int {
	buf := make([]byte, 8<<20)
	buf = buf[:goruntime.Stack(buf, true)]
	n := 0
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		all := true
		for _, fn := range fns {
			all = all && strings.Contains(g, fn)
		}
		if all {
			n++
		}
	}
	return n
}

// announce registers a tool, which tells every session's GET stream that the list changed.
func announce(e *hardenEnv, name string) {
	e.srv.AddTool(ToolSpec{Name: name}, func(context.Context, *CallToolRequest) (*CallToolResult, error) {
		return &CallToolResult{}, nil
	})
}

// A GET stream owns its connection once accepted: net/http's goroutine for the connection
// returns (with its buffers), and the stream's events still go out, chunked; with
// WithoutStreamHijack the stream stays on that goroutine, as any handler.
func TestHijackedStreamLeavesNetHTTP(t *testing.T) {
	const n = 12
	for _, hijack := range []bool{true, false} {
		t.Run(fmt.Sprintf("hijack=%v", hijack), func(t *testing.T) {
			var opts []ServerOption
			if !hijack {
				opts = append(opts, WithoutStreamHijack())
			}
			e := newHardenEnv(t, opts...)
			streams := make([]*rawStream, n)
			for i := range streams {
				streams[i] = openRawStream(t, e, e.initialize(), "HTTP/1.1", "")
				assert.Equal(t, []string{"chunked"}, streams[i].resp.TransferEncoding)
				assert.Equal(t, hijack, streams[i].resp.Close, "Connection: close when the stream owns the connection")
			}
			onServe := goroutinesWith("net/http.(*conn).serve", "serveStream")
			owned := goroutinesWith("(*Server).writeHijacked")
			if hijack {
				assert.Zero(t, onServe, "GET streams still held on net/http's connection goroutines")
				assert.Equal(t, n, owned, "goroutines writing the GET streams")
			} else {
				assert.Equal(t, n, onServe, "GET streams on net/http's connection goroutines")
				assert.Zero(t, owned)
			}
			announce(e, "late")
			for i, rs := range streams {
				data, _ := rs.next(t)
				assert.Contains(t, data, notifToolsListChanged, "stream %d", i)
			}
		})
	}
}

// A client that closes its GET stream's connection ends the stream: the server's goroutines
// for it return, and the session can open another.
func TestHijackedStreamEndsWithItsClient(t *testing.T) {
	e := newHardenEnv(t)
	sids := make([]string, 8)
	for i := range sids {
		sids[i] = e.initialize()
		rs := openRawStream(t, e, sids[i], "HTTP/1.1", "")
		rs.primingID(t)
		require.NoError(t, rs.conn.Close())
	}
	require.True(t, waitFor(testTimeout, func() bool {
		return goroutinesWith("(*Server).writeHijacked") == 0 && goroutinesWith("(*hijackedResponse).watch") == 0
	}), "the streams' goroutines outlived their connections")
	e.srv.hijacked.mu.Lock()
	left := len(e.srv.hijacked.m)
	e.srv.hijacked.mu.Unlock()
	assert.Zero(t, left, "streams still tracked for Shutdown")
	rs := openRawStream(t, e, sids[0], "HTTP/1.1", "")
	announce(e, "after")
	data, _ := rs.next(t)
	assert.Contains(t, data, notifToolsListChanged)
}

// Server.Shutdown ends the streams that own their connections, which http.Server.Shutdown
// no longer sees: the body ends cleanly (its last chunk) and the connection closes.
func TestHijackedStreamEndsAtShutdown(t *testing.T) {
	e := newHardenEnv(t)
	rs := openRawStream(t, e, e.sid, "HTTP/1.1", "")
	rs.primingID(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	require.NoError(t, e.srv.Shutdown(ctx))
	_, err := io.Copy(io.Discard, rs.br)
	require.NoError(t, err, "the body ends with its last chunk")
	_, err = rs.conn.Read(make([]byte, 1))
	assert.ErrorIs(t, err, io.EOF, "the connection is closed")
	assert.Zero(t, goroutinesWith("(*Server).writeHijacked"))
}

// A resumption of the GET stream takes it over: the old connection is closed at once, the
// new one (which owns its connection too) gets what follows.
func TestHijackedStreamTakeover(t *testing.T) {
	e := newHardenEnv(t)
	old := openRawStream(t, e, e.sid, "HTTP/1.1", "")
	last := old.primingID(t)
	resumed := openRawStream(t, e, e.sid, "HTTP/1.1", last)
	_, err := io.Copy(io.Discard, old.br)
	require.Error(t, err, "the replaced connection is cut, not ended as a stream that is over")
	announce(e, "taken")
	data, _ := resumed.next(t)
	assert.Contains(t, data, notifToolsListChanged)
	require.True(t, waitFor(testTimeout, func() bool { return goroutinesWith("(*Server).writeHijacked") == 1 }), "the replaced writer is gone, the new one runs")
}

// HTTP/1.0 has no chunked encoding: the body runs until the connection closes.
func TestHijackedStreamHTTP10(t *testing.T) {
	e := newHardenEnv(t)
	rs := openRawStream(t, e, e.sid, "HTTP/1.0", "")
	assert.Equal(t, "HTTP/1.0", rs.resp.Proto)
	assert.Empty(t, rs.resp.TransferEncoding)
	announce(e, "old")
	data, _ := rs.next(t)
	assert.Contains(t, data, notifToolsListChanged)
	r, err := e.send(e.ctx(), http.MethodDelete, e.sid, "", nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, r.status)
	_, err = io.Copy(io.Discard, rs.br)
	assert.NoError(t, err, "the session's end closes the connection, which ends the body")
}

// Over HTTP/2 there is no connection to take: the stream stays on its handler, and works.
func TestHijackedStreamNotOverHTTP2(t *testing.T) {
	srv := NewServer(Implementation{Name: "h2", Version: "1"}, WithLogger(discardLogger()))
	hs := httptest.NewUnstartedServer(srv)
	hs.EnableHTTP2 = true
	hs.StartTLS()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		_ = srv.Shutdown(ctx)
		hs.Close()
	})
	hc := hs.Client()
	hc.Transport.(*http.Transport).TLSClientConfig = &tls.Config{RootCAs: hs.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs, NextProtos: []string{"h2"}}
	changed := make(chan struct{}, 4)
	c := NewClient(hs.URL, WithEra(EraLegacy), WithHTTPClient(hc), WithStandaloneStream(),
		WithNotificationHandler(func(_ context.Context, method string, _ json.RawMessage) {
			if method == notifToolsListChanged {
				changed <- struct{}{}
			}
		}))
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	_, err := c.ListTools(testCtx(t), "")
	require.NoError(t, err)
	require.True(t, waitFor(testTimeout, func() bool { return goroutinesWith("serveStream", "serveGet") == 1 }), "the GET stream is served on its handler")
	assert.Zero(t, goroutinesWith("(*Server).writeHijacked"))
	srv.AddTool(ToolSpec{Name: "late"}, func(context.Context, *CallToolRequest) (*CallToolResult, error) {
		return &CallToolResult{}, nil
	})
	select {
	case <-changed:
	case <-time.After(testTimeout):
		t.Fatal("no tools/list_changed over the HTTP/2 GET stream")
	}
}

// The response of a stream that owns its connection frames what net/http would: a status
// set before the first write, its headers (a Content-Length dropped for the chunked body),
// the body, and its end.
func TestHijackedResponseFraming(t *testing.T) {
	for _, proto := range []string{"HTTP/1.1", "HTTP/1.0"} {
		t.Run(proto, func(t *testing.T) {
			a, b := net.Pipe()
			defer b.Close()
			hr := &hijackedResponse{conn: a, header: http.Header{}, status: http.StatusOK, http10: proto == "HTTP/1.0"}
			hr.ctx, hr.cancel = context.WithCancel(context.Background())
			body := `{"jsonrpc":"2.0","error":{"code":-32600,"message":"refused"}}`
			ended := make(chan struct{})
			go func() {
				defer close(ended)
				hr.Header().Set("Content-Type", "application/json")
				hr.Header().Set("Content-Length", fmt.Sprint(len(body)))
				hr.Header().Set("Date", "Mon, 02 Jan 2006 15:04:05 GMT")
				hr.Header().Set("Connection", "keep-alive")
				hr.Header().Set("Transfer-Encoding", "identity")
				hr.WriteHeader(http.StatusTooManyRequests)
				_, _ = hr.Write([]byte(body[:10]))
				_ = hr.FlushError()
				_, _ = hr.Write(nil)
				_, _ = hr.Write([]byte(body[10:]))
				hr.end(time.Second)
			}()
			resp, err := http.ReadResponse(bufio.NewReader(b), nil)
			require.NoError(t, err)
			assert.Equal(t, proto, resp.Proto)
			assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
			assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			assert.True(t, resp.Close)
			assert.Equal(t, []string{"Mon, 02 Jan 2006 15:04:05 GMT"}, resp.Header["Date"], "the handler's Date, once")
			assert.NotContains(t, resp.Header.Values("Connection"), "keep-alive", "the framing is the writer's")
			if proto == "HTTP/1.1" {
				assert.Equal(t, []string{"chunked"}, resp.TransferEncoding)
			}
			got, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			assert.Equal(t, body, string(got))
			<-ended
			assert.Error(t, hr.ctx.Err(), "end ends the response's context")
		})
	}
}

// A write that failed (a client that stopped reading, past the write timeout) is the last:
// the response does not try to end its body, which would hold the connection for another
// write timeout, and a zero deadline lifts the bound without cutting the body off.
func TestHijackedResponseStopsAfterAFailedWrite(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	hr := &hijackedResponse{conn: a, header: http.Header{}, status: http.StatusOK}
	hr.ctx, hr.cancel = context.WithCancel(context.Background())
	require.NoError(t, hr.SetWriteDeadline(time.Time{}))
	assert.False(t, hr.cut.Load(), "a zero deadline is no deadline, not a cut")
	head := make(chan error, 1)
	go func() { // the first write, then b reads no more
		var got []byte
		buf := make([]byte, 512)
		for !strings.HasSuffix(string(got), "first\n\n\r\n") {
			n, err := b.Read(buf)
			if err != nil {
				head <- err
				return
			}
			got = append(got, buf[:n]...)
		}
		head <- nil
	}()
	_, err := hr.Write([]byte("data: first\n\n"))
	require.NoError(t, err)
	require.NoError(t, <-head)
	require.NoError(t, hr.SetWriteDeadline(time.Now().Add(50*time.Millisecond)))
	_, err = hr.Write([]byte("data: stuck\n\n"))
	require.Error(t, err, "the write past its deadline")
	_, err = hr.Write([]byte("data: later\n\n"))
	require.Error(t, err, "no write follows a failed one: its chunk may be half out")
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		hr.end(time.Hour)
	}()
	select {
	case <-ended:
	case <-time.After(testTimeout):
		t.Fatal("end wrote the body's end to a client that does not read, for another write timeout")
	}
	_, err = b.Read(make([]byte, 1))
	assert.ErrorIs(t, err, io.EOF, "the connection is closed")
}

// A client that never reads its GET stream while the server sends it large notifications
// loses its connection once a write times out, and the stream's goroutines end.
func TestHijackedStreamClientNeverReads(t *testing.T) {
	e := newHardenEnv(t, WithWriteTimeout(200*time.Millisecond))
	e.stuckGET(e.sid, nil)
	require.True(t, waitFor(testTimeout, func() bool { return goroutinesWith("(*Server).writeHijacked") == 1 }), "the GET stream owns its connection")
	sess := e.session(e.sid)
	big := map[string]string{"blob": strings.Repeat("x", 64<<10)}
	require.True(t, waitFor(testTimeout, func() bool {
		_ = sess.notify("notifications/message", big) // refused once the queue is full
		return goroutinesWith("(*Server).writeHijacked") == 0 && goroutinesWith("(*hijackedResponse).watch") == 0
	}), "the writer of a client that does not read outlived its write timeout")
	assert.Contains(t, e.log.String(), "client went away mid-stream")
	e.srv.hijacked.mu.Lock()
	assert.Empty(t, e.srv.hijacked.m, "streams still tracked for Shutdown")
	e.srv.hijacked.mu.Unlock()
}

// Bytes a client sends after its GET, pipelined with it (they wait in net/http's buffer when
// the connection is taken) or later, end its stream cleanly: its connection carries nothing
// else, and the goroutines end.
func TestHijackedStreamEndsOnBytesAfterGET(t *testing.T) {
	for _, when := range []string{"pipelined", "later"} {
		t.Run(when, func(t *testing.T) {
			e := newHardenEnv(t)
			conn, err := net.DialTimeout("tcp", e.hs.Listener.Addr().String(), testTimeout)
			require.NoError(t, err)
			defer conn.Close()
			get := fmt.Sprintf("GET / HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\nMcp-Session-Id: %s\r\nMcp-Protocol-Version: %s\r\n\r\n", e.hs.Listener.Addr(), e.sid, LatestProtocolVersion)
			next := "GET /other HTTP/1.1\r\nHost: " + e.hs.Listener.Addr().String() + "\r\n\r\n"
			if when == "pipelined" {
				get += next
			}
			_, err = io.WriteString(conn, get)
			require.NoError(t, err)
			require.NoError(t, conn.SetReadDeadline(time.Now().Add(testTimeout)))
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			if when == "later" {
				rs := &rawStream{conn: conn, resp: resp, br: bufio.NewReader(resp.Body)}
				rs.primingID(t)
				_, err = io.WriteString(conn, next)
				require.NoError(t, err)
				resp.Body = io.NopCloser(rs.br)
			}
			_, err = io.Copy(io.Discard, resp.Body)
			require.NoError(t, err, "the stream ends with its last chunk")
			require.True(t, waitFor(testTimeout, func() bool {
				return goroutinesWith("(*Server).writeHijacked") == 0 && goroutinesWith("(*hijackedResponse).watch") == 0
			}), "the stream's goroutines outlived it")
		})
	}
}

// A GET with a body keeps its stream on the handler: the body's bytes follow on the
// connection, and would end a stream that owned it.
func TestHijackedStreamNotWithABody(t *testing.T) {
	e := newHardenEnv(t)
	conn, err := net.DialTimeout("tcp", e.hs.Listener.Addr().String(), testTimeout)
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\nMcp-Session-Id: %s\r\nMcp-Protocol-Version: %s\r\nContent-Length: 5\r\n\r\nhello", e.hs.Listener.Addr(), e.sid, LatestProtocolVersion)
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(testTimeout)))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	rs := &rawStream{conn: conn, resp: resp, br: bufio.NewReader(resp.Body)}
	rs.primingID(t)
	assert.Zero(t, goroutinesWith("(*Server).writeHijacked"))
	announce(e, "bodied")
	data, _ := rs.next(t)
	assert.Contains(t, data, notifToolsListChanged)
}

// Once Shutdown waits for the streams that own their connections, no GET takes its
// connection over (Shutdown would not wait for it): one that was admitted before Shutdown
// and reaches its stream late stays on its handler, which http.Server.Shutdown sees.
func TestHijackedStreamNotAfterShutdown(t *testing.T) {
	e := newHardenEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	require.NoError(t, e.srv.Shutdown(ctx))
	took := make(chan bool, 1)
	late := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		took <- e.srv.serveHijacked(w, r, func(context.Context, *hijackedResponse) {})
	}))
	defer late.Close()
	resp, err := late.Client().Get(late.URL)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.False(t, <-took, "a stream took its connection after Shutdown stopped waiting for them")
}

// unwrappingWriter is a middleware's ResponseWriter that exposes the one it wraps.
type unwrappingWriter struct{ http.ResponseWriter }

func (u unwrappingWriter) Unwrap() http.ResponseWriter { return u.ResponseWriter }

// hidingWriter is a middleware's ResponseWriter that hides the one it wraps, but flushes.
type hidingWriter struct{ w http.ResponseWriter }

func (h hidingWriter) Header() http.Header         { return h.w.Header() }
func (h hidingWriter) Write(p []byte) (int, error) { return h.w.Write(p) }
func (h hidingWriter) WriteHeader(code int)        { h.w.WriteHeader(code) }
func (h hidingWriter) Flush()                      { h.w.(http.Flusher).Flush() }

// Behind middleware, a GET stream takes its connection through a writer with Unwrap (as
// http.ResponseController finds it), with the headers the middleware set, and stays on its
// handler behind one without; events reach the client either way.
func TestHijackedStreamBehindMiddleware(t *testing.T) {
	for _, unwrap := range []bool{true, false} {
		t.Run(fmt.Sprintf("unwrap=%v", unwrap), func(t *testing.T) {
			e := newHardenEnvOn(t, func(hs *httptest.Server) {
				next := hs.Config.Handler
				hs.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("X-Middleware", "seen")
					if unwrap {
						next.ServeHTTP(unwrappingWriter{w}, r)
					} else {
						next.ServeHTTP(hidingWriter{w}, r)
					}
				})
			})
			rs := openRawStream(t, e, e.sid, "HTTP/1.1", "")
			assert.Equal(t, "seen", rs.resp.Header.Get("X-Middleware"))
			rs.primingID(t)
			if unwrap {
				assert.Equal(t, 1, goroutinesWith("(*Server).writeHijacked"))
			} else {
				assert.Zero(t, goroutinesWith("(*Server).writeHijacked"))
				assert.Equal(t, 1, goroutinesWith("serveStream", "serveGet"))
			}
			announce(e, "wrapped")
			data, _ := rs.next(t)
			assert.Contains(t, data, notifToolsListChanged)
		})
	}
}

// A resumption of the GET stream, which owns its connection too, replays its stored events
// from the event store; one refused for lack of budget gets its 429 and JSON error through
// the hijacked response (chunked, its Content-Length dropped), and the stream can be resumed
// once there is room.
func TestHijackedStreamResumption(t *testing.T) {
	const size = 6 << 20
	e := newHardenEnv(t, WithSSEResponses(), WithMaxBodyBytes(8<<20), WithSessionBudget(10<<20),
		WithEventStore(NewMemoryEventStore(32<<20)))
	rs := openRawStream(t, e, e.sid, "HTTP/1.1", "")
	priming := rs.primingID(t)
	require.NoError(t, e.session(e.sid).notify("notifications/message", map[string]string{"blob": strings.Repeat("b", size)}))
	data, _ := rs.next(t)
	require.Len(t, data, size+len(`{"jsonrpc":"2.0","method":"notifications/message","params":{"blob":""}}`))
	require.NoError(t, rs.conn.Close())

	first := e.bigAnswer(e.sid, size)
	tr := &http.Transport{DialContext: smallWindowDialer().DialContext}
	defer tr.CloseIdleConnections()
	pinned, err := e.resumeUnread(e.ctx(), &http.Client{Transport: tr}, e.sid, first) // its replay holds 6 MiB
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, pinned.StatusCode)

	conn, err := net.DialTimeout("tcp", e.hs.Listener.Addr().String(), testTimeout)
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\nMcp-Session-Id: %s\r\nMcp-Protocol-Version: %s\r\nLast-Event-ID: %s\r\n\r\n",
		e.hs.Listener.Addr(), e.sid, LatestProtocolVersion, priming)
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(testTimeout)))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	assert.True(t, resp.Close, "the refusal came through the hijacked response")
	assert.Equal(t, []string{"chunked"}, resp.TransferEncoding)
	assert.Equal(t, "1", resp.Header.Get("Retry-After"))
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Contains(t, string(body), "resumption refused: this session holds")

	_, err = io.Copy(io.Discard, pinned.Body) // read at last: the replay lets go of the budget
	require.NoError(t, err)
	_ = pinned.Body.Close()
	resumed := openRawStream(t, e, e.sid, "HTTP/1.1", priming)
	assert.True(t, resumed.resp.Close, "the resumed GET stream owns its connection")
	replayed, id := resumed.next(t)
	assert.Equal(t, data, replayed, "the stored notification, replayed")
	announce(e, "after-resume")
	live, liveID := resumed.next(t)
	assert.Contains(t, live, notifToolsListChanged)
	assert.NotEqual(t, id, liveID)
}

// countingListener counts the writes to the connections it accepts once counting is set.
type countingListener struct {
	net.Listener
	counting atomic.Bool
	writes   atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, l: l}, nil
}

type countingConn struct {
	net.Conn
	l *countingListener
}

func (c *countingConn) Write(p []byte) (int, error) {
	if c.l.counting.Load() {
		c.l.writes.Add(1)
	}
	return c.Conn.Write(p)
}

// Over TLS (HTTP/1.1), a GET stream owns its connection too, and each write of its writer is
// one write to the connection (one TLS record with its chunk's framing), not one per piece
// of the frame, as a writev-less connection would otherwise take them.
func TestHijackedStreamOverTLS(t *testing.T) {
	srv := NewServer(Implementation{Name: "tls", Version: "1"}, WithLogger(discardLogger()))
	hs := httptest.NewUnstartedServer(srv)
	cl := &countingListener{Listener: hs.Listener}
	hs.Listener = cl
	hs.StartTLS() // HTTP/1.1: EnableHTTP2 is off
	hc := hs.Client()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		_ = srv.Shutdown(ctx)
		hs.Close()
		hc.CloseIdleConnections()
	})
	post := func(sid, body string) *http.Response {
		req, err := http.NewRequestWithContext(testCtx(t), http.MethodPost, hs.URL, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set(headerProtocolVersion, LatestProtocolVersion)
		if sid != "" {
			req.Header.Set(headerSessionID, sid)
		}
		resp, err := hc.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		require.Less(t, resp.StatusCode, 300)
		return resp
	}
	sid := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+LatestProtocolVersion+`","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`).Header.Get(headerSessionID)
	require.NotEmpty(t, sid)
	post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	req, err := http.NewRequestWithContext(testCtx(t), http.MethodGet, hs.URL, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set(headerSessionID, sid)
	req.Header.Set(headerProtocolVersion, LatestProtocolVersion)
	resp, err := hc.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "HTTP/1.1", resp.Proto)
	assert.True(t, resp.Close, "the stream owns its connection")
	rs := &rawStream{resp: resp, br: bufio.NewReader(resp.Body)}
	rs.primingID(t)
	cl.counting.Store(true)
	srv.AddTool(ToolSpec{Name: "tls"}, func(context.Context, *CallToolRequest) (*CallToolResult, error) {
		return &CallToolResult{}, nil
	})
	data, _ := rs.next(t)
	assert.Contains(t, data, notifToolsListChanged)
	assert.Equal(t, int64(1), cl.writes.Load(), "writes to the connection for one event")
}

// Whatever ends a session ends its GET stream that owns its connection, goroutines and all:
// a DELETE, and a Shutdown whose context has already ended (which closes the connections at
// once, and returns only once the streams' goroutines did).
func TestHijackedStreamEndsWithItsSession(t *testing.T) {
	t.Run("delete", func(t *testing.T) {
		e := newHardenEnv(t)
		rs := openRawStream(t, e, e.sid, "HTTP/1.1", "")
		rs.primingID(t)
		r, err := e.send(e.ctx(), http.MethodDelete, e.sid, "", nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, r.status)
		_, err = io.Copy(io.Discard, rs.br)
		require.NoError(t, err, "the body ends with its last chunk")
		require.True(t, waitFor(testTimeout, func() bool {
			return goroutinesWith("(*Server).writeHijacked") == 0 && goroutinesWith("(*hijackedResponse).watch") == 0
		}), "the stream's goroutines outlived its session")
	})
	t.Run("shutdown with an ended context", func(t *testing.T) {
		e := newHardenEnv(t)
		streams := []*rawStream{openRawStream(t, e, e.sid, "HTTP/1.1", ""), openRawStream(t, e, e.initialize(), "HTTP/1.0", "")}
		for _, rs := range streams {
			rs.primingID(t)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = e.srv.Shutdown(ctx)
		assert.Zero(t, goroutinesWith("(*Server).writeHijacked"), "writers left after Shutdown")
		assert.Zero(t, goroutinesWith("(*hijackedResponse).watch"), "watchers left after Shutdown")
		for _, rs := range streams {
			_, _ = io.Copy(io.Discard, rs.br) // ended or cut: either way it ends
			_, err := rs.conn.Read(make([]byte, 1))
			assert.Error(t, err, "the connection is closed")
		}
	})
}

// Our client's GET stream, which the server serves on a connection it owns: taken over by
// another resumption, the client reconnects (taking it back) and still gets what follows.
func TestHijackedStreamClientReconnects(t *testing.T) {
	e := newHardenEnv(t)
	changed := make(chan struct{}, 8)
	c := NewClient(e.url, WithEra(EraLegacy), WithStandaloneStream(),
		WithNotificationHandler(func(_ context.Context, method string, _ json.RawMessage) {
			if method == notifToolsListChanged {
				changed <- struct{}{}
			}
		}))
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	_, err := c.ListTools(testCtx(t), "")
	require.NoError(t, err)
	require.True(t, waitFor(testTimeout, func() bool { return goroutinesWith("(*Server).writeHijacked") == 1 }), "the client's GET stream owns its connection")
	got := func(what string) {
		t.Helper()
		select {
		case <-changed:
		case <-time.After(testTimeout):
			t.Fatalf("no tools/list_changed %s", what)
		}
	}
	announce(e, "one")
	got("on the first GET stream")
	var sess *session
	e.srv.mu.Lock()
	for id, s := range e.srv.sessions {
		if id != e.sid {
			sess = s
		}
	}
	e.srv.mu.Unlock()
	require.NotNil(t, sess)
	thief := openRawStream(t, e, sess.id, "HTTP/1.1", eventID(sess.standalone.id, 0))
	_, err = io.Copy(io.Discard, thief.br)
	require.Error(t, err, "the client took its stream back, cutting this one")
	announce(e, "two")
	got("after the client took its stream back")
}

// valueKey is the context key of the value TestHijackedStreamKeepsRequestValues's middleware
// sets.
type valueKey struct{}

// replayCtxStore records the value of valueKey in the contexts its Replay is called with.
type replayCtxStore struct {
	EventStore
	seen chan any
}

func (s *replayCtxStore) Replay(ctx context.Context, session, stream string, after uint64, fn func(uint64, []byte) error) error {
	s.seen <- ctx.Value(valueKey{})
	return s.EventStore.Replay(ctx, session, stream, after, fn)
}

// A stream that owns its connection keeps the request's context values (what middleware put
// there), as the same stream on its handler's goroutine does: an EventStore's Replay of a
// resumed GET stream sees them.
func TestHijackedStreamKeepsRequestValues(t *testing.T) {
	store := &replayCtxStore{EventStore: NewMemoryEventStore(1 << 20), seen: make(chan any, 4)}
	e := newHardenEnvOn(t, func(hs *httptest.Server) {
		next := hs.Config.Handler
		hs.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), valueKey{}, "from middleware")))
		})
	}, WithEventStore(store))
	rs := openRawStream(t, e, e.sid, "HTTP/1.1", "")
	priming := rs.primingID(t)
	announce(e, "stored")
	rs.next(t)
	require.NoError(t, rs.conn.Close())
	resumed := openRawStream(t, e, e.sid, "HTTP/1.1", priming)
	assert.True(t, resumed.resp.Close, "the resumed GET stream owns its connection")
	data, _ := resumed.next(t)
	assert.Contains(t, data, notifToolsListChanged, "replayed")
	select {
	case v := <-store.seen:
		assert.Equal(t, "from middleware", v)
	case <-time.After(testTimeout):
		t.Fatal("no Replay")
	}
}
