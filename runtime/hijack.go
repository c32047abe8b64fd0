package runtime

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// A session's standalone GET stream (spec 2025-11-25, Basic, Transports, Streamable HTTP,
// Listening for Messages from the Server) may stay open for hours with nothing to say. Served
// as any handler, it holds net/http's connection goroutine (its stack grown by the handler
// chain), the connection's read and write buffers and the response's own, for as long as it is
// open: most of a session's memory. On HTTP/1.x the server takes the connection over instead
// (http.Hijacker): the handler returns and net/http lets go of all that, the stream is written
// by a goroutine of its own straight to the connection, as a chunked body that needs no buffer
// of its own, and a second goroutine waits in a one-byte read to notice when the client goes
// away, as net/http's background read does. WithoutStreamHijack keeps the stream on the
// handler's goroutine.

// hijackedResponse is the http.ResponseWriter of a stream whose connection the server took
// over: writes go straight to the connection, framed as HTTP/1.1 chunks. Only its writer's
// goroutine calls Write and Header; the deadline setters may be called from any goroutine (a
// takeover aborts the writer with them).
type hijackedResponse struct {
	conn   net.Conn
	header http.Header
	status int
	http10 bool  // an HTTP/1.0 request: no chunked encoding, the body ends when the connection closes
	wrote  bool  // the status line and headers went out
	werr   error // the first write that failed: the connection takes no more, as net/http's
	// cut is set by a write deadline in the past (sseWriter.abort): the body is not ended
	// cleanly then, as net/http's last write would fail past that deadline.
	cut atomic.Bool

	ctx    context.Context    // ends when the client goes away, or a deadline is moved to now
	cancel context.CancelFunc // ends ctx
}

// hijackedStreams tracks the streams that own their connections, for Shutdown, which
// http.Server.Shutdown cannot do for it (net/http forgets a hijacked connection).
type hijackedStreams struct {
	mu sync.Mutex
	m  map[*hijackedResponse]struct{}
	// closed is set when Shutdown starts waiting for the streams: no GET takes its
	// connection afterwards (wg must not grow from zero while Shutdown waits), and forced
	// once Shutdown gave up waiting and closed their connections.
	closed, forced bool
	wg             sync.WaitGroup // a stream's two goroutines, counted before its connection is taken
}

// serveHijacked takes w's connection over for a long-lived stream and runs serve, which
// writes the stream to the response it is given, on a goroutine of its own, then ends the
// response; a second goroutine watches the connection for the client leaving. It does so when
// the connection is HTTP/1.x, the request has no body (its bytes would follow on the
// connection), the server does so (WithoutStreamHijack) and is not shutting down; the
// response's headers set so far are kept. It reports false when the stream stays on the
// handler's goroutine; nothing has been written then.
func (s *Server) serveHijacked(w http.ResponseWriter, r *http.Request, serve func(ctx context.Context, hr *hijackedResponse)) bool {
	if s.cfg.noHijack || r.ProtoMajor != 1 || r.ContentLength != 0 {
		return false
	}
	s.hijacked.mu.Lock()
	if s.hijacked.closed {
		s.hijacked.mu.Unlock()
		return false // Shutdown is waiting for the streams it knows: the handler ends this one
	}
	s.hijacked.wg.Add(2) // before the connection is taken: Shutdown waits for it from here
	s.hijacked.mu.Unlock()
	header := w.Header() // net/http is done with it once the connection is taken
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		s.hijacked.wg.Add(-2)
		return false // HTTP/2, or a middleware's writer that hides the connection
	}
	// The stream's context keeps the request's values (what middleware and authentication
	// put there, for an EventStore's Replay to see, as it would on the handler's goroutine)
	// but not its end, which comes when the handler returns, now.
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	hr := &hijackedResponse{conn: conn, header: header, status: http.StatusOK, http10: r.ProtoMinor == 0, ctx: ctx, cancel: cancel}
	s.hijacked.mu.Lock()
	if s.hijacked.m == nil {
		s.hijacked.m = make(map[*hijackedResponse]struct{})
	}
	s.hijacked.m[hr] = struct{}{}
	if s.hijacked.forced {
		_ = conn.Close() // Shutdown closed the others already
	}
	s.hijacked.mu.Unlock()
	// The buffered reader net/http returns holds what the client sent after its GET, if
	// anything (a pipelined request, or the byte net/http's background read took): a stream's
	// connection carries nothing else, and bytes that arrive later end it (watch), so these
	// do too. The reader itself is dropped, with its buffer.
	pending := brw.Reader.Buffered() > 0
	go s.watchHijacked(hr, pending)
	go s.writeHijacked(hr, serve)
	return true
}

