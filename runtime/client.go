package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/protomcp/protomcp/internal/protojsonfast"
	"google.golang.org/protobuf/proto"
)

// Client is an MCP client. NewClient's speaks Streamable HTTP; NewCommandClient's,
// NewStdioClient's and NewInMemoryClient's speak the stdio transport's messages. It
// initializes lazily on its first call (or explicitly with Connect). Over HTTP it sends the
// session ID and protocol version on every request, reads JSON and SSE answers alike, and
// reads every response stream that finished normally to its end, so that its keep-alive
// connection goes back to the pool: after warm-up, calls open no new TCP connections. A Client
// is safe for concurrent use.
type Client struct {
	url  string
	cfg  clientConfig
	hc   *http.Client
	owns bool // hc was made here, so Close may close its idle connections
	// direct sends the requests of calls without hc.Do when Do would add nothing; nil when
	// it would (client_transport.go).
	direct *directTransport
	// tr carries the client's messages: Streamable HTTP, or a message connection (stdio,
	// in memory; client_conn.go).
	tr clientTransport

	// tmpl is http.NewRequest's request for url, copied by newRequest; tmplErr its error.
	tmpl    *http.Request
	tmplErr error

	baseCtx    context.Context // handlers and drains run under it; cancelled by Close
	baseCancel context.CancelFunc
	// The standalone stream runs under listenCtx, which Close cancels first: it has no end
	// of its own for Close to wait for.
	listenCtx    context.Context
	listenCancel context.CancelFunc
	bg           sync.WaitGroup // drains, handlers, the standalone stream

	nextID atomic.Int64

	send CallFunc // the client's interceptors around sendRequest

	initSem    chan struct{} // capacity 1: serialises initialization, within each caller's ctx
	mu         sync.Mutex
	state      *clientSession
	closed     bool
	serverReqs map[string]context.CancelFunc // handlers of server requests, by request ID

	serverReqSem chan struct{} // a slot per server request being handled (client_budget.go)
	notifBytes   atomic.Int64  // bytes of notifications waiting for their callbacks
	logs         logBound      // lines the server's requests make outside any stream, bounded

	lists listCache // list pages still fresh (client_cache.go)
}

// clientSession is what initialize established.
type clientSession struct {
	id      string
	version string
	// The two header values, made once by initialize and shared by every request.
	idHeader, versionHeader []string
	serverInfo              Implementation
	capabilities            ServerCapabilities
	instructions            string
	// modern: server/discover found a 2026-07-28 server; there is no session, and every
	// request carries meta in its _meta and the headers that mirror its body (client_era.go).
	modern bool
	meta   map[string]json.RawMessage
	// tasksCaps is the client's capabilities with the tasks extension declared, encoded, for
	// the modern requests that want or ask about a task (client_task.go).
	tasksCaps   json.RawMessage
	logLevel    atomic.Pointer[LoggingLevel] // SetLogLevel's, sent in _meta
	toolHeaders sync.Map                     // tool name -> []paramHeader, from tools/list
	// toolTasks is tool name -> TaskSupport, from tools/list; toolTasksListed says the
	// client listed the tools to learn them (client_task.go).
	toolTasks       sync.Map
	toolTasksListed atomic.Bool
	// metaJSON is modernMeta(nil) encoded, for the log level it was made with.
	metaJSON atomic.Pointer[encodedMeta]
	// postHeader is the headers every POST of a message on this session carries (the
	// client's, the session's, Content-Type and Accept), made by its first: a request's
	// header is a copy.
	postHeader atomic.Pointer[http.Header]
}

// encodedMeta is a modern session's _meta, encoded, and the log level it carries.
type encodedMeta struct {
	level *LoggingLevel
	json  []byte
}

// NewClient returns a client for the MCP endpoint at url. It does not contact the server
// until Connect or the first call.
func NewClient(url string, opts ...ClientOption) *Client {
	cfg := defaultClientConfig()
	for _, o := range opts {
		o.applyClient(&cfg)
	}
	c := newClient(cfg)
	c.url = url
	c.hc, c.owns = clientHTTP(&cfg, url)
	c.tr = &httpTransport{c}
	c.tmpl, c.tmplErr = http.NewRequest(http.MethodPost, url, nil)
	if c.tmplErr == nil {
		c.direct = newDirectTransport(c.hc, c.tmpl.URL)
	}
	return c
}

