package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
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
	header        http.Header // of the HTTP request that carried the request, if any
	token         *TokenInfo  // of the HTTP request that carried the request, if any
	remote        string      // the network address of the HTTP request's client, if any

	// The handler's job (workers.Pool.RunJob) and its context: ctx is the request's context
	// (cancellation, deadline) with the HTTP request's values behind it and this state as
	// the value of requestStateKey, in one value instead of two wrapping contexts.
	ctx     handlerCtx
	cancel  context.CancelFunc
	handler methodHandler
	msg     *wireMessage

	req    Request       // what interceptors see
	resp   Response      // what the innermost CallFunc fills in
	enc    encodedResult // a typed tool's encoded answer (toolAnswer)
	caller Caller        // what CallerFrom returns
	mrtr   *mrtrState    // the input of a modern-era request that may ask for some (mrtr.go)
	task   *runningTask  // the task whose handler this is, or nil (task_server.go)
	// modern is the 2026-07-28 tools/call this state serves, when its params were scanned
	// already (modernRequest.toolCall), or nil.
	modern *modernRequest

	mu           sync.Mutex
	lastProgress float64
	sentProgress bool
	metaTaken    bool // meta and progressToken are set: takeMeta has nothing to do
}

type requestStateKey struct{}

// handlerCtx is a handler's context: the deadline, cancellation and values of Context, then
// the values of values (those of the HTTP request: what middleware stored), and rs as the
// value of requestStateKey.
type handlerCtx struct {
	context.Context
	values context.Context
	rs     *requestState
}

// Value implements context.Context.
func (c *handlerCtx) Value(key any) any {
	if _, ok := key.(requestStateKey); ok {
		return c.rs
	}
	if v := c.Context.Value(key); v != nil || c.values == nil {
		return v
	}
	return c.values.Value(key)
}

// Run runs the request's handler: the request state is its own workers.Job.
func (rs *requestState) Run() {
	rs.sess.server.runHandler(rs.ctx.Context, rs.cancel, rs, rs.handler, rs.msg)
}

func stateFrom(ctx context.Context) *requestState {
	rs, _ := ctx.Value(requestStateKey{}).(*requestState)
	return rs
}

// errNoRequest is returned by Caller's methods when the context is not a handler's.
var errNoRequest = fmt.Errorf("mcp: not called with the context of an MCP request handler")

// errNoStream is what a Caller without a response stream answers a send with: that of a
// 2026-07-28 server/discover or subscriptions/listen, whose interceptors have a Caller to read
// the client from, but nothing of the request's own to write to.
var errNoStream = fmt.Errorf("mcp: this request has no response stream to send on (server/discover, subscriptions/listen)")

// Caller is the client that sent the request a handler is serving, seen from the server: what
// it said about itself, and the requests and notifications the handler sends back to it
// (Ping, Log, NotifyProgress, CreateMessage, Elicit, ListRoots). Those go to the client, on
// the stream of the request being served; to call a server, use a Client.
//
// A Caller is valid while its request is being served. Its methods return an error (and its
// accessors zero values) when called on the nil Caller that CallerFrom returns outside a
// handler.
type Caller struct {
	rs *requestState
}

// CallerFrom returns the Caller of the request whose handler ctx belongs to, or nil when ctx
// is not a handler's context. Interceptors on a Server get the same Caller from their ctx.
func CallerFrom(ctx context.Context) *Caller {
	if rs := stateFrom(ctx); rs != nil {
		return &rs.caller
	}
	return nil
}

func (c *Caller) state() *requestState {
	if c == nil {
		return nil
	}
	return c.rs
}

// SessionID returns the MCP session ID of the request, or "" (always in the modern era).
func (c *Caller) SessionID() string {
	if rs := c.state(); rs != nil {
		return rs.sess.id
	}
	return ""
}

// ProtocolVersion returns the protocol version negotiated for the caller's session.
func (c *Caller) ProtocolVersion() string {
	if rs := c.state(); rs != nil {
		return rs.sess.version()
	}
	return ""
}

