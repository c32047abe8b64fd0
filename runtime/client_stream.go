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
	"maps"
	"mime"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// roundTrip sends one request on the client's transport and reads its answer. It returns the
// raw result, or the JSON-RPC error as an *Error, and for initialize the session ID the server
// assigned. It gives the request a new ID (r.ID) and sends r.Params with r.Meta as their
// _meta (and, over HTTP, r.Header besides the client's own headers).
func (c *Client) roundTrip(ctx context.Context, st *clientSession, r *Request, co *callOptions) (json.RawMessage, string, error) {
	id := IntID(c.nextID.Add(1))
	r.ID = id
	body, err := st.encodeCall(&id, r)
	if err != nil {
		return nil, "", err
	}
	return c.tr.exchange(ctx, st, r, id, body, co)
}

// encodeCall encodes r as the request id, its params with r.Meta as their _meta, and in the
// modern era the session's. The common modern request, with neither, has the session's _meta
// written into the body as it is encoded, without a copy of the params in between; the
// tasks/ methods declare the tasks extension (paramsOf).
func (st *clientSession) encodeCall(id *ID, r *Request) ([]byte, error) {
	if st.modern && r.Meta == nil && !isTaskMethod(r.Method) && !bytes.Contains(r.Params, []byte(`"_meta"`)) {
		mb, err := st.modernMetaJSON()
		if err != nil {
			return nil, fmt.Errorf("encode %s params: %w", r.Method, err)
		}
		p, err := metaCarrier(r.Params)
		if err != nil {
			return nil, fmt.Errorf("encode %s params: %w", r.Method, err)
		}
		return encodeRequestMeta(id, r.Method, p, mb), nil
	}
	params, err := st.paramsOf(r)
	if err != nil {
		return nil, fmt.Errorf("encode %s params: %w", r.Method, err)
	}
	return encodeRequest(id, r.Method, params)
}

// paramsOf is r.Params with r.Meta as their _meta, and in the modern era the session's
// (spec 2026-07-28, Streamable HTTP, Request Metadata).
func (st *clientSession) paramsOf(r *Request) (json.RawMessage, error) {
	if !st.modern {
		return withMeta(r.Params, r.Meta)
	}
	if isTaskMethod(r.Method) {
		// tasks/get, tasks/update, tasks/cancel: refused unless the extension is declared.
		return withMeta(r.Params, st.modernMeta(st.withTasksDeclared(r.Meta)))
	}
	if r.Meta != nil || bytes.Contains(r.Params, []byte(`"_meta"`)) {
		return withMeta(r.Params, st.modernMeta(r.Meta))
	}
	// The common modern request: the session's _meta, encoded once, spliced in.
	mb, err := st.modernMetaJSON()
	if err != nil {
		return nil, err
	}
	return spliceMeta(r.Params, mb)
}

// httpExchange POSTs one request, encoded in body with id, and reads its answer, JSON or SSE.
func (c *Client) httpExchange(ctx context.Context, st *clientSession, r *Request, id ID, body []byte, co *callOptions) (json.RawMessage, http.Header, error) {
	req, detach, err := c.postRequest(ctx, st, r, body)
	if err != nil {
		return nil, nil, err
	}
	resp, err := c.do(req, detach)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, c.abandon(st, r.Method, &id, ctx)
		}
		return nil, nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		defer resp.Body.Close()
		return nil, resp.Header, readHTTPError(resp)
	}
	raw, err := c.readAnswer(ctx, st, r.Method, &id, resp, detach, co)
	return raw, resp.Header, err
}

// postRequest makes the POST of r: the session's headers, r.Header's where the session has
// none, and in the modern era the headers that mirror the request (spec 2026-07-28,
// Streamable HTTP).
func (c *Client) postRequest(ctx context.Context, st *clientSession, r *Request, body []byte) (*http.Request, *clientRequest, error) {
	header := c.postHeader(st)
	if !c.mayShareHeader(st, r) {
		header = maps.Clone(header)
	}
	req, detach, err := c.newRequest(ctx, http.MethodPost, header, body)
	if err != nil {
		return nil, nil, err
	}
	for k, v := range r.Header {
		if _, ok := req.Header[k]; !ok {
			req.Header[k] = v
		}
	}
	if st.modern {
		setModernHeaders(req, r.Method, r.Name)
		st.setToolParamHeaders(req, r)
	}
	return req, detach, nil
}

