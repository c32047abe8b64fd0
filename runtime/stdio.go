package runtime

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"
)

// ServeStdio serves s over the stdio transport (spec 2025-11-25, "Transports", stdio): it reads
// newline-delimited JSON-RPC messages from in and writes the server's messages to out, one per
// line, and nothing else. A host that launches the server as a child process (Claude Desktop,
// VS Code, the MCP Inspector) talks to it this way; everything registered on s (tools,
// prompts, resources, interceptors, requests back to the client) works as over HTTP.
//
// One stdio connection is one session. Each message is carried through the server's own
// Streamable HTTP handling in memory, so the limits (message size, requests in flight, queued
// events) and behaviour are the same as on HTTP: invalid JSON gets a JSON-RPC error, requests
// run concurrently, and a slow reader of out never blocks the reading of in beyond the
// session's in-flight limit. Log with a logger that writes to stderr, never to out.
//
// ServeStdio returns nil when in ends (EOF) and ctx.Err() when ctx is cancelled; either way it
// first ends the session, which cancels the handlers still running, and waits for them. A read
// of in that is blocked when ctx is cancelled cannot be interrupted unless in is closed: close
// it (an *os.File at exit, an io.PipeReader in tests) to end that read too.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	c := &stdioConn{
		srv: s,
		out: out,
		sem: make(chan struct{}, s.cfg.maxInflight+16),
	}
	ctx, c.cancel = context.WithCancel(ctx)
	defer c.cancel()
	c.ctx = ctx

	lines := make(chan []byte)
	readErr := make(chan error, 1)
	go func() {
		readErr <- readLines(ctx, in, s.cfg.maxBodyBytes, lines, c.tooLong)
	}()
	var err error
loop:
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				err = <-readErr
				break loop
			}
			c.handle(ctx, line)
		case <-ctx.Done():
			err = ctx.Err()
			break loop
		}
	}
	c.close()
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// stdioConn is one stdio connection: its session, once initialize made one, and the
// goroutines serving its requests.
type stdioConn struct {
	srv    *Server
	ctx    context.Context // the connection's: cancelled when it ends
	cancel context.CancelFunc

	outMu sync.Mutex
	out   io.Writer

	mu      sync.Mutex
	session string
	version string

	sem chan struct{} // bounds the requests being served at once
	wg  sync.WaitGroup
}

// readLines sends each non-empty line of in to lines, then closes lines. A line longer than
// limit is reported to tooLong and skipped.
func readLines(ctx context.Context, in io.Reader, limit int64, lines chan<- []byte, tooLong func(head []byte)) error {
	defer close(lines)
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, err := readLine(r, int(min(limit, 1<<40)))
		if errors.Is(err, errLineTooLong) {
			tooLong(line)
			continue
		}
		if len(line) > 0 {
			select {
			case lines <- bytes.Clone(line):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if err != nil {
			return err
		}
	}
}

// leadingID finds the id of a JSON-RPC request in the first bytes of its message, where
// clients write it.
var leadingID = regexp.MustCompile(`^\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*("(?:[^"\\]|\\.){0,128}"|-?[0-9]{1,19})`)

// tooLong answers a message over the size limit, with its id when its first bytes name it.
func (c *stdioConn) tooLong(head []byte) {
	var id *ID
	if m := leadingID.FindSubmatch(head); m != nil {
		var parsed ID
		if parsed.UnmarshalJSON(m[1]) == nil {
			id = &parsed
		}
	}
	c.write(encodeResponse(id, nil, Errorf(CodeInvalidRequest, "message exceeds the limit of %d bytes", c.srv.cfg.maxBodyBytes)))
}

// write writes one message and its newline to out.
func (c *stdioConn) write(msg []byte) {
	c.outMu.Lock()
	defer c.outMu.Unlock()
	buf := make([]byte, 0, len(msg)+1)
	buf = append(buf, msg...)
	buf = append(buf, '\n')
	if _, err := c.out.Write(buf); err != nil {
		c.srv.log.Debug("mcp: stdio write failed", "error", err)
	}
}

// handle serves one message. initialize, notifications and responses are served in order,
// before the next message is read, so that what they change (the session, a cancellation,
// an answer a handler waits for) is in place for the messages after them; requests are served
// concurrently.
func (c *stdioConn) handle(ctx context.Context, line []byte) {
	var head struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	_ = json.Unmarshal(line, &head)
	isRequest := head.Method != "" && len(head.ID) > 0 && string(head.ID) != "null"
	if !isRequest || head.Method == methodInitialize {
		c.post(ctx, line, head.ID)
		return
	}
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer func() { <-c.sem }()
		c.post(ctx, line, head.ID)
	}()
}

// post carries one message through the server's HTTP handling and writes what it answers. A
// request whose stream the server closed before its response (Caller.CloseSSEStream) is
// resumed with Last-Event-ID at once, as an HTTP client would after the retry interval.
func (c *stdioConn) post(ctx context.Context, msg, id json.RawMessage) {
	w := c.serve(ctx, http.MethodPost, bytes.NewReader(msg), "")
	if w.initialized() {
		return
	}
	for range 100 {
		if w.answered(id) || w.lastEventID == "" || ctx.Err() != nil || w.status != http.StatusOK {
			return
		}
		w = c.serve(ctx, http.MethodGet, nil, w.lastEventID)
	}
}