// Info returns the name and version the client gave at initialization (in the modern era, in
// the request's _meta).
func (c *Caller) Info() Implementation {
	if rs := c.state(); rs != nil {
		rs.sess.mu.Lock()
		defer rs.sess.mu.Unlock()
		return rs.sess.clientInfo
	}
	return Implementation{}
}

// Capabilities returns the capabilities the client declared at initialization (in the modern
// era, in the request's _meta: they hold for this request only).
func (c *Caller) Capabilities() ClientCapabilities {
	if rs := c.state(); rs != nil {
		return rs.sess.caps()
	}
	return ClientCapabilities{}
}

// Meta returns the _meta of the request, or nil.
func (c *Caller) Meta() *RequestMeta {
	if rs := c.state(); rs != nil {
		return rs.meta
	}
	return nil
}

// Header returns the headers of the HTTP request that carried the request (nil on other
// transports). Treat them as read-only.
func (c *Caller) Header() http.Header {
	if rs := c.state(); rs != nil {
		return rs.header
	}
	return nil
}

// RemoteAddr returns the network address ("host:port") of the client of the HTTP request that
// carried the request, as net/http gives it (a proxy's when a proxy forwarded it), or "" on
// other transports.
func (c *Caller) RemoteAddr() string {
	if rs := c.state(); rs != nil {
		return rs.remote
	}
	return ""
}

// NotifyProgress sends notifications/progress for the request, if the client asked for
// progress (a progressToken); otherwise it does nothing. Progress must increase with every
// call; total <= 0 means unknown.
func (c *Caller) NotifyProgress(ctx context.Context, progress, total float64, message string) error {
	rs := c.state()
	if rs == nil {
		return errNoRequest
	}
	if len(rs.progressToken) == 0 {
		return nil
	}
	if err := rs.advanceProgress(progress); err != nil {
		return err
	}
	p := &ProgressParams{ProgressToken: rs.progressToken, Progress: progress, Message: message}
	if total > 0 {
		p.Total = &total
	}
	return rs.send(notifProgress, p)
}

// advanceProgress records progress as the request's newest, which must be greater than the
// last one sent (spec 2025-11-25, Utilities, Progress: the progress value "MUST increase with
// each notification").
func (rs *requestState) advanceProgress(progress float64) error {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.sentProgress && progress <= rs.lastProgress {
		return fmt.Errorf("mcp: progress must increase: %v after %v", progress, rs.lastProgress)
	}
	rs.lastProgress, rs.sentProgress = progress, true
	return nil
}