// mayShareHeader decides whether a POST may send the session's header map itself: when
// nothing adds to it and the transport is net/http's, which never modifies a request.
func (c *Client) mayShareHeader(st *clientSession, r *Request) bool {
	return len(r.Header) == 0 && !st.modern && c.direct != nil && c.direct.std
}

// setToolParamHeaders sets, on the POST of a tools/call, the headers its tool mirrors its
// parameters into, as tools/list described them.
func (st *clientSession) setToolParamHeaders(req *http.Request, r *Request) {
	if r.Method != methodToolsCall {
		return
	}
	if anns, ok := st.toolHeaders.Load(r.Name); ok {
		setParamHeaders(req, anns.([]paramHeader), r.Params)
	}
}

// readAnswer reads the answer to a POST that succeeded, by its Content-Type: one JSON
// response, or an SSE stream (spec 2025-11-25, Streamable HTTP, Sending Messages to the
// Server).
func (c *Client) readAnswer(ctx context.Context, st *clientSession, method string, id *ID, resp *http.Response, detach *clientRequest, co *callOptions) (json.RawMessage, error) {
	switch mediaType(resp.Header.Get("Content-Type")) {
	case "application/json":
		return c.readJSON(resp.Body, resp.ContentLength, id)
	case "text/event-stream":
		if method == methodInitialize {
			// The session ID arrives with these headers; handlers on this stream need it.
			st = &clientSession{id: resp.Header.Get(headerSessionID)}
		}
		detach.detach() // consume closes the body when ctx ends, and drains it past the call
		return c.readStream(ctx, st, method, id, resp.Body, co)
	default:
		resp.Body.Close()
		return nil, fmt.Errorf("unexpected Content-Type %q in the answer to %s", resp.Header.Get("Content-Type"), method)
	}
}

// readJSON reads a JSON answer to its end (so the connection is reused) and returns the
// result of the response with id.
func (c *Client) readJSON(body io.ReadCloser, size int64, id *ID) (json.RawMessage, error) {
	defer body.Close()
	b, err := readResponseBody(body, size, c.cfg.maxResponse)
	if err != nil {
		return nil, err
	}
	m, rpcErr := decodeMessage(b)
	if rpcErr != nil {
		return nil, fmt.Errorf("malformed response: %s", rpcErr.Message)
	}
	if !m.isResponse() || m.ID.raw != id.raw {
		return nil, fmt.Errorf("the server answered with something other than the response to request %s", id.raw)
	}
	if m.Error != nil {
		return nil, m.Error
	}
	return m.Result, nil
}