// serve runs one in-memory HTTP exchange with the server and returns its writer, finished.
func (c *stdioConn) serve(ctx context.Context, method string, body io.Reader, lastEventID string) *stdioWriter {
	r, _ := http.NewRequestWithContext(context.WithValue(ctx, stdioTransportKey{}, true), method, "http://localhost/mcp", body)
	r.Host = "localhost"
	r.Header = make(http.Header, 5)
	r.Header["Content-Type"] = postContentType
	r.Header["Accept"] = postAccept
	c.mu.Lock()
	if c.session != "" {
		r.Header[headerSessionID] = []string{c.session}
	}
	if c.version != "" {
		r.Header[headerProtocolVersion] = []string{c.version}
	}
	c.mu.Unlock()
	if lastEventID != "" {
		r.Header[headerLastEventID] = []string{lastEventID}
	}
	w := &stdioWriter{conn: c, header: make(http.Header)}
	c.srv.ServeHTTP(w, r)
	w.finish()
	return w
}

// openStandalone serves the session's GET stream, which carries the notifications and
// requests that belong to no request (list_changed, resource updates), until the session ends.
func (c *stdioConn) openStandalone(ctx context.Context) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		last := ""
		for ctx.Err() == nil {
			w := c.serve(ctx, http.MethodGet, nil, last)
			if w.status != http.StatusOK {
				return // the session ended
			}
			last = w.lastEventID
		}
	}()
}

// close ends the session, which cancels its handlers and ends its streams, and waits for the
// goroutines serving them.
func (c *stdioConn) close() {
	c.mu.Lock()
	session := c.session
	c.mu.Unlock()
	if session != "" {
		c.serve(context.Background(), http.MethodDelete, nil, "")
	}
	c.cancel()
	done := make(chan struct{})
	go func() {
		c.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		c.srv.log.Error("mcp: stdio handlers still running after the connection ended; they ignore their context")
	}
}

// stdioWriter is the http.ResponseWriter of an in-memory exchange: it writes each message of
// the answer (a JSON body, or the data of each SSE event) to the connection's out as a line.
type stdioWriter struct {
	conn        *stdioConn
	header      http.Header
	status      int
	buf         []byte
	sse         bool
	lastEventID string
	ids         []string // ids of the responses written
}

// Header implements http.ResponseWriter.
func (w *stdioWriter) Header() http.Header { return w.header }

// WriteHeader implements http.ResponseWriter.
func (w *stdioWriter) WriteHeader(status int) {
	if w.status != 0 {
		return
	}
	w.status = status
	w.sse = strings.HasPrefix(w.header.Get("Content-Type"), "text/event-stream")
}

// Write implements http.ResponseWriter.
func (w *stdioWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	w.buf = append(w.buf, p...)
	if w.sse {
		w.events()
	}
	return len(p), nil
}

// Flush implements http.Flusher: events are written as they complete, so there is nothing
// to do.
func (w *stdioWriter) Flush() {}

// SetWriteDeadline is what http.ResponseController calls; out's writes are not bounded here.
func (w *stdioWriter) SetWriteDeadline(time.Time) error { return nil }

// events writes the complete SSE events in buf.
func (w *stdioWriter) events() {
	for {
		i := bytes.Index(w.buf, []byte("\n\n"))
		if i < 0 {
			return
		}
		var data []byte
		for line := range bytes.SplitSeq(w.buf[:i], []byte("\n")) {
			switch {
			case bytes.HasPrefix(line, []byte("id: ")):
				w.lastEventID = string(line[4:])
			case bytes.HasPrefix(line, []byte("data: ")):
				data = append(data, line[6:]...)
			case bytes.HasPrefix(line, []byte("data:")):
				data = append(data, line[5:]...)
			}
		}
		w.buf = w.buf[i+2:]
		if len(bytes.TrimSpace(data)) > 0 {
			w.message(data)
		}
	}
}

// message writes one message to out, noting the id of a response.
func (w *stdioWriter) message(data []byte) {
	var head struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(data, &head) == nil && head.Method == "" && len(head.ID) > 0 {
		w.ids = append(w.ids, string(head.ID))
	}
	w.conn.write(data)
}

// finish writes a JSON answer once the exchange is over.
func (w *stdioWriter) finish() {
	if !w.sse && len(bytes.TrimSpace(w.buf)) > 0 {
		w.message(bytes.TrimSpace(w.buf))
	}
	w.buf = nil
}

// answered reports whether the response to the request with this id was written.
func (w *stdioWriter) answered(id json.RawMessage) bool {
	for _, got := range w.ids {
		if got == string(id) {
			return true
		}
	}
	return false
}

// initialized takes the session a successful initialize started, opens its standalone stream,
// and reports whether this exchange was that initialize.
func (w *stdioWriter) initialized() bool {
	sid := w.header.Get(headerSessionID)
	if sid == "" || w.status != http.StatusOK {
		return false
	}
	c := w.conn
	c.mu.Lock()
	if c.session != "" {
		c.mu.Unlock()
		return false
	}
	c.session = sid
	c.version = c.srv.sessionVersion(sid)
	c.mu.Unlock()
	c.openStandalone(c.ctx)
	return true
}

// sessionVersion returns the protocol version of a live session, or "".
func (s *Server) sessionVersion(id string) string {
	s.mu.RLock()
	sess := s.sessions[id]
	s.mu.RUnlock()
	if sess == nil {
		return ""
	}
	return sess.version()
}

// errStdioClosed is returned when the connection's process or pipes are gone.
var errStdioClosed = fmt.Errorf("mcp: the stdio connection is closed")