// newClient returns a Client with cfg and no transport yet.
func newClient(cfg clientConfig) *Client {
	c := &Client{cfg: cfg}
	c.initSem = make(chan struct{}, 1)
	c.serverReqSem = make(chan struct{}, cfg.maxServerRequests)
	c.baseCtx, c.baseCancel = context.WithCancel(context.Background())
	c.listenCtx, c.listenCancel = context.WithCancel(c.baseCtx)
	c.send = chain(cfg.interceptors, c.sendRequest)
	return c
}

// Connect initializes the session if it is not yet initialized. ctx bounds the handshake.
func (c *Client) Connect(ctx context.Context) error {
	_, err := c.session(ctx)
	return err
}

// ServerInfo returns what the server said about itself at initialization (after Connect).
func (c *Client) ServerInfo() (Implementation, ServerCapabilities, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state == nil {
		return Implementation{}, ServerCapabilities{}, ""
	}
	return c.state.serverInfo, c.state.capabilities, c.state.instructions
}

// ProtocolVersion returns the negotiated protocol version ("" before Connect).
func (c *Client) ProtocolVersion() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state == nil {
		return ""
	}
	return c.state.version
}

// SessionID returns the session ID the server assigned ("" before Connect or if none).
func (c *Client) SessionID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state == nil {
		return ""
	}
	return c.state.id
}

// session returns the current session, initializing one if needed.
func (c *Client) session(ctx context.Context) (*clientSession, error) {
	c.mu.Lock()
	st, closed := c.state, c.closed
	c.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	if st != nil {
		return st, nil
	}
	if err := c.acquireInit(ctx); err != nil {
		return nil, err
	}
	defer c.releaseInit()
	c.mu.Lock()
	st = c.state
	c.mu.Unlock()
	if st != nil {
		return st, nil
	}
	return c.openSession(ctx)
}

// openSession opens a new session (server/discover, or initialize: client_era.go) and makes
// it the client's, unless the client closed meanwhile; with WithStandaloneStream, it opens
// the session's GET stream too.
func (c *Client) openSession(ctx context.Context) (*clientSession, error) {
	st, err := c.open(ctx)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		c.deleteSession(st)
		return nil, ErrClosed
	}
	c.state = st
	c.mu.Unlock()
	if c.cfg.listen {
		c.startListening(ctx, st)
	}
	return st, nil
}

// startListening opens the session's standalone GET stream and waits until it is open (or
// refused) before the first call goes out: a server that sends requests unrelated to a call
// on that stream, as the TypeScript SDK does, drops them while no GET stream is attached.
func (c *Client) startListening(ctx context.Context, st *clientSession) {
	ready := make(chan struct{})
	c.bg.Add(1)
	go c.tr.listen(st, ready)
	t := time.NewTimer(standaloneWait)
	select {
	case <-ready:
	case <-ctx.Done():
	case <-t.C:
	}
	t.Stop()
}

// standaloneWait bounds how long initialization waits for the standalone GET stream to open.
const standaloneWait = 2 * time.Second

// resetSession forgets st (the server answered 404 for it), so that the next call
// initializes a new session.
func (c *Client) resetSession(st *clientSession) {
	c.mu.Lock()
	if c.state == st {
		c.state = nil
	}
	c.mu.Unlock()
}

// capabilities are the client features it declares in initialize: those it has handlers for.
func (c *Client) capabilities() ClientCapabilities {
	var caps ClientCapabilities
	if c.cfg.sampling != nil {
		caps.Sampling = &SamplingCapability{}
	}
	if c.cfg.elicitation != nil {
		caps.Elicitation = &ElicitationCapability{Form: &struct{}{}}
	}
	if c.cfg.roots != nil {
		caps.Roots = &RootsCapability{}
	}
	caps.Tasks = clientTasksCapability() // client_task.go
	return caps
}