// readResponseBody reads body to its end (so that the connection goes back to the pool), at most max
// bytes. A body of known size (Content-Length) is read into one buffer of that size.
func readResponseBody(body io.Reader, size, max int64) ([]byte, error) {
	if size > 0 && size <= max { // 0: unknown to some RoundTrippers too
		return readSized(body, size)
	}
	b, err := io.ReadAll(io.LimitReader(body, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("response larger than %d bytes", max)
	}
	return b, nil
}

// readSized reads a body of size bytes (its Content-Length) into one buffer, and then its
// end: the transport returns the connection to its pool at EOF. A body longer than it said
// is an error.
func readSized(body io.Reader, size int64) ([]byte, error) {
	b := make([]byte, size)
	if _, err := io.ReadFull(body, b); err != nil {
		return nil, err
	}
	var one [1]byte
	for range 3 { // a Read may return no bytes and no error
		n, err := body.Read(one[:])
		switch {
		case n > 0:
			return nil, fmt.Errorf("response longer than its Content-Length of %d bytes", size)
		case err == io.EOF:
			return b, nil
		case err != nil:
			return nil, err
		}
	}
	return b, nil
}

// mediaType returns the media type of a Content-Type value, lower-cased and without
// parameters; the common values are returned without allocating.
func mediaType(ct string) string {
	switch ct {
	case "application/json", "text/event-stream":
		return ct
	}
	mt, _, _ := mime.ParseMediaType(ct)
	return mt
}

// streamCursor tracks where a response stream is, for resumption.
type streamCursor struct {
	// lastEventID is the ID of the stream's last event, copied into idBuf unless longer:
	// it is read only when the stream is resumed.
	lastEventID []byte
	idBuf       [32]byte
	retry       time.Duration
	progressed  bool // an event with an ID arrived since the last (re)connection
}

// readStream reads an SSE answer until the response to id arrives, resuming with GET and
// Last-Event-ID (never re-POSTing) when the stream ends without it.
func (c *Client) readStream(ctx context.Context, st *clientSession, method string, id *ID, body io.ReadCloser, co *callOptions) (json.RawMessage, error) {
	// One allocation for the stream's cursor and dispatcher, and the reader of its
	// connections (consume is done with one when it returns without the response).
	rs := &struct {
		cur  streamCursor
		disp dispatcher
		sr   streamReader
	}{cur: streamCursor{retry: time.Second}}
	cur, disp := &rs.cur, &rs.disp
	defer disp.logs.flush(ctx, c.cfg.logger)
	failures := 0
	var bo backoff
	bo.connected()
	for {
		raw, done, err := c.consume(ctx, st, id, body, co, cur, disp, &rs.sr)
		if done {
			return raw, err
		}
		if err := c.unresumable(ctx, st, method, id, cur, err); err != nil {
			return nil, err
		}
		if cur.progressed {
			failures = 0
		}
		failures++
		if failures > c.cfg.maxResumes {
			return nil, fmt.Errorf("the response stream ended before the response %d times in a row; giving up", failures-1)
		}
		cur.progressed = false
		if body, err = c.resume(ctx, st, method, id, cur, &bo); err != nil {
			return nil, err
		}
	}
}

// unresumable decides whether a response stream that ended, with err, before the response
// may be resumed: it returns nil if so, else the error that ends the call. The modern era's
// streams are never resumed (spec 2026-07-28, Streamable HTTP).
func (c *Client) unresumable(ctx context.Context, st *clientSession, method string, id *ID, cur *streamCursor, err error) error {
	if errors.Is(err, bufio.ErrTooLong) {
		// Resuming would replay the same event: give up at once, and say why.
		c.cancelRemote(st, method, id, ctx)
		return fmt.Errorf("an SSE event of the answer is larger than the client's limit of %d bytes (see WithMaxEventSize)", c.cfg.maxEventSize)
	}
	if ctx.Err() != nil {
		return c.abandon(st, method, id, ctx)
	}
	if err == nil {
		err = io.ErrUnexpectedEOF
	}
	if st != nil && st.modern {
		return fmt.Errorf("the response stream ended before the response (MCP %s streams cannot be resumed): %w", st.version, err)
	}
	if len(cur.lastEventID) == 0 {
		return fmt.Errorf("the response stream ended before the response, with no event ID to resume from: %w", err)
	}
	return nil
}

// resume waits out the reconnection delay, with a floor and a backoff so that no reconnect
// storm follows, and reopens the stream with GET and Last-Event-ID (spec 2025-11-25,
// Streamable HTTP, Resumability and Redelivery). A GET that fails is tried again on the next
// turn (resume returns an empty body); an expired session and the call's end are final.
func (c *Client) resume(ctx context.Context, st *clientSession, method string, id *ID, cur *streamCursor, bo *backoff) (io.ReadCloser, error) {
	if !sleep(ctx, bo.delay(cur.retry)) {
		return nil, c.abandon(st, method, id, ctx)
	}
	bo.connected()
	body, err := c.openResume(ctx, st, string(cur.lastEventID))
	switch {
	case err == nil:
		return body, nil
	case isNotFound(err):
		return nil, fmt.Errorf("resuming the response stream: %w (the request may have run; not retried): %w", ErrSessionExpired, err)
	case ctx.Err() != nil:
		return nil, c.abandon(st, method, id, ctx)
	}
	c.cfg.logger.Debug("mcp: resume failed; will retry", "error", err)
	return io.NopCloser(bytes.NewReader(nil)), nil
}

// abandon tells the server that the client gave up on the request id, whose context ctx
// ended, and returns ctx's error.
func (c *Client) abandon(st *clientSession, method string, id *ID, ctx context.Context) error {
	c.cancelRemote(st, method, id, ctx)
	return ctx.Err()
}

// openResume opens GET with Last-Event-ID.
func (c *Client) openResume(ctx context.Context, st *clientSession, lastEventID string) (io.ReadCloser, error) {
	req, detach, err := c.newRequest(ctx, http.MethodGet, make(http.Header), nil)
	if err != nil {
		return nil, err
	}
	c.setHeaders(req, st)
	req.Header["Accept"] = getAccept
	req.Header.Set(headerLastEventID, lastEventID)
	resp, err := c.do(req, detach)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, readHTTPError(resp)
	}
	detach.detach()
	return resp.Body, nil
}

