package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"io"
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
		result, err := c.handleServerRequest(ctx, m)
		if ctx.Err() != nil && callCtx.Err() == nil && c.baseCtx.Err() == nil && err != nil {
			return // cancelled by the server: it wants no response
		}
		var body []byte
		if err != nil {
			body = encodeResponse(m.ID, nil, toRPCError(err))
		} else {
			raw, mErr := json.Marshal(result)
			if mErr != nil {
				body = encodeResponse(m.ID, nil, Errorf(CodeInternalError, "encode result: %v", mErr))
			} else {
				body = encodeResponse(m.ID, raw, nil)
			}
		}
		pctx, pcancel := context.WithTimeout(c.baseCtx, c.cfg.closeTimeout)
		defer pcancel()
		if err := c.postNoReply(pctx, st, body); err != nil {
			c.cfg.logger.Warn("mcp: could not send the response to a server request", "method", m.Method, "error", err)
		}
	}()
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

func (c *Client) handleServerRequest(ctx context.Context, m *wireMessage) (any, error) {
	switch m.Method {
	case methodPing:
		return struct{}{}, nil
	case methodCreateMessage:
		if c.cfg.sampling == nil {
			return nil, NewError(CodeMethodNotFound, "this client does not support sampling")
		}
		var p CreateMessageParams
		if err := unmarshalParams(m.Params, &p); err != nil {
			return nil, err
		}
		return c.cfg.sampling(ctx, &p)
	case methodElicit:
		if c.cfg.elicitation == nil {
			return nil, NewError(CodeMethodNotFound, "this client does not support elicitation")
		}
		var p ElicitParams
		if err := unmarshalParams(m.Params, &p); err != nil {
			return nil, err
		}
		if p.Mode != "" && p.Mode != "form" {
			return nil, Errorf(CodeInvalidParams, "elicitation mode %q was not declared by this client", p.Mode)
		}
		res, err := c.cfg.elicitation(ctx, &p)
		if err != nil {
			return nil, err
		}
		if res != nil && res.Action == "accept" {
			res.Content = applySchemaDefaults(p.RequestedSchema, res.Content)
		}
		return res, nil
	case methodListRoots:
		if c.cfg.roots == nil {
			return nil, NewError(CodeMethodNotFound, "this client does not support roots")
		}
		return c.cfg.roots(ctx)
	default:
		return nil, Errorf(CodeMethodNotFound, "method not found: %s", m.Method)
	}
}

// applySchemaDefaults fills in, from a form-mode requestedSchema, the default of every property
// the user's answer leaves out (SEP-1034).
func applySchemaDefaults(schema json.RawMessage, content map[string]any) map[string]any {
	var s struct {
		Properties map[string]struct {
			Default json.RawMessage `json:"default"`
		} `json:"properties"`
	}
	if len(schema) == 0 || json.Unmarshal(schema, &s) != nil {
		return content
	}
	for name, prop := range s.Properties {
		if len(prop.Default) == 0 {
			continue
		}
		if _, ok := content[name]; ok {
			continue
		}
		var v any
		if json.Unmarshal(prop.Default, &v) != nil {
			continue
		}
		if content == nil {
			content = make(map[string]any)
		}
		content[name] = v
	}
	return content
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
	failures := 0
	var bo backoff
	for ctx.Err() == nil {
		bo.connected()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
		if err != nil {
			return
		}
		c.setHeaders(req, st)
		req.Header.Set("Accept", "text/event-stream")
		if cur.lastEventID != "" {
			req.Header.Set(headerLastEventID, cur.lastEventID)
		}
		resp, err := c.hc.Do(req)
		signal()
		if err == nil && resp.StatusCode != http.StatusOK {
			herr := readHTTPError(resp)
			resp.Body.Close()
			var he *HTTPError
			if errors.As(herr, &he) && (he.StatusCode == http.StatusMethodNotAllowed || he.StatusCode == http.StatusNotFound || he.StatusCode == http.StatusBadRequest) {
				c.cfg.logger.Debug("mcp: the server offers no standalone stream", "status", he.Status)
				return
			}
			err = herr
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
		t := time.NewTimer(bo.delay(cur.retry)) // a floor and a backoff: no reconnect storm
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}

func (c *Client) readStandalone(ctx context.Context, st *clientSession, body io.ReadCloser, cur *streamCursor, disp *dispatcher) {
	noID := &ID{raw: "\x00"} // matches no response
	_, _, _ = c.consume(ctx, st, noID, body, nil, cur, disp, nil)
}