// initialize opens a session of the 2025-11-25 era (spec 2025-11-25, Lifecycle,
// Initialization): initialize, a check of the version and session ID the server answers
// with, then notifications/initialized. When the server answers notifications/initialized
// with 404, it ended the new session before the handshake completed (a full session table
// evicts half-open sessions): the handshake is tried once more with a new session (spec
// 2025-11-25, Basic, Transports, Session Management: a client that gets 404 for its session
// starts a new one).
func (c *Client) initialize(ctx context.Context) (*clientSession, error) {
	st, evicted, err := c.handshake(ctx)
	if evicted {
		c.cfg.logger.Debug("mcp: the server ended the new session before the handshake completed; initializing again", "error", err)
		st, _, err = c.handshake(ctx)
	}
	return st, err
}

// handshake is one attempt of initialize; evicted reports that notifications/initialized got
// 404.
func (c *Client) handshake(ctx context.Context) (st *clientSession, evicted bool, err error) {
	version := c.cfg.protocolVersion
	if isModernVersion(version) {
		version = LatestProtocolVersion // falling back from a modern one
	}
	params := &InitializeParams{ProtocolVersion: version, Capabilities: c.capabilities(), ClientInfo: c.cfg.info}
	pre := &clientSession{} // no ID, no version header yet
	pb, err := json.Marshal(params)
	if err != nil {
		return nil, false, fmt.Errorf("mcp initialize: %w", err)
	}
	req := &Request{Method: methodInitialize, Params: pb, IsClient: true, initSession: pre}
	resp, err := c.send(ctx, req)
	if err != nil {
		return nil, false, fmt.Errorf("mcp initialize: %w", err)
	}
	raw, sid := rawResult(resp), req.SessionID
	var res InitializeResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, false, fmt.Errorf("mcp initialize: decode result: %w", err)
	}
	if !validSessionID(sid) {
		return nil, false, fmt.Errorf("mcp initialize: the server sent an invalid session ID %q: it must be visible ASCII (0x21 to 0x7E), at most %d bytes", truncate(sid, 64), maxSessionIDLength)
	}
	st = newInitializedSession(sid, &res)
	if !isSupportedVersion(res.ProtocolVersion) {
		c.deleteSession(st)
		return nil, false, fmt.Errorf("mcp initialize: server offered protocol version %q, which this client does not support (supported: %s)", res.ProtocolVersion, strings.Join(supportedVersions, ", "))
	}
	if err := c.notify(ctx, st, notifInitialized, nil); err != nil {
		return nil, isNotFound(err), fmt.Errorf("mcp initialize: notifications/initialized: %w", err)
	}
	return st, false, nil
}

// newInitializedSession is the session that initialize's answer opened: its ID sid (none
// when empty) and what the server said of itself, with the headers later requests carry.
func newInitializedSession(sid string, res *InitializeResult) *clientSession {
	st := &clientSession{
		id:            sid,
		version:       res.ProtocolVersion,
		serverInfo:    res.ServerInfo,
		capabilities:  res.Capabilities,
		instructions:  res.Instructions,
		versionHeader: []string{res.ProtocolVersion},
	}
	if sid != "" {
		st.idHeader = []string{sid}
	}
	return st
}

// Close ends the session (DELETE, bounded by the close timeout), stops background work and
// waits for it, and closes idle connections of a transport the client created.
func (c *Client) Close(ctx context.Context) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	st := c.state
	c.state = nil
	c.mu.Unlock()
	var err error
	if st != nil && st.id != "" {
		dctx, cancel := context.WithTimeout(ctx, c.cfg.closeTimeout)
		err = c.tr.endSession(dctx, st)
		cancel()
	}
	c.stopBackground(ctx)
	if cerr := c.tr.close(ctx); err == nil {
		err = cerr
	}
	c.logs.flush(ctx, c.cfg.logger)
	return err
}

// stopBackground stops the client's background work: the drains of finished streams may end
// within their own bound (or until ctx ends); then whatever is left is stopped at once, and
// handlers of server requests get their context cancelled. One that ignores it is not waited
// for past the close timeout.
func (c *Client) stopBackground(ctx context.Context) {
	c.listenCancel()
	done := make(chan struct{})
	go func() {
		c.bg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(c.cfg.drainTime):
	case <-ctx.Done():
	}
	c.baseCancel()
	t := time.NewTimer(c.cfg.closeTimeout)
	select {
	case <-done:
		t.Stop()
	case <-t.C:
		c.cfg.logger.Warn("mcp: client closed with handlers still running; they ignore their context")
	}
}