// writeHijacked runs serve, which writes a stream to hr, then ends the response.
func (s *Server) writeHijacked(hr *hijackedResponse, serve func(ctx context.Context, hr *hijackedResponse)) {
	defer s.hijacked.wg.Done()
	defer s.forgetHijacked(hr)
	serve(hr.ctx, hr)
	hr.end(s.cfg.writeTimeout)
}

// watchHijacked runs hr.watch.
func (s *Server) watchHijacked(hr *hijackedResponse, pending bool) {
	defer s.hijacked.wg.Done()
	hr.watch(pending)
}

// forgetHijacked drops hr from the streams Shutdown waits for.
func (s *Server) forgetHijacked(hr *hijackedResponse) {
	s.hijacked.mu.Lock()
	delete(s.hijacked.m, hr)
	s.hijacked.mu.Unlock()
}

// awaitHijacked waits until the streams that own their connections have ended (their sessions
// were ended first, which ends them), within ctx and a bound of a second plus the write
// timeout (a writer blocked on a client that does not read). Those left have their
// connections closed under them.
func (s *Server) awaitHijacked(ctx context.Context) {
	s.hijacked.mu.Lock()
	s.hijacked.closed = true
	s.hijacked.mu.Unlock()
	done := make(chan struct{})
	go func() {
		s.hijacked.wg.Wait()
		close(done)
	}()
	t := time.NewTimer(time.Second + max(s.cfg.writeTimeout, 0))
	defer t.Stop()
	select {
	case <-done:
		return
	case <-ctx.Done():
	case <-t.C:
	}
	s.hijacked.mu.Lock()
	s.hijacked.forced = true
	for hr := range s.hijacked.m {
		_ = hr.conn.Close()
	}
	s.hijacked.mu.Unlock()
	// Closed connections fail every read and write at once; what is left is code that
	// ignores its context, such as an EventStore's Replay: logged, not waited for.
	g := time.NewTimer(s.stopGrace)
	defer g.Stop()
	select {
	case <-done:
	case <-g.C:
		s.log.Error("mcp: GET streams still running after shutdown; an EventStore's Replay may ignore its context")
	}
}

// watch blocks in a read of the connection until the client closes it (or sends anything: a
// stream's connection carries nothing else), or a read deadline ends the read, then ends
// hr.ctx. pending says the client sent something already: hr.ctx ends at once.
func (hr *hijackedResponse) watch(pending bool) {
	if !pending {
		var b [1]byte
		_, _ = hr.conn.Read(b[:])
	}
	hr.cancel()
}

// Header returns the response's headers, which go out with the first write; changes made
// afterwards are ignored, as net/http ignores them.
func (hr *hijackedResponse) Header() http.Header {
	if hr.header == nil {
		return http.Header{}
	}
	return hr.header
}

// WriteHeader sets the response's status, which goes out with the first write.
func (hr *hijackedResponse) WriteHeader(status int) {
	if !hr.wrote {
		hr.status = status
	}
}

// Write writes p as one chunk of the body, in one system call with the chunk's framing (and,
// the first time, the status line and headers).
func (hr *hijackedResponse) Write(p []byte) (int, error) {
	if hr.werr != nil {
		return 0, hr.werr
	}
	var head []byte
	if !hr.wrote {
		head = hr.appendHead()
		hr.wrote = true
	}
	if len(p) == 0 {
		if head == nil {
			return 0, nil
		}
		_, err := hr.conn.Write(head)
		hr.werr = err
		return 0, err
	}
	bufs := net.Buffers{head, p}
	if !hr.http10 {
		head = strconv.AppendInt(head, int64(len(p)), 16)
		head = append(head, "\r\n"...)
		bufs = net.Buffers{head, p, crlf}
	}
	if err := hr.writeBuffers(bufs); err != nil {
		// Part of the chunk may have gone out: nothing written after it could be framed.
		hr.werr = err
		return 0, err
	}
	return len(p), nil
}