// newRequest makes a request to the endpoint under a context that follows ctx only until the
// response body's detach is called. The transport closes the connection of a request whose
// context ends before its body was read to the end, and a call's context usually ends as soon
// as the call returns (defer cancel(), or the client's default call timeout): a stream drained
// in the background after the response must not depend on it. Readers detach once they close
// the body themselves when ctx ends. The body's Close releases the request's context; so does
// do when the request fails.
//
// The request is a copy of the client's template (made once by NewClient with
// http.NewRequest, so its fields are those NewRequest sets); its URL, its body's reader and
// the context's parent live in the clientRequest, one allocation with the response body's
// wrapper.
func (c *Client) newRequest(ctx context.Context, method string, header http.Header, body []byte) (*http.Request, *clientRequest, error) {
	if c.tmplErr != nil {
		return nil, nil, c.tmplErr
	}
	cr := &clientRequest{}
	cr.values.Context = ctx
	rctx, cancel := context.WithCancel(&cr.values)
	cr.unlink, cr.cancel = context.AfterFunc(ctx, cancel), cancel
	req := c.tmpl.WithContext(rctx)
	cr.url = *c.tmpl.URL
	req.URL = &cr.url
	req.Method = method
	req.Header = header
	if body != nil {
		// As http.NewRequest does for a *bytes.Reader: the transport sends a known in-memory
		// body with its headers, and GetBody lets it retry on a pooled connection the server
		// had closed.
		cr.body.Reset(body)
		req.Body = io.NopCloser(&cr.body)
		req.ContentLength = int64(len(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		if len(body) == 0 {
			req.Body = http.NoBody
			req.GetBody = func() (io.ReadCloser, error) { return http.NoBody, nil }
		}
	}
	return req, cr, nil
}

// do sends req, made by newRequest with cr, and wraps the response's body in cr.
func (c *Client) do(req *http.Request, cr *clientRequest) (*http.Response, error) {
	var (
		resp *http.Response
		err  error
	)
	if c.direct != nil {
		resp, err = c.direct.do(req)
	} else {
		resp, err = c.hc.Do(req)
	}
	if err != nil {
		cr.release()
		return nil, err
	}
	cr.ReadCloser = resp.Body
	resp.Body = cr
	return resp, nil
}

// clientRequest is what one request of the client holds until its response body is closed:
// its URL and body reader (the http.Request points at them), the parent of its context, and
// the release functions of that context. As a response body it is the transport's body whose
// Close also releases the request's context.
type clientRequest struct {
	io.ReadCloser // the response body
	unlink        func() bool
	cancel        context.CancelFunc
	values        valuesOnly
	url           url.URL
	body          bytes.Reader
}

// detach stops the request's context from following the call's.
func (b *clientRequest) detach() { b.unlink() }

func (b *clientRequest) Close() error {
	err := b.ReadCloser.Close()
	b.release()
	return err
}

// release ends the request's context.
func (b *clientRequest) release() {
	b.unlink()
	b.cancel()
}

// valuesOnly is a context with the values of its parent and neither its deadline nor its
// cancellation, as context.WithoutCancel makes, held inside a clientRequest.
type valuesOnly struct{ context.Context }

func (*valuesOnly) Deadline() (time.Time, bool) { return time.Time{}, false }
func (*valuesOnly) Done() <-chan struct{}       { return nil }
func (*valuesOnly) Err() error                  { return nil }

// consume reads one connection's worth of a response stream. done reports that the call is
// over (the response, or a fatal error); otherwise the stream ended early and may be resumed.
// Once the response arrives, the rest of the stream is drained: at once when the reads already
// reached its end, else in the background. sr, when not nil, is the reader to use (its
// previous use is over).
func (c *Client) consume(ctx context.Context, st *clientSession, id *ID, body io.ReadCloser, co *callOptions, cur *streamCursor, disp *dispatcher, sr *streamReader) (json.RawMessage, bool, error) {
	if sr == nil {
		sr = new(streamReader)
	}
	*sr = streamReader{r: body, events: sr.events}
	sr.events.reset(sr, c.cfg.maxEventSize, cur)
	defer sr.events.release()
	closeBody := func() { body.Close() } // for ctx's end, and the drain's limits
	unwatch := context.AfterFunc(ctx, closeBody)
	resp, readErr := c.readUntilResponse(ctx, st, id, co, disp, sr)
	if resp == nil {
		unwatch()
		body.Close()
		return nil, false, readErr
	}
	c.finishStream(body, sr, unwatch, closeBody)
	disp.wait(ctx)
	if resp.Error != nil {
		return nil, true, resp.Error
	}
	return resp.Result, true, nil
}

// readUntilResponse reads the events of a response stream from sr until the response to id,
// serving the server's requests and dispatching the notifications that come before it. It
// returns a nil response, and the read's error, when the stream ends first.
func (c *Client) readUntilResponse(ctx context.Context, st *clientSession, id *ID, co *callOptions, disp *dispatcher, sr *streamReader) (*wireMessage, error) {
	for {
		ev, err := sr.events.next()
		if err != nil {
			if err == io.EOF { //nolint:errorlint // the reader's own end, unwrapped
				return nil, nil
			}
			return nil, err
		}
		sr.events.cur.observe(ev.lastID)
		if !carriesMessage(ev.typ, ev.data) {
			continue
		}
		// The message keeps slices of what it decodes from: a copy of the event, whose
		// bytes the reader's buffer holds only until its next event.
		m, rpcErr := decodeMessage(bytes.Clone(ev.data))
		if rpcErr != nil {
			disp.logs.log(ctx, c.cfg.logger, slog.LevelWarn, "mcp: ignoring malformed message on the response stream", "error", rpcErr.Message)
			continue
		}
		if c.handleStreamMessage(ctx, st, id, co, disp, m) {
			return m, nil
		}
	}
}

// carriesMessage reports whether an SSE event of type typ with data carries a JSON-RPC
// message: a "message" event (the default type) with data (spec 2025-11-25, Streamable HTTP,
// Sending Messages to the Server).
func carriesMessage(typ string, data []byte) bool {
	return len(data) > 0 && (typ == "" || typ == "message")
}

// observe records the ID of an event of the stream: where a resumption starts from.
func (cur *streamCursor) observe(eventID []byte) {
	if len(eventID) > 0 && !bytes.Equal(eventID, cur.lastEventID) {
		if cur.lastEventID == nil {
			cur.lastEventID = cur.idBuf[:0]
		}
		cur.lastEventID = append(cur.lastEventID[:0], eventID...)
		cur.progressed = true
	}
}

// handleStreamMessage acts on one message of a response stream and reports whether it is the
// response to id: the server's requests are served, its notifications dispatched, and
// responses to other requests ignored.
func (c *Client) handleStreamMessage(ctx context.Context, st *clientSession, id *ID, co *callOptions, disp *dispatcher, m *wireMessage) bool {
	switch {
	case m.isResponse() && m.ID.raw == id.raw:
		return true
	case m.isResponse():
		disp.logs.log(ctx, c.cfg.logger, slog.LevelDebug, "mcp: ignoring a response to another request", "id", m.ID.short())
	case m.isRequest():
		c.serveRequest(ctx, st, m)
	default:
		c.dispatchNotification(disp, m, co, true)
	}
	return false
}

// finishStream ends a response stream whose response has arrived. The body is closed at once
// when ctx ended (unwatch fails: closeBody ran) or the reads reached its end (the connection
// is back in the pool); otherwise the rest is read to its end in the background, so that the
// connection returns to the pool. The caller waits a moment for that end, which servers write
// right after the response: a call that returned before its connection was back in the pool
// would make the next call dial a new one.
func (c *Client) finishStream(body io.ReadCloser, sr *streamReader, unwatch func() bool, closeBody func()) {
	if !unwatch() || sr.eof {
		body.Close()
		return
	}
	c.bg.Add(1)
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		c.drain(body, sr, closeBody)
	}()
	t := time.NewTimer(tailWait)
	select {
	case <-drained:
	case <-t.C:
	}
	t.Stop()
}

// tailWait bounds how long a call waits, after its response, for the server to end the
// stream (see consume); a server that keeps it open longer costs the call no more than this.
const tailWait = 2 * time.Millisecond

// drain reads what is left of a finished response stream, within the drain limits, until
// the client closes; closeBody closes body. The events are not parsed: they are discarded
// (io.Discard reads into a pooled buffer).
func (c *Client) drain(body io.ReadCloser, sr *streamReader, closeBody func()) {
	defer c.bg.Done()
	t := time.AfterFunc(c.cfg.drainTime, closeBody)
	defer context.AfterFunc(c.baseCtx, closeBody)()
	sr.limit = sr.n + c.cfg.drainBytes // checked on every read: comment lines count too
	_, _ = io.Copy(io.Discard, sr)
	t.Stop()
	body.Close()
}

// cancelRemote tells the server, in the background and within the close timeout, that the
// client gave up on a request.
func (c *Client) cancelRemote(st *clientSession, method string, id *ID, cause context.Context) {
	if method == methodInitialize || st == nil || st.modern {
		return // a modern request was cancelled by closing its stream
	}
	reqID := *id // a copy: the caller's ID stays on its stack on every call that is not cancelled
	body, err := encodeRequest(nil, notifCancelled, &CancelledParams{RequestID: &reqID, Reason: cancelReason(cause.Err())})
	if err != nil {
		return
	}
	// None is sent once Close has begun: it ends the session, which ends the server's
	// requests, and waits for the client's background work, which may not grow from nothing
	// while it waits.
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.bg.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.bg.Done()
		ctx, cancel := context.WithTimeout(c.baseCtx, c.cfg.closeTimeout)
		defer cancel()
		if err := c.postNoReply(ctx, st, body); err != nil {
			c.cfg.logger.Debug("mcp: could not send notifications/cancelled", "error", err)
		}
	}()
}