func (c *Client) deleteSession(st *clientSession) {
	if st.id == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.closeTimeout)
	defer cancel()
	_ = c.tr.endSession(ctx, st)
}

// sendDelete ends the session st with DELETE (spec 2025-11-25, Transports, Streamable HTTP,
// Session Management); a server that does not allow it (405) or forgot the session (404)
// ends it too.
func (c *Client) sendDelete(ctx context.Context, st *clientSession) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, c.url, nil)
	if err != nil {
		return err
	}
	c.setHeaders(req, st)
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("mcp close: %w", err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	switch {
	case resp.StatusCode < 300, resp.StatusCode == http.StatusMethodNotAllowed, resp.StatusCode == http.StatusNotFound:
		return nil
	default:
		return fmt.Errorf("mcp close: DELETE answered %s", resp.Status)
	}
}

// Header values shared by every request: net/http never modifies a request's headers, so
// assigning these slices (under canonical keys) saves an allocation per header per call.
var (
	postContentType = []string{"application/json"}
	postAccept      = []string{"application/json, text/event-stream"}
	getAccept       = []string{"text/event-stream"}
)

func (c *Client) setHeaders(req *http.Request, st *clientSession) {
	for k, v := range c.cfg.headers {
		req.Header[k] = v
	}
	if st.id != "" {
		if st.idHeader != nil {
			req.Header[headerSessionID] = st.idHeader
		} else {
			req.Header[headerSessionID] = []string{st.id}
		}
	}
	if st.version != "" {
		if st.versionHeader != nil {
			req.Header[headerProtocolVersion] = st.versionHeader
		} else {
			req.Header[headerProtocolVersion] = []string{st.version}
		}
	}
}

// postHeader returns the headers of a POST of one message on st: those setHeaders and
// setPostHeaders set, made once per session. It is shared: callers copy it.
func (c *Client) postHeader(st *clientSession) http.Header {
	if h := st.postHeader.Load(); h != nil {
		return *h
	}
	h := make(http.Header, len(c.cfg.headers)+4)
	req := http.Request{Header: h}
	c.setHeaders(&req, st)
	setPostHeaders(&req)
	st.postHeader.Store(&h)
	return h
}

// setPostHeaders sets the headers of a POST of one JSON-RPC message.
func setPostHeaders(req *http.Request) {
	req.Header["Content-Type"] = postContentType
	req.Header["Accept"] = postAccept
}

// notify sends a notification.
func (c *Client) notify(ctx context.Context, st *clientSession, method string, params any) error {
	body, err := encodeRequest(nil, method, params)
	if err != nil {
		return err
	}
	return c.postNoReply(ctx, st, body)
}

// postNoReply sends a notification or a response, which get no answer.
func (c *Client) postNoReply(ctx context.Context, st *clientSession, body []byte) error {
	return c.tr.post(ctx, st, body)
}

// httpPost POSTs a notification or a response and expects 202 Accepted.
func (c *Client) httpPost(ctx context.Context, st *clientSession, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	c.setHeaders(req, st)
	setPostHeaders(req)
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, c.cfg.drainBytes))
		return nil
	}
	return readHTTPError(resp)
}

// readHTTPError builds an *HTTPError from a failed response, reading (and so draining) its body.
func readHTTPError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	he := &HTTPError{StatusCode: resp.StatusCode, Status: resp.Status, Body: string(b)}
	var m wireMessage
	if json.Unmarshal(b, &m) == nil && m.Error != nil {
		he.RPC = m.Error
	}
	return he
}

// Ping checks that the server answers. In the modern era, which has no ping, it sends
// server/discover.
func (c *Client) Ping(ctx context.Context) error {
	method := methodPing
	if st, err := c.session(ctx); err == nil && st.modern {
		method = methodDiscover
	}
	_, err := c.Call(ctx, method, nil)
	return err
}

