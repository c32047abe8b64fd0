package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// serveRequest answers a request the server sent on a stream (sampling, elicitation, roots,
// ping) in its own goroutine, POSTing the response back. The handler's context ends when the
// call that carried the request is cancelled, when the server sends notifications/cancelled
// for it, or when the client closes.
func (c *Client) serveRequest(callCtx context.Context, st *clientSession, m *wireMessage) {
	if !c.tryServerRequest() {
		c.refuseServerRequest(st, m)
		return
	}
	ctx, cancel := context.WithTimeout(callCtx, 10*time.Minute)
	stop := context.AfterFunc(c.baseCtx, cancel)
	c.mu.Lock()
	if c.serverReqs == nil {
		c.serverReqs = make(map[string]context.CancelFunc)
	}
	c.serverReqs[m.ID.raw] = cancel
	c.mu.Unlock()
	c.bg.Add(1)
	go func() {
		defer c.bg.Done()
		defer func() { <-c.serverReqSem }()
		defer func() {
			stop()
			cancel()
			c.mu.Lock()
			delete(c.serverReqs, m.ID.raw)
			c.mu.Unlock()
		}()
		c.answerServerRequest(ctx, callCtx, st, m)
	}()
}

// answerServerRequest runs the handler of the server's request m under ctx and POSTs its
// response, unless the server cancelled the request (ctx ended while the call's context and
// the client's did not): then it wants no response (spec 2025-11-25, Utilities,
// Cancellation).
func (c *Client) answerServerRequest(ctx, callCtx context.Context, st *clientSession, m *wireMessage) {
	result, err := c.handleServerRequest(ctx, m)
	if err != nil && ctx.Err() != nil && callCtx.Err() == nil && c.baseCtx.Err() == nil {
		return
	}
	body := encodeHandlerResponse(m.ID, result, err)
	pctx, pcancel := context.WithTimeout(c.baseCtx, c.cfg.closeTimeout)
	defer pcancel()
	if err := c.postNoReply(pctx, st, body); err != nil {
		c.logs.log(ctx, c.cfg.logger, slog.LevelWarn, "mcp: could not send the response to a server request", "method", m.Method, "error", err)
	}
}

// encodeHandlerResponse encodes the response to request id from its handler's result or
// error; a result that cannot be encoded is an internal error.
func encodeHandlerResponse(id *ID, result any, err error) []byte {
	if err != nil {
		return encodeResponse(id, nil, toRPCError(err))
	}
	raw, err := json.Marshal(result)
	if err != nil {
		return encodeResponse(id, nil, Errorf(CodeInternalError, "encode result: %v", err))
	}
	return encodeResponse(id, raw, nil)
}