// Log sends notifications/message to the client, on the stream of the request, if level is
// at or above the level the client set with logging/setLevel (default: info).
func (c *Caller) Log(ctx context.Context, level LoggingLevel, logger string, data any) error {
	rs := c.state()
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

// logs reports whether the session's client gets log messages of level.
func (sess *session) logs(level LoggingLevel) bool {
	min := LevelInfo
	if l := sess.logLevel.Load(); l != nil {
		min = *l
	} else if sess.stateless {
		return false // no logLevel in _meta: no log messages (spec 2026-07-28, schema, RequestMetaObject)
	}
	return levelRank[level] >= levelRank[min]
}

// send sends a notification on the request's stream, logging one that was not queued.
func (rs *requestState) send(method string, params any) error {
	if rs.task != nil {
		return rs.task.notify(rs, method, params)
	}
	if rs.st == nil {
		return errNoStream
	}
	data, err := encodeRequest(nil, method, params)
	if err != nil {
		return err
	}
	if err := rs.st.send(data, false); err != nil {
		rs.sess.server.peerWarn("mcp: notification not delivered", "session", rs.sess.id, "method", method, "error", err)
		return err
	}
	return nil
}

// CreateMessage asks the client to sample an LLM (sampling/createMessage) and waits for the
// answer, within ctx and the server's WithCallerRequestTimeout.
//
// In the modern era (2026-07-28) the handler is replayed instead (see ErrInputRequired): the
// call returns the client's answer when the retried request carries it, else
// ErrInputRequired, which the handler returns. What runs before it must be idempotent.
func (c *Caller) CreateMessage(ctx context.Context, p *CreateMessageParams) (*CreateMessageResult, error) {
	return askClient[CreateMessageResult](ctx, c, methodCreateMessage, p, func(rs *requestState) error {
		if rs.sess.caps().Sampling == nil {
			return rs.missingCapability("sampling")
		}
		return nil
	})
}

// Elicit asks the client for information from its user (elicitation/create) and waits for the
// answer, within ctx and the server's WithCallerRequestTimeout.
//
// In the modern era (2026-07-28) the handler is replayed instead (see ErrInputRequired): the
// call returns the client's answer when the retried request carries it, else
// ErrInputRequired, which the handler returns. What runs before it must be idempotent.
func (c *Caller) Elicit(ctx context.Context, p *ElicitParams) (*ElicitResult, error) {
	return askClient[ElicitResult](ctx, c, methodElicit, p, func(rs *requestState) error {
		ec := rs.sess.caps().Elicitation
		if ec == nil {
			return rs.missingCapability("elicitation")
		}
		if p.Mode == "url" && ec.URL == nil {
			return NewError(CodeInvalidParams, "the client did not declare URL-mode elicitation")
		}
		return nil
	})
}

// ListRoots asks the client for its roots (roots/list). In the modern era (2026-07-28) it is
// answered by replay, as Elicit is.
func (c *Caller) ListRoots(ctx context.Context) (*ListRootsResult, error) {
	return askClient[ListRootsResult](ctx, c, methodListRoots, struct{}{}, func(rs *requestState) error {
		if rs.sess.caps().Roots == nil {
			return rs.missingCapability("roots")
		}
		return nil
	})
}

// askClient sends the handler's client a request of method and decodes its answer into an R,
// once check (the capability the request needs) lets it go.
func askClient[R any](ctx context.Context, c *Caller, method string, params any, check func(*requestState) error) (*R, error) {
	rs := c.state()
	if rs == nil {
		return nil, errNoRequest
	}
	if err := check(rs); err != nil {
		return nil, err
	}
	var res R
	if err := rs.call(ctx, method, params, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// Ping pings the client (the server-to-client ping of the spec's Ping utility).
func (c *Caller) Ping(ctx context.Context) error {
	rs := c.state()
	if rs == nil {
		return errNoRequest
	}
	var res struct{}
	return rs.call(ctx, methodPing, nil, &res)
}

// call sends the client a request of the handler's and decodes its answer into result: in the
// modern era by replay of the handler (mrtr.go).
func (rs *requestState) call(ctx context.Context, method string, params, result any) error {
	if rs.task != nil {
		return rs.task.ask(ctx, rs, method, params, result)
	}
	if rs.sess.stateless {
		return rs.callModern(ctx, method, params, result)
	}
	raw, err := rs.sess.request(ctx, rs.st, method, params)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, result); err != nil {
		return fmt.Errorf("mcp: decode %s result: %w", method, err)
	}
	return nil
}

// CloseSSEStream closes the HTTP connection carrying the request's SSE stream without ending
// the stream (SSE polling, SEP-1699): the client reconnects with GET and Last-Event-ID after
// the retry interval and receives what the handler sends from then on.
//
// In the modern era (2026-07-28), where streams cannot be resumed and closing one cancels its
// request, it does nothing.
func (c *Caller) CloseSSEStream() error {
	rs := c.state()
	if rs == nil {
		return errNoRequest
	}
	if rs.sess.stateless || rs.task != nil {
		return nil // spec 2026-07-28, Streamable HTTP: Last-Event-ID resumption is not supported; a task has no stream
	}
	rs.st.kick()
	return nil
}

// requestValues returns the context whose values a handler's context carries behind its own:
// the HTTP request's, or nil when it has none.
func requestValues(ctx context.Context) context.Context {
	if ctx == nil || ctx == context.Background() {
		return nil
	}
	return ctx
}