// ListTools returns one page of tools; pass the previous page's NextCursor for the next
// ("" for the first). Tools iterates over every page.
//
// ListTools, ListPrompts, ListResources, ListResourceTemplates and their iterators answer
// from the client's cache while the server's hints say a page is fresh (spec 2026-07-28,
// Caching; protomcp servers send the hints in 2025-11-25 too). A page is kept by its method
// and cursor, and only when it came with a positive ttlMs; it is dropped at the first of:
//   - its ttlMs passing (fresh while now < received + ttlMs);
//   - the matching list_changed notification: tools/list_changed drops the tools pages,
//     prompts/list_changed the prompts pages, resources/list_changed those of resources
//     and templates. The client hears them on its standalone stream (WithStandaloneStream)
//     or on a response stream;
//   - for a page with cacheScope "private" (or none the client knows), a change of the
//     client's authorization context: a private page is reused only with the credentials
//     that fetched it (see AuthorizationContextTransport; runtime/oauth's transport is one,
//     so a step-up fetches the fuller list). A client whose transport says nothing (a fixed
//     Authorization header) has one context for its life. A "public" page is reused
//     whatever the credentials.
//
// A tool call that fails with -32602 (an unknown tool, invalid arguments) or -32601 drops
// the tools pages too, as the list may be stale. Each caller gets its own decoded copy.
// WithoutListCache turns the cache off; Call is never cached.
func (c *Client) ListTools(ctx context.Context, cursor string) (*ListToolsResult, error) {
	res, err := listPage[ListToolsResult](ctx, c, methodToolsList, cursor)
	if err != nil {
		return nil, err
	}
	c.recordToolHeaders(res) // x-mcp-header annotations (client_era.go)
	c.recordToolTasks(res)   // execution.taskSupport (client_task.go)
	return res, nil
}

// listPage calls the list method for the page at cursor ("" for the first) and decodes it
// into a new R, or decodes the page the client's cache holds while it is fresh
// (client_cache.go).
func listPage[R any](ctx context.Context, c *Client, method, cursor string) (*R, error) {
	var res R
	cache := !c.cfg.noListCache
	raw, ok := json.RawMessage(nil), false
	if cache {
		raw, ok = c.lists.get(method, cursor, c.authorizationContext())
	}
	if !ok {
		var err error
		if raw, err = c.Call(ctx, method, cursorParams(cursor)); err != nil {
			if cursor != "" {
				// The cursor may have become invalid: the pages before it may be of
				// another list (spec 2026-07-28, Caching, Interaction with Pagination).
				c.lists.drop(method)
			}
			return nil, err
		}
		if cache {
			// The context after the call: the one whose credentials the server answered
			// (a step-up during the call changes it).
			c.lists.put(method, cursor, c.authorizationContext(), raw)
		}
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("mcp %s: decode result: %w", method, err)
	}
	return &res, nil
}

// ListResources returns one page of resources; pass the previous page's NextCursor for the
// next. Resources iterates over every page. Pages are cached as ListTools says.
func (c *Client) ListResources(ctx context.Context, cursor string) (*ListResourcesResult, error) {
	return listPage[ListResourcesResult](ctx, c, methodResourcesList, cursor)
}

// ListResourceTemplates returns one page of resource templates; pass the previous page's
// NextCursor for the next. ResourceTemplates iterates over every page. Pages are cached as
// ListTools says.
func (c *Client) ListResourceTemplates(ctx context.Context, cursor string) (*ListResourceTemplatesResult, error) {
	return listPage[ListResourceTemplatesResult](ctx, c, methodResourceTemplates, cursor)
}

// ListPrompts returns one page of prompts; pass the previous page's NextCursor for the next.
// Prompts iterates over every page. Pages are cached as ListTools says.
func (c *Client) ListPrompts(ctx context.Context, cursor string) (*ListPromptsResult, error) {
	return listPage[ListPromptsResult](ctx, c, methodPromptsList, cursor)
}

// Tools iterates over the server's tools, page by page. It stops at the first error, which it
// yields with a zero Tool.
func (c *Client) Tools(ctx context.Context) iter.Seq2[Tool, error] {
	return pages(ctx, c.ListTools, func(r *ListToolsResult) ([]Tool, string) { return r.Tools, r.NextCursor })
}

// Resources iterates over the server's resources, page by page. It stops at the first error,
// which it yields with a zero Resource.
func (c *Client) Resources(ctx context.Context) iter.Seq2[Resource, error] {
	return pages(ctx, c.ListResources, func(r *ListResourcesResult) ([]Resource, string) { return r.Resources, r.NextCursor })
}