// cancelServerRequest cancels the handler of a server request (notifications/cancelled).
func (c *Client) cancelServerRequest(params json.RawMessage) {
	var p CancelledParams
	if json.Unmarshal(params, &p) != nil || p.RequestID == nil {
		return
	}
	c.mu.Lock()
	cancel := c.serverReqs[p.RequestID.raw]
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// handleServerRequest runs the client's handler of the server's request m, and says which
// methods this client does not support (spec 2025-11-25, Client Features).
func (c *Client) handleServerRequest(ctx context.Context, m *wireMessage) (any, error) {
	switch m.Method {
	case methodPing:
		return struct{}{}, nil
	case methodCreateMessage:
		return c.sample(ctx, m.Params)
	case methodElicit:
		return c.elicit(ctx, m.Params)
	case methodListRoots:
		if c.cfg.roots == nil {
			return nil, NewError(CodeMethodNotFound, "this client does not support roots")
		}
		return c.cfg.roots(ctx)
	default:
		return nil, Errorf(CodeMethodNotFound, "method not found: %s", m.Method)
	}
}

// sample answers sampling/createMessage with the client's sampling handler.
func (c *Client) sample(ctx context.Context, params json.RawMessage) (any, error) {
	if c.cfg.sampling == nil {
		return nil, NewError(CodeMethodNotFound, "this client does not support sampling")
	}
	var p CreateMessageParams
	if err := unmarshalParams(params, &p); err != nil {
		return nil, err
	}
	return c.cfg.sampling(ctx, &p)
}

// elicit answers elicitation/create with the client's elicitation handler, in form mode
// (the only one it declares), filling an accepted answer's gaps with the schema's defaults.
func (c *Client) elicit(ctx context.Context, params json.RawMessage) (any, error) {
	if c.cfg.elicitation == nil {
		return nil, NewError(CodeMethodNotFound, "this client does not support elicitation")
	}
	var p ElicitParams
	if err := unmarshalParams(params, &p); err != nil {
		return nil, err
	}
	if p.Mode != "" && p.Mode != "form" {
		return nil, Errorf(CodeInvalidParams, "elicitation mode %q was not declared by this client", p.Mode)
	}
	res, err := c.cfg.elicitation(ctx, &p)
	if err != nil {
		return nil, err
	}
	fillDefaults(res, p.RequestedSchema)
	return res, nil
}

// fillDefaults fills the gaps of an accepted answer to an elicitation with the defaults of
// its requested schema.
func fillDefaults(res *ElicitResult, schema json.RawMessage) {
	if res != nil && res.Action == "accept" {
		res.Content = applySchemaDefaults(schema, res.Content)
	}
}

// applySchemaDefaults fills in, from a form-mode requestedSchema, the default of every property
// the user's answer leaves out (SEP-1034).
func applySchemaDefaults(schema json.RawMessage, content map[string]any) map[string]any {
	for name, v := range schemaDefaults(schema) {
		if _, ok := content[name]; ok {
			continue
		}
		if content == nil {
			content = make(map[string]any)
		}
		content[name] = v
	}
	return content
}

// schemaDefaults returns the decoded defaults of a requestedSchema's properties, leaving out
// those that do not decode.
func schemaDefaults(schema json.RawMessage) map[string]any {
	var s struct {
		Properties map[string]struct {
			Default json.RawMessage `json:"default"`
		} `json:"properties"`
	}
	if len(schema) == 0 || json.Unmarshal(schema, &s) != nil {
		return nil
	}
	defaults := make(map[string]any)
	for name, prop := range s.Properties {
		var v any
		if len(prop.Default) > 0 && json.Unmarshal(prop.Default, &v) == nil {
			defaults[name] = v
		}
	}
	return defaults
}

// listen keeps the session's standalone GET stream open, dispatching what arrives on it, and
// reconnects with Last-Event-ID after drops until the client closes or the server says it has
// no such stream. It closes ready once the first GET has been answered (or has failed).
func (c *Client) listen(st *clientSession, ready chan struct{}) {
	defer c.bg.Done()
	var readyOnce sync.Once
	signal := func() { readyOnce.Do(func() { close(ready) }) }
	defer signal()
	ctx := c.listenCtx
	cur := &streamCursor{retry: time.Second}
	disp := &dispatcher{}
	defer disp.logs.flush(context.Background(), c.cfg.logger)
	failures := 0
	var bo backoff
	for ctx.Err() == nil {
		bo.connected()
		resp, stop, err := c.getStandalone(ctx, st, cur)
		signal()
		if stop {
			return
		}
		if err == nil {
			failures = 0
			c.readStandalone(ctx, st, resp.Body, cur, disp)
		} else {
			failures++
			if failures > c.cfg.maxResumes {
				c.cfg.logger.Warn("mcp: giving up on the standalone stream", "error", err)
				return
			}
		}
		if !sleep(ctx, bo.delay(cur.retry)) { // a floor and a backoff: no reconnect storm
			return
		}
	}
}

// getStandalone sends the GET of the session's standalone stream, resuming after cur's last
// event (spec 2025-11-25, Streamable HTTP, Listening for Messages from the Server). stop
// reports that there is no stream to open: the request cannot be made, or the server offers
// none.
func (c *Client) getStandalone(ctx context.Context, st *clientSession, cur *streamCursor) (resp *http.Response, stop bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
	if err != nil {
		return nil, true, err
	}
	c.setHeaders(req, st)
	req.Header.Set("Accept", "text/event-stream")
	setLastEventID(req, string(cur.lastEventID))
	resp, err = c.hc.Do(req)
	if err != nil || resp.StatusCode == http.StatusOK {
		return resp, false, err
	}
	herr := readHTTPError(resp)
	resp.Body.Close()
	var he *HTTPError
	if errors.As(herr, &he) && offersNoStream(he.StatusCode) {
		c.cfg.logger.Debug("mcp: the server offers no standalone stream", "status", he.Status)
		return nil, true, herr
	}
	return nil, false, herr
}

// setLastEventID sets the Last-Event-ID of a GET that resumes a stream after the event id;
// "" is none (spec 2025-11-25, Streamable HTTP, Resumability and Redelivery).
func setLastEventID(req *http.Request, id string) {
	if id != "" {
		req.Header.Set(headerLastEventID, id)
	}
}

// offersNoStream reports whether a GET's status says that the server offers no standalone
// stream: 405 as the spec has it, and 404 or 400 from servers that do not know the GET.
func offersNoStream(status int) bool {
	switch status {
	case http.StatusMethodNotAllowed, http.StatusNotFound, http.StatusBadRequest:
		return true
	}
	return false
}

// sleep waits d, and reports false if ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// readStandalone reads one connection of the standalone stream, dispatching its messages.
func (c *Client) readStandalone(ctx context.Context, st *clientSession, body io.ReadCloser, cur *streamCursor, disp *dispatcher) {
	noID := &ID{raw: "\x00"} // matches no response
	_, _, _ = c.consume(ctx, st, noID, body, nil, cur, disp, nil)
}
