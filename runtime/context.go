package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
)

// requestState is what the runtime knows about the request a handler is serving. Handlers
// reach it through the helpers in this file, which take the handler's ctx.
type requestState struct {
	sess          *session
	st            *stream
	id            *ID
	meta          *RequestMeta
	progressToken json.RawMessage

	mu           sync.Mutex
	lastProgress float64
	sentProgress bool
}

type requestStateKey struct{}

func stateFrom(ctx context.Context) *requestState {
	rs, _ := ctx.Value(requestStateKey{}).(*requestState)
	return rs
}

// peekMeta extracts params._meta without decoding the rest, when there is one.
func peekMeta(params json.RawMessage) *RequestMeta {
	if len(params) == 0 || !bytes.Contains(params, []byte(`"_meta"`)) {
		return nil
	}
	var p struct {
		Meta *RequestMeta `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil {
		return nil
	}
	return p.Meta
}

// errNoRequest is returned by the helpers when ctx is not a handler's context.
var errNoRequest = fmt.Errorf("mcp: not called with the context of an MCP request handler")

// SessionID returns the MCP session ID of the request being handled, or "".
func SessionID(ctx context.Context) string {
	if rs := stateFrom(ctx); rs != nil {
		return rs.sess.id
	}
	return ""
}

// Meta returns the _meta of the request being handled, or nil.
func Meta(ctx context.Context) *RequestMeta {
	if rs := stateFrom(ctx); rs != nil {
		return rs.meta
	}
	return nil
}

// ClientInfo returns the name and version the client gave at initialization.
func ClientInfo(ctx context.Context) Implementation {
	if rs := stateFrom(ctx); rs != nil {
		rs.sess.mu.Lock()
		defer rs.sess.mu.Unlock()
		return rs.sess.clientInfo
	}
	return Implementation{}
}

// NotifyProgress sends notifications/progress for the request being handled, if the client
// asked for progress (a progressToken); otherwise it does nothing. Progress must increase
// with every call; total <= 0 means unknown.
func NotifyProgress(ctx context.Context, progress, total float64, message string) error {
	rs := stateFrom(ctx)
	if rs == nil {
		return errNoRequest
	}
	if len(rs.progressToken) == 0 {
		return nil
	}
	rs.mu.Lock()
	if rs.sentProgress && progress <= rs.lastProgress {
		rs.mu.Unlock()
		return fmt.Errorf("mcp: progress must increase: %v after %v", progress, rs.lastProgress)
	}
	rs.lastProgress, rs.sentProgress = progress, true
	rs.mu.Unlock()
	p := &ProgressParams{ProgressToken: rs.progressToken, Progress: progress, Message: message}
	if total > 0 {
		p.Total = &total
	}
	return rs.send(notifProgress, p)
}

// Log sends notifications/message to the client, on the stream of the request being handled,
// if level is at or above the level the client set with logging/setLevel (default: info).
func Log(ctx context.Context, level LoggingLevel, logger string, data any) error {
	rs := stateFrom(ctx)
	if rs == nil {
		return errNoRequest
	}
	if _, ok := levelRank[level]; !ok {
		return fmt.Errorf("mcp: unknown log level %q", level)
	}
	if !rs.sess.logs(level) {
		return nil
	}
	return rs.send(notifMessage, &LogMessageParams{Level: level, Logger: logger, Data: data})
}

func (sess *session) logs(level LoggingLevel) bool {
	min := LevelInfo
	if l := sess.logLevel.Load(); l != nil {
		min = *l
	}
	return levelRank[level] >= levelRank[min]
}

func (rs *requestState) send(method string, params any) error {
	data, err := encodeRequest(nil, method, params)
	if err != nil {
		return err
	}
	if err := rs.st.send(data, false); err != nil {
		rs.sess.server.log.Warn("mcp: notification not delivered", "session", rs.sess.id, "method", method, "error", err)
		return err
	}
	return nil
}

// CreateMessage asks the client to sample an LLM (sampling/createMessage) and waits for the
// answer, within ctx and the server's client request timeout.
func CreateMessage(ctx context.Context, p *CreateMessageParams) (*CreateMessageResult, error) {
	rs := stateFrom(ctx)
	if rs == nil {
		return nil, errNoRequest
	}
	if rs.sess.caps().Sampling == nil {
		return nil, NewError(CodeMethodNotFound, "the client did not declare the sampling capability")
	}
	var res CreateMessageResult
	if err := rs.call(ctx, methodCreateMessage, p, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// Elicit asks the client for information from its user (elicitation/create) and waits for the
// answer.
func Elicit(ctx context.Context, p *ElicitParams) (*ElicitResult, error) {
	rs := stateFrom(ctx)
	if rs == nil {
		return nil, errNoRequest
	}
	c := rs.sess.caps().Elicitation
	if c == nil {
		return nil, NewError(CodeMethodNotFound, "the client did not declare the elicitation capability")
	}
	if p.Mode == "url" && c.URL == nil {
		return nil, NewError(CodeInvalidParams, "the client did not declare URL-mode elicitation")
	}
	var res ElicitResult
	if err := rs.call(ctx, methodElicit, p, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// ListRoots asks the client for its roots (roots/list).
func ListRoots(ctx context.Context) (*ListRootsResult, error) {
	rs := stateFrom(ctx)
	if rs == nil {
		return nil, errNoRequest
	}
	if rs.sess.caps().Roots == nil {
		return nil, NewError(CodeMethodNotFound, "the client did not declare the roots capability")
	}
	var res ListRootsResult
	if err := rs.call(ctx, methodListRoots, struct{}{}, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// Ping pings the client from a handler.
func Ping(ctx context.Context) error {
	rs := stateFrom(ctx)
	if rs == nil {
		return errNoRequest
	}
	var res struct{}
	return rs.call(ctx, methodPing, nil, &res)
}

func (rs *requestState) call(ctx context.Context, method string, params, result any) error {
	raw, err := rs.sess.request(ctx, rs.st, method, params)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, result); err != nil {
		return fmt.Errorf("mcp: decode %s result: %w", method, err)
	}
	return nil
}

// CloseSSEStream closes the HTTP connection carrying the current request's SSE stream without
// ending the stream (SEP-1699 polling): the client reconnects with GET and Last-Event-ID after
// the retry interval and receives what the handler sends from then on.
func CloseSSEStream(ctx context.Context) error {
	rs := stateFrom(ctx)
	if rs == nil {
		return errNoRequest
	}
	rs.st.kick()
	return nil
}