// ResourceTemplates iterates over the server's resource templates, page by page. It stops at
// the first error, which it yields with a zero ResourceTemplate.
func (c *Client) ResourceTemplates(ctx context.Context) iter.Seq2[ResourceTemplate, error] {
	return pages(ctx, c.ListResourceTemplates, func(r *ListResourceTemplatesResult) ([]ResourceTemplate, string) {
		return r.ResourceTemplates, r.NextCursor
	})
}

// Prompts iterates over the server's prompts, page by page. It stops at the first error, which
// it yields with a zero Prompt.
func (c *Client) Prompts(ctx context.Context) iter.Seq2[Prompt, error] {
	return pages(ctx, c.ListPrompts, func(r *ListPromptsResult) ([]Prompt, string) { return r.Prompts, r.NextCursor })
}

// maxPages bounds the pages an iterator follows, against a server whose cursors never end.
const maxPages = 10000

// pages iterates over the items of a paginated list method.
func pages[R any, T any](ctx context.Context, list func(context.Context, string) (*R, error), items func(*R) ([]T, string)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		cursor := ""
		for range maxPages {
			page, err := list(ctx, cursor)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			its, next := items(page)
			for _, it := range its {
				if !yield(it, nil) {
					return
				}
			}
			if next == "" || next == cursor {
				return
			}
			cursor = next
		}
		var zero T
		yield(zero, fmt.Errorf("mcp: more than %d pages; the server's cursors do not end", maxPages))
	}
}

