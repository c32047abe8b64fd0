package runtime

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// stdioURL is the URL a stdio client's requests carry; its transport never dials it.
const stdioURL = "http://stdio.invalid/mcp"

// Default bounds of a stdio client's shutdown of its server process (spec 2025-11-25,
// "Lifecycle", stdio shutdown): after closing the server's stdin, wait this long for it to
// exit, then send SIGTERM and wait as long again, then SIGKILL.
const (
	defaultStdioExitWait = 2 * time.Second
	defaultStdioTermWait = 2 * time.Second
)

// NewCommandClient starts cmd, an MCP server that speaks the stdio transport (spec 2025-11-25,
// "Transports", stdio), and returns a Client connected to its stdin and stdout. The Client is
// the same as over HTTP: generated clients, interceptors, progress, cancellation and the
// handlers of the server's requests (sampling, elicitation, roots) work unchanged. What the
// process writes to stderr is logged, line by line, at info level with the client's logger,
// unless cmd.Stderr is set.
//
// Close ends the process as the spec describes: it closes the process's stdin, waits for it
// to exit, then sends SIGTERM, then SIGKILL (see WithStdioShutdown for the waits).
func NewCommandClient(cmd *exec.Cmd, opts ...ClientOption) (*Client, error) {
	cfg := defaultClientConfig()
	for _, o := range opts {
		o.applyClient(&cfg)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("mcp: stdio command: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("mcp: stdio command: %w", err)
	}
	var stderr *lineLogger
	if cmd.Stderr == nil {
		stderr = &lineLogger{log: cfg.logger, attr: slog.String("command", cmd.Path)}
		cmd.Stderr = stderr
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("mcp: start %s: %w", cmd.Path, err)
	}
	t := newStdioTransport(stdout, stdin, cfg)
	exited := make(chan struct{})
	go func() {
		err := cmd.Wait()
		if stderr != nil {
			stderr.flush()
		}
		cfg.logger.Debug("mcp: stdio server exited", "command", cmd.Path, "error", err)
		close(exited)
	}()
	t.shutdown = func(ctx context.Context) error {
		_ = stdin.Close()
		if waitOr(exited, cfg.stdioExitWait, ctx) {
			return nil
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if waitOr(exited, cfg.stdioTermWait, ctx) {
			return nil
		}
		_ = cmd.Process.Kill()
		<-exited // a killed process is reaped at once
		return fmt.Errorf("mcp: stdio server %s ignored stdin's end and SIGTERM; killed", cmd.Path)
	}
	return newStdioClient(t, opts), nil
}

// NewStdioClient returns a Client that speaks the stdio transport over a pair of streams: it
// reads the server's messages from r and writes its own to w. Close closes w, then waits (up
// to the client's close timeout) for r to end. Use NewCommandClient to launch a server.
func NewStdioClient(r io.Reader, w io.WriteCloser, opts ...ClientOption) *Client {
	cfg := defaultClientConfig()
	for _, o := range opts {
		o.applyClient(&cfg)
	}
	t := newStdioTransport(r, w, cfg)
	t.shutdown = func(ctx context.Context) error {
		_ = w.Close()
		if waitOr(t.done, cfg.closeTimeout, ctx) {
			return nil
		}
		return fmt.Errorf("mcp: the stdio server's output did not end within %s of closing its input", cfg.closeTimeout)
	}
	return newStdioClient(t, opts)
}

func newStdioClient(t *stdioTransport, opts []ClientOption) *Client {
	opts = append(opts[:len(opts):len(opts)],
		WithHTTPClient(&http.Client{Transport: t}),
		WithStandaloneStream(), // the server's requests and notifications arrive there
		clientOptionFunc(func(c *clientConfig) {
			c.onClose = t.close
			c.era = EraLegacy // the modern era's stdio binding is not implemented
		}))
	return NewClient(stdioURL, opts...)
}

// waitOr waits for done, up to d and ctx; it reports whether done closed.
func waitOr(done <-chan struct{}, d time.Duration, ctx context.Context) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// WithStdioShutdown sets how long a command client's Close waits for the server process to
// exit after closing its stdin (default 2s), and then after SIGTERM (default 2s), before it
// kills the process.
func WithStdioShutdown(exitWait, termWait time.Duration) ClientOption {
	return clientOptionFunc(func(c *clientConfig) {
		c.stdioExitWait, c.stdioTermWait = exitWait, termWait
	})
}

// stdioTransport carries a Client's Streamable HTTP exchanges over a stdio connection: a POSTed
// request is written as a line and answered by an SSE body that receives the response with its
// id (and the progress notifications with its progress token); everything else the server
// sends (its requests, other notifications) goes to the body of the standalone GET stream.
// Notifications and responses the client POSTs are written and answered 202.
type stdioTransport struct {
	w       io.Writer
	wmu     sync.Mutex
	log     *slog.Logger
	maxLine int
	maxBody int // bytes one body may hold unread

	mu         sync.Mutex
	pending    map[string]*msgBody // by request id
	progress   map[string]*msgBody // by progress token
	standalone *msgBody
	err        error // why the connection ended, once it has

	done     chan struct{} // closed when the server's output has ended
	shutdown func(context.Context) error
	closing  sync.Once
}

func newStdioTransport(r io.Reader, w io.Writer, cfg clientConfig) *stdioTransport {
	t := &stdioTransport{
		w:        w,
		log:      cfg.logger,
		maxLine:  cfg.maxEventSize,
		maxBody:  max(cfg.maxEventSize, 1<<20) * 2,
		pending:  make(map[string]*msgBody),
		progress: make(map[string]*msgBody),
		done:     make(chan struct{}),
	}
	t.standalone = newMsgBody(t.maxBody, nil)
	go t.read(r)
	return t
}

// RoundTrip implements http.RoundTripper.
func (t *stdioTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		defer req.Body.Close()
	}
	switch req.Method {
	case http.MethodDelete:
		return stdioResponse(req, http.StatusOK, "", http.NoBody), nil
	case http.MethodGet:
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.err != nil {
			return nil, t.closedErr()
		}
		if req.Header.Get(headerLastEventID) != "" {
			// The client resumes its stream after the body ended: over stdio it ends only
			// with the connection.
			return stdioResponse(req, http.StatusNotFound, "application/json", io.NopCloser(strings.NewReader(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"stdio streams cannot be resumed"}}`))), nil
		}
		return stdioResponse(req, http.StatusOK, "text/event-stream", t.standalone), nil
	case http.MethodPost:
	default:
		return nil, fmt.Errorf("mcp: stdio transport: unexpected %s", req.Method)
	}
	msg, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	var head struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Meta struct {
				ProgressToken json.RawMessage `json:"progressToken"`
			} `json:"_meta"`
		} `json:"params"`
	}
	if err := json.Unmarshal(msg, &head); err != nil {
		return nil, fmt.Errorf("mcp: stdio transport: %w", err)
	}
	if head.Method == "" || len(head.ID) == 0 {
		// A notification or a response: nothing comes back.
		if err := t.write(msg); err != nil {
			return nil, err
		}
		return stdioResponse(req, http.StatusAccepted, "", http.NoBody), nil
	}
	id, token := string(head.ID), string(head.Params.Meta.ProgressToken)
	body := newMsgBody(t.maxBody, func() { t.forget(id, token) })
	t.mu.Lock()
	if t.err != nil {
		t.mu.Unlock()
		return nil, t.closedErr()
	}
	t.pending[id] = body
	if token != "" {
		t.progress[token] = body
	}
	t.mu.Unlock()
	if err := t.write(msg); err != nil {
		t.forget(id, token)
		return nil, err
	}
	// Answer as a server would: plain JSON when the response is the request's only message,
	// which spares the client an SSE parse of a large result; else an SSE stream.
	select {
	case <-body.ready:
	case <-req.Context().Done():
		body.Close()
		return nil, req.Context().Err()
	}
	if only := body.only(); only != nil {
		return stdioResponse(req, http.StatusOK, "application/json", io.NopCloser(bytes.NewReader(only))), nil
	}
	return stdioResponse(req, http.StatusOK, "text/event-stream", body), nil
}

func stdioResponse(req *http.Request, status int, contentType string, body io.ReadCloser) *http.Response {
	resp := &http.Response{StatusCode: status, Status: http.StatusText(status), Header: make(http.Header), Body: body, Request: req, ProtoMajor: 1, ProtoMinor: 1}
	if contentType != "" {
		resp.Header.Set("Content-Type", contentType)
	}
	return resp
}

// forget drops a request's body from the routing tables.
func (t *stdioTransport) forget(id, token string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.pending, id)
	if token != "" {
		delete(t.progress, token)
	}
}

// closedErr says why the connection is gone; t.mu is held.
func (t *stdioTransport) closedErr() error {
	if t.err != nil {
		return fmt.Errorf("%w: %w", errStdioClosed, t.err)
	}
	return errStdioClosed
}

// write writes one message and its newline to the server.
func (t *stdioTransport) write(msg []byte) error {
	line := make([]byte, 0, len(msg)+1)
	line = append(line, bytes.TrimSpace(msg)...)
	line = append(line, '\n')
	t.wmu.Lock()
	defer t.wmu.Unlock()
	if _, err := t.w.Write(line); err != nil {
		return fmt.Errorf("mcp: write to the stdio server: %w", err)
	}
	return nil
}

// read routes each line the server writes to the body waiting for it, until the output ends.
func (t *stdioTransport) read(r io.Reader) {
	defer close(t.done)
	br := bufio.NewReaderSize(r, 64<<10)
	var err error
	for {
		var line []byte
		line, err = readLine(br, t.maxLine)
		if errors.Is(err, errLineTooLong) {
			t.log.Warn("mcp: the stdio server wrote a message over the size limit; skipped", "limit", t.maxLine)
			continue
		}
		if len(line) > 0 {
			t.route(line)
		}
		if err != nil {
			break
		}
	}
	if errors.Is(err, io.EOF) {
		err = errors.New("the server closed its output")
	}
	t.mu.Lock()
	t.err = err
	bodies := make([]*msgBody, 0, len(t.pending)+1)
	for _, b := range t.pending {
		bodies = append(bodies, b)
	}
	bodies = append(bodies, t.standalone)
	t.mu.Unlock()
	for _, b := range bodies {
		b.end(io.ErrUnexpectedEOF)
	}
}

// route delivers one message from the server.
func (t *stdioTransport) route(line []byte) {
	var head struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		} `json:"params"`
	}
	if err := json.Unmarshal(line, &head); err != nil {
		t.log.Warn("mcp: the stdio server wrote something other than a JSON-RPC message to stdout; skipped", "line", truncate(string(line), 200))
		return
	}
	t.mu.Lock()
	var body *msgBody
	final := false
	switch {
	case head.Method == "" && len(head.ID) > 0:
		body, final = t.pending[string(head.ID)], true
		delete(t.pending, string(head.ID))
	case head.Method == notifProgress && len(head.Params.ProgressToken) > 0:
		body = t.progress[string(head.Params.ProgressToken)]
	}
	if body == nil {
		body = t.standalone
	}
	t.mu.Unlock()
	if final && body.answer(line) {
		return
	}
	body.push(line)
	if final {
		body.end(nil)
	}
}

// close shuts the connection down (Client.Close calls it once its own work has stopped).
func (t *stdioTransport) close(ctx context.Context) error {
	var err error
	t.closing.Do(func() { err = t.shutdown(ctx) })
	return err
}

// msgBody is an SSE response body fed by the transport's reader: each message pushed is one
// event. It never blocks the reader: what the client has not read yet is held, up to limit
// bytes; past that the body fails, which fails its call, rather than dropping a message.
type msgBody struct {
	mu      sync.Mutex
	wake    chan struct{}
	ready   chan struct{} // closed once something arrived or the body ended
	isReady bool
	single  []byte // the response, when it arrived first and alone
	pushed  bool
	buf     []byte
	limit   int
	ended   bool
	endErr  error
	closed  bool
	onClose func()
}

func newMsgBody(limit int, onClose func()) *msgBody {
	return &msgBody{wake: make(chan struct{}, 1), ready: make(chan struct{}), limit: limit, onClose: onClose}
}

// markReady closes ready once; b.mu is held.
func (b *msgBody) markReady() {
	if !b.isReady {
		b.isReady = true
		close(b.ready)
	}
}

// answer takes the response as the body's only message if nothing came before it, and
// reports whether it did.
func (b *msgBody) answer(msg []byte) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pushed || b.ended || b.closed {
		return false
	}
	b.single, b.ended = msg, true
	b.markReady()
	return true
}

// only returns the response when it is the body's only message.
func (b *msgBody) only() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.single
}

func (b *msgBody) signal() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// push queues one message as an SSE event.
func (b *msgBody) push(msg []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed || b.ended {
		return
	}
	b.pushed = true
	b.markReady()
	if len(b.buf)+len(msg) > b.limit {
		b.ended, b.endErr = true, fmt.Errorf("mcp: more than %d bytes from the stdio server are waiting to be read", b.limit)
		b.signal()
		return
	}
	b.buf = append(b.buf, "data: "...)
	b.buf = append(b.buf, msg...)
	b.buf = append(b.buf, "\n\n"...)
	b.signal()
}

// end ends the body once its queued events are read: with EOF, or with err.
func (b *msgBody) end(err error) {
	b.mu.Lock()
	if !b.ended {
		b.ended, b.endErr = true, err
	}
	b.markReady()
	b.mu.Unlock()
	b.signal()
}

// Read implements io.Reader.
func (b *msgBody) Read(p []byte) (int, error) {
	for {
		b.mu.Lock()
		switch {
		case b.closed:
			b.mu.Unlock()
			return 0, errStdioClosed
		case len(b.buf) > 0:
			n := copy(p, b.buf)
			b.buf = b.buf[n:]
			if len(b.buf) == 0 {
				b.buf = nil
			}
			b.mu.Unlock()
			return n, nil
		case b.ended:
			err := b.endErr
			b.mu.Unlock()
			if err == nil {
				err = io.EOF
			}
			return 0, err
		}
		b.mu.Unlock()
		<-b.wake
	}
}

// Close implements io.Closer: the client is done with the body.
func (b *msgBody) Close() error {
	b.mu.Lock()
	already := b.closed
	b.closed, b.buf = true, nil
	b.mu.Unlock()
	b.signal()
	if !already && b.onClose != nil {
		b.onClose()
	}
	return nil
}

// errLineTooLong is returned by readLine for a line over its limit, which it skips.
var errLineTooLong = errors.New("line too long")

// readLine reads one line without its newline, skipping blank lines. A line over limit bytes
// is skipped and reported as errLineTooLong, with its first bytes (for the message's id).
func readLine(r *bufio.Reader, limit int) ([]byte, error) {
	var line, head []byte
	tooLong := false
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			line = append(line, chunk...)
			if len(line) > limit+2 {
				head = bytes.Clone(line[:min(len(line), 512)])
				line, tooLong = nil, true
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if tooLong {
			if err != nil {
				return nil, err
			}
			return head, errLineTooLong
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 && err == nil {
			continue
		}
		return line, err
	}
}

// lineLogger logs what a child process writes to stderr, a line at a time.
type lineLogger struct {
	mu   sync.Mutex
	log  *slog.Logger
	attr slog.Attr
	buf  []byte
}

// Write implements io.Writer.
func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		l.emit(l.buf[:i])
		l.buf = l.buf[i+1:]
	}
	if len(l.buf) > 64<<10 {
		l.emit(l.buf)
		l.buf = nil
	}
	return len(p), nil
}

func (l *lineLogger) emit(line []byte) {
	if s := strings.TrimRight(string(line), "\r"); s != "" {
		l.log.Info("mcp: stdio server stderr", l.attr, slog.String("line", s))
	}
}

func (l *lineLogger) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.emit(l.buf)
	l.buf = nil
}