var crlf = []byte("\r\n")

// writeBuffers writes bufs to the connection in one system call: with writev on a TCP or
// Unix socket; else (a *tls.Conn) gathered into one pooled buffer first, since each write of
// a TLS connection is a record of its own, and a chunk written in three pieces would take
// three records and three system calls.
func (hr *hijackedResponse) writeBuffers(bufs net.Buffers) error {
	switch hr.conn.(type) {
	case *net.TCPConn, *net.UnixConn:
		_, err := bufs.WriteTo(hr.conn)
		return err
	}
	n := 0
	for _, b := range bufs {
		n += len(b)
	}
	pb, _ := gatherBufs.Get().(*[]byte)
	if pb == nil {
		pb = new([]byte)
	}
	b := (*pb)[:0]
	if cap(b) < n {
		b = make([]byte, 0, n)
	}
	for _, p := range bufs {
		b = append(b, p...)
	}
	_, err := hr.conn.Write(b)
	if cap(b) <= 4*sseChunk+64 {
		*pb = b[:0]
		gatherBufs.Put(pb)
	}
	return err
}

// gatherBufs holds the buffers writeBuffers gathers a chunk in (*[]byte).
var gatherBufs sync.Pool

// appendHead returns the status line and headers. The connection closes at the end of the
// stream, as the headers say. The headers are not kept afterwards: they cannot change.
func (hr *hijackedResponse) appendHead() []byte {
	var b bytes.Buffer
	proto := "HTTP/1.1 "
	if hr.http10 {
		proto = "HTTP/1.0 "
	}
	b.WriteString(proto)
	b.WriteString(strconv.Itoa(hr.status))
	b.WriteByte(' ')
	b.WriteString(http.StatusText(hr.status))
	b.WriteString("\r\n")
	if _, ok := hr.header["Date"]; !ok { // a handler's own Date wins, as with net/http
		b.WriteString("Date: ")
		b.WriteString(time.Now().UTC().Format(http.TimeFormat))
		b.WriteString("\r\n")
	}
	b.WriteString("Connection: close\r\n")
	if !hr.http10 {
		b.WriteString("Transfer-Encoding: chunked\r\n")
		hr.header.Del("Content-Length") // an error's JSON body goes out chunked too
	}
	// The framing is this writer's to say, as it is net/http's.
	hr.header.Del("Connection")
	hr.header.Del("Transfer-Encoding")
	_ = hr.header.Write(&b) // sanitized, as net/http writes headers
	b.WriteString("\r\n")
	hr.header = nil
	return b.Bytes()
}

// FlushError sends the status line and headers if no write has yet; nothing else waits in a
// buffer: every write goes straight to the connection.
func (hr *hijackedResponse) FlushError() error {
	_, err := hr.Write(nil)
	return err
}

// SetWriteDeadline bounds the writes to the connection; a deadline in the past makes a write
// in progress fail at once, and a zero one lifts the bound.
func (hr *hijackedResponse) SetWriteDeadline(t time.Time) error {
	if !t.IsZero() && !t.After(time.Now()) {
		hr.cut.Store(true)
	}
	return hr.conn.SetWriteDeadline(t)
}

// SetReadDeadline bounds watch's read: a deadline in the past ends it, and hr.ctx with it,
// as it ends a request's context on a connection net/http serves.
func (hr *hijackedResponse) SetReadDeadline(t time.Time) error {
	return hr.conn.SetReadDeadline(t)
}

// end finishes the body (its last chunk, within timeout), unless the writer was cut off or a
// write failed (a client that stopped reading would hold the connection for another timeout),
// and closes the connection.
func (hr *hijackedResponse) end(timeout time.Duration) {
	hr.cancel()
	if hr.werr != nil || hr.cut.Load() {
		_ = hr.conn.Close()
		return
	}
	if timeout > 0 {
		_ = hr.conn.SetWriteDeadline(time.Now().Add(timeout))
	}
	var tail []byte
	if !hr.wrote {
		tail = hr.appendHead() // an HTTP/1.0 response gets its head, at least
		hr.wrote = true
	}
	if !hr.http10 {
		tail = append(tail, "0\r\n\r\n"...)
	}
	if len(tail) > 0 {
		_, _ = hr.conn.Write(tail)
	}
	_ = hr.conn.Close()
}