// ReadResource reads a resource.
func (c *Client) ReadResource(ctx context.Context, uri string) (*ReadResourceResult, error) {
	var res ReadResourceResult
	if err := c.callInto(ctx, methodResourcesRead, map[string]string{"uri": uri}, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// GetPrompt renders a prompt.
func (c *Client) GetPrompt(ctx context.Context, name string, args map[string]string) (*GetPromptResult, error) {
	var res GetPromptResult
	p := map[string]any{"name": name}
	if args != nil {
		p["arguments"] = args
	}
	if err := c.callInto(ctx, methodPromptsGet, p, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// SetLogLevel asks the server to send log messages at level and above. In the modern era,
// which has no logging/setLevel, the level goes in every later request's _meta instead.
func (c *Client) SetLogLevel(ctx context.Context, level LoggingLevel) error {
	if st, err := c.session(ctx); err == nil && st.modern {
		st.logLevel.Store(&level)
		return nil
	}
	_, err := c.Call(ctx, methodSetLevel, map[string]any{"level": level})
	return err
}

func cursorParams(cursor string) any {
	if cursor == "" {
		return nil
	}
	return map[string]string{"cursor": cursor}
}

func (c *Client) callInto(ctx context.Context, method string, params, out any) error {
	raw, err := c.Call(ctx, method, params)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("mcp %s: decode result: %w", method, err)
	}
	return nil
}

// CallTool calls a tool with JSON arguments (nil for none) and returns its result as sent; a
// result with IsError set is not a Go error here (the typed CallTool makes it one).
func (c *Client) CallTool(ctx context.Context, name string, args json.RawMessage, opts ...CallOption) (*CallToolResult, error) {
	resp, err := c.invoke(ctx, newToolRequest(name, args, nil), newCallOptions(opts))
	if err != nil {
		return nil, err
	}
	var res CallToolResult
	if err := json.Unmarshal(rawResult(resp), &res); err != nil {
		return nil, fmt.Errorf("mcp tools/call %s: decode result: %w", name, err)
	}
	return &res, nil
}

// newToolRequest makes the Request of a tools/call, writing its params without a reflective
// encoding pass over arguments that are already JSON.
func newToolRequest(name string, args json.RawMessage, msg proto.Message) *Request {
	params := make([]byte, 0, len(name)+len(args)+32)
	params = append(params, `{"name":`...)
	params = protojsonfast.AppendString(params, name)
	if a := bytes.TrimSpace(args); len(a) > 0 && string(a) != "null" {
		params = append(params, `,"arguments":`...)
		params = append(params, a...)
	}
	params = append(params, '}')
	return &Request{Method: methodToolsCall, Name: name, Params: params, Message: msg, IsClient: true}
}

// newTypedToolRequest makes the Request of a typed tools/call, writing the arguments' proto3
// JSON straight into its params (one buffer, no protojson ordering pass) unless the message has
// required fields that marshalArgs fills in.
func newTypedToolRequest(name string, msg proto.Message) (*Request, error) {
	md := msg.ProtoReflect().Descriptor()
	if planFor(md).fills {
		args, err := marshalArgs(msg)
		if err != nil {
			return nil, err
		}
		if err := checkTypedArgs(name, md, args); err != nil {
			return nil, err
		}
		return newToolRequest(name, args, msg), nil
	}
	params := make([]byte, 0, len(name)+128)
	params = append(params, `{"name":`...)
	params = protojsonfast.AppendString(params, name)
	params = append(params, `,"arguments":`...)
	start := len(params)
	params, err := protojsonfast.Append(params, msg)
	if err != nil {
		return nil, err
	}
	if err := checkTypedArgs(name, md, params[start:]); err != nil {
		return nil, err
	}
	params = append(params, '}')
	return &Request{Method: methodToolsCall, Name: name, Params: params, Message: msg, IsClient: true}, nil
}

// rawResult returns the result as received from a Response: what the innermost CallFunc
// returns, or what an interceptor put in its place.
func rawResult(resp *Response) json.RawMessage {
	if resp == nil {
		return nil
	}
	switch r := resp.Result.(type) {
	case json.RawMessage:
		return r
	case []byte:
		return r
	case nil:
		return nil
	default:
		b, err := json.Marshal(r)
		if err != nil {
			return nil
		}
		return b
	}
}

// Call sends any request and returns its raw result. params is encoded with encoding/json (a
// json.RawMessage is sent as it is).
func (c *Client) Call(ctx context.Context, method string, params any, opts ...CallOption) (json.RawMessage, error) {
	raw, err := encodeParams(params)
	if err != nil {
		return nil, fmt.Errorf("mcp %s: encode params: %w", method, err)
	}
	req := &Request{Method: method, Name: requestName(method, raw), Params: raw, IsClient: true}
	resp, err := c.invoke(ctx, req, newCallOptions(opts))
	if err != nil {
		return nil, err
	}
	return rawResult(resp), nil
}

// clientHTTP is the http.Client that a client of url sends with, as cfg says: the caller's or
// one of its own (owns), with redirects guarded and the transport wrapped (each a copy: the
// caller's client is not changed).
func clientHTTP(cfg *clientConfig, url string) (hc *http.Client, owns bool) {
	hc = cfg.httpClient
	if hc == nil {
		hc, owns = &http.Client{Transport: DefaultTransport()}, true
	}
	if !cfg.crossOriginRedirects {
		hc = guardRedirects(hc)
	}
	if cfg.wrapTransport != nil {
		wrapped := *hc
		if wrapped.Transport == nil {
			wrapped.Transport = http.DefaultTransport
		}
		wrapped.Transport = cfg.wrapTransport(wrapped.Transport, url, cfg.logger)
		hc = &wrapped
	}
	return hc, owns
}

// encodeParams encodes a request's params with encoding/json; a json.RawMessage is sent as it
// is, and nil as no params.
func encodeParams(params any) (json.RawMessage, error) {
	switch p := params.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		return p, nil
	}
	return json.Marshal(params)
}

// requestName is the Request.Name of a request of method with params: the name of the
// prompt, the URI of the resource, or "".
func requestName(method string, params json.RawMessage) string {
	var p struct {
		Name string `json:"name"`
		URI  string `json:"uri"`
	}
	switch method {
	case methodPromptsGet:
		_ = json.Unmarshal(params, &p)
		return p.Name
	case methodResourcesRead, methodResourcesSubscribe, methodResourcesUnsub:
		_ = json.Unmarshal(params, &p)
		return p.URI
	}
	return ""
}

// invoke sends req through the client's interceptors, within the call's timeout: an
// interceptor that retries does so within the same bound.
func (c *Client) invoke(ctx context.Context, req *Request, co *callOptions) (*Response, error) {
	if co.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, co.timeout)
		defer cancel()
	} else if _, ok := ctx.Deadline(); !ok && c.cfg.callTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.callTimeout)
		defer cancel()
	}
	if req.Meta == nil {
		req.Meta = co.meta()
	}
	req.co = co
	resp, err := c.send(ctx, req)
	if err != nil && req.Method == methodToolsCall {
		c.toolCallFailed(err)
	}
	return resp, err
}