// cancelReason is the reason notifications/cancelled gives for a call whose context ended
// with err.
func cancelReason(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return "timed out on the client"
	}
	return "cancelled by the client"
}

// streamReader counts the bytes of a stream, stops at the drain's limit, and holds the
// reader of its events.
type streamReader struct {
	r      io.Reader
	n      int64
	limit  int64 // when positive, no read goes past it; reads at it fail with errDrainLimit
	eof    bool  // r returned io.EOF
	events eventReader
}

// Read reads from the stream, within the drain limit when there is one.
func (s *streamReader) Read(p []byte) (int, error) {
	if s.limit > 0 && s.n >= s.limit {
		return 0, errDrainLimit
	}
	n, err := s.r.Read(s.clip(p))
	s.n += int64(n)
	if err == io.EOF {
		s.eof = true
	}
	return n, err
}

// clip shortens p to what the drain limit leaves of the stream, when there is one.
func (s *streamReader) clip(p []byte) []byte {
	if rest := s.limit - s.n; s.limit > 0 && int64(len(p)) > rest {
		return p[:rest]
	}
	return p
}

// dispatcher runs notification handlers in order, off the reading goroutine: a queue and at
// most one goroutine, which exits when the queue is empty. It also bounds the log lines that
// its stream's messages make.
type dispatcher struct {
	logs    logBound // lines the stream's messages make (malformed, misrouted), bounded
	mu      sync.Mutex
	queue   []queuedCallback
	running bool
	idle    chan struct{} // closed when the running goroutine exits
	dropped bool          // a notification was dropped (logged once)
	held    int64         // the bytes of the queued callbacks, of the client's budget
}