// isNotFound reports whether err is an *HTTPError with status 404. It is apart from
// sendRequest so that the error target escapes only on the error path.
func isNotFound(err error) bool {
	var he *HTTPError
	return errors.As(err, &he) && he.StatusCode == http.StatusNotFound
}

// sendRequest is the innermost CallFunc of a client's interceptors: it sends the request on
// the session (initializing one first if needed) and reads its answer.
func (c *Client) sendRequest(ctx context.Context, req *Request) (*Response, error) {
	if pre := req.initSession; pre != nil {
		return c.sendInitialize(ctx, pre, req)
	}
	co := req.co
	if co == nil {
		co = &callOptions{}
	}
	raw, err := c.sendOnSession(ctx, req, co)
	if err != nil {
		return nil, err
	}
	resp := &Response{Result: raw}
	if req.decode != nil {
		msg, err := req.decode.decode(req.Name, raw)
		if err != nil {
			return nil, err
		}
		resp.Message = msg
	}
	return resp, nil
}

// sendInitialize sends initialize itself (or server/discover), before there is a session on
// pre, and sets req's session ID and the protocol version the server answered in.
func (c *Client) sendInitialize(ctx context.Context, pre *clientSession, req *Request) (*Response, error) {
	raw, sid, err := c.roundTrip(ctx, pre, req, nil)
	if err != nil {
		return nil, err
	}
	req.SessionID = sid
	var negotiated struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if json.Unmarshal(raw, &negotiated) == nil && negotiated.ProtocolVersion != "" {
		req.ProtocolVersion = negotiated.ProtocolVersion
	} else if pre.modern {
		req.ProtocolVersion = pre.version // server/discover: the version it was sent in
	}
	return &Response{Result: raw}, nil
}

// sendOnSession sends req on the current session and returns its raw result. A request the
// server refuses because it forgot the session, before running anything, goes again once on a
// new session (spec 2025-11-25, Streamable HTTP, Session Management); one refused for lack of
// the parameter headers its tool declares goes again once they are known.
func (c *Client) sendOnSession(ctx context.Context, req *Request, co *callOptions) (json.RawMessage, error) {
	method, params := req.Method, req.Params
	for attempt := 0; ; attempt++ {
		st, err := c.session(ctx)
		if err != nil {
			return nil, err
		}
		req.SessionID, req.ProtocolVersion = st.id, st.version
		req.Params = params
		taskable := c.prepareTaskCall(ctx, st, req, co) // params.task (client_task.go)
		raw, _, err := c.roundTrip(ctx, st, req, co)
		if err != nil {
			if attempt == 0 && c.retryAsTask(ctx, st, req, err) {
				continue // the tool requires a task: tools/list said so
			}
			again, err := c.sendAgain(ctx, st, method, attempt, err)
			if again {
				continue
			}
			return nil, err
		}
		if st.modern {
			raw, err = c.fulfil(ctx, st, req, co, raw) // InputRequiredResult (client_era.go)
		}
		if err == nil && taskable {
			return c.settleTask(ctx, req, co, raw) // a task: wait for it (client_task.go)
		}
		if err != nil {
			return nil, fmt.Errorf("mcp %s: %w", method, err)
		}
		return raw, nil
	}
}

// sendAgain decides whether a request that failed with err on st, at attempt (0 for the
// first), goes again: on a new session when the server forgot st, and with the tool's
// parameter headers once tools/list has said them, once each; otherwise it returns the error
// to report.
func (c *Client) sendAgain(ctx context.Context, st *clientSession, method string, attempt int, err error) (bool, error) {
	if st.id != "" && isNotFound(err) {
		c.resetSession(st)
		if attempt == 0 {
			return true, nil
		}
		return false, fmt.Errorf("mcp %s: %w: %w", method, ErrSessionExpired, err)
	}
	if attempt == 0 && c.retryForParamHeaders(ctx, st, method, err) {
		return true, nil // the tool mirrors parameters into headers: learned from tools/list
	}
	return false, fmt.Errorf("mcp %s: %w", method, err)
}