// holding is how many bytes of the client's notification budget d's queued callbacks hold.
func (d *dispatcher) holding() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.held
}

// queuedCallback is a notification's callback waiting to run, and the bytes it holds.
type queuedCallback struct {
	f    func()
	size int64
}

// wait blocks until every queued handler has run, or ctx is done, and returns ctx's error if
// that came first. A call waits for it before returning, so that the callbacks of
// notifications that preceded the response have run.
func (d *dispatcher) wait(ctx context.Context) error {
	d.mu.Lock()
	ch := d.idle
	running := d.running
	d.mu.Unlock()
	if !running {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// enqueue queues f, which holds size bytes, within the client's notification budget; beyond
// it the notification is dropped (logged once per stream).
func (c *Client) enqueue(d *dispatcher, size int64, f func()) {
	if c.tryEnqueue(d, size, f) {
		return
	}
	d.mu.Lock()
	first := !d.dropped
	d.dropped = true
	d.mu.Unlock()
	if first {
		c.cfg.logger.Warn("mcp: dropping notifications: their callbacks are not keeping up (see WithNotificationBudget)", "budget", c.cfg.notificationBudget)
	}
}

// tryEnqueue queues f, which holds size bytes, if the client's notification budget has room
// for it, and reports whether it did.
func (c *Client) tryEnqueue(d *dispatcher, size int64, f func()) bool {
	if c.notifBytes.Add(size) > c.cfg.notificationBudget {
		c.notifBytes.Add(-size)
		return false
	}
	d.mu.Lock()
	d.queue = append(d.queue, queuedCallback{f: f, size: size})
	d.held += size
	if d.running {
		d.mu.Unlock()
		return true
	}
	d.running = true
	idle := make(chan struct{})
	d.idle = idle
	d.mu.Unlock()
	c.bg.Add(1)
	go func() {
		defer c.bg.Done()
		for {
			d.mu.Lock()
			if len(d.queue) == 0 {
				d.running = false
				close(idle)
				d.mu.Unlock()
				return
			}
			cb := d.queue[0]
			d.queue[0] = queuedCallback{}
			d.queue = d.queue[1:]
			d.mu.Unlock()
			if c.baseCtx.Err() == nil { // no callback starts once Close has begun stopping
				cb.f()
			}
			d.mu.Lock()
			d.held -= cb.size
			d.mu.Unlock()
			c.notifBytes.Add(-cb.size)
		}
	}()
	return true
}

// dispatchNotification hands a notification to its callbacks through d. inline says that the
// caller reads one call's messages alone, so that a typed stream's progress callback may run
// on it, slowing only that call's reads; a reader shared by every call queues it instead, and
// reports with overflow that it could not, the notification budget being spent: a typed
// stream loses no message, so the call is to fail.
func (c *Client) dispatchNotification(d *dispatcher, m *wireMessage, co *callOptions, inline bool) (overflow bool) {
	switch m.Method {
	case notifCancelled:
		c.cancelServerRequest(m.Params)
	case notifProgress:
		overflow = c.dispatchProgress(d, m.Params, co, inline)
	case notifMessage:
		c.dispatchLog(d, m.Params)
	case notifToolsListChanged, notifPromptsListChanged, notifResourcesListChanged:
		c.listChanged(m.Method) // before any callback runs: a list it asks for is fresh
	}
	if h := c.cfg.onNotification; h != nil {
		ctx, method, params := c.baseCtx, m.Method, m.Params
		c.enqueue(d, int64(len(params)), func() { h(ctx, method, params) })
	}
	return overflow
}

// dispatchProgress hands a notifications/progress to the progress callback of the call it
// belongs to, if that call has one; see dispatchNotification for inline and overflow.
func (c *Client) dispatchProgress(d *dispatcher, params json.RawMessage, co *callOptions, inline bool) (overflow bool) {
	if co == nil || co.onProgress == nil {
		return false
	}
	var p ProgressParams
	if err := json.Unmarshal(params, &p); err != nil || !bytes.Equal(p.ProgressToken, co.progressToken) {
		return false
	}
	fn := co.onProgress
	switch {
	case co.progressSync && inline:
		fn(&p) // a typed stream's bounded buffer: back-pressure on this call's reads
	case co.progressSync:
		return !c.tryEnqueue(d, int64(len(params)), func() { fn(&p) })
	default:
		c.enqueue(d, int64(len(params)), func() { fn(&p) })
	}
	return false
}

// dispatchLog hands a notifications/message to the client's log callback, if it has one.
func (c *Client) dispatchLog(d *dispatcher, params json.RawMessage) {
	fn := c.cfg.onLog
	if fn == nil {
		return
	}
	var p LogMessageParams
	if err := json.Unmarshal(params, &p); err == nil {
		ctx := c.baseCtx
		c.enqueue(d, int64(len(params)), func() { fn(ctx, &p) })
	}
}
