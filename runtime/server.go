package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/protomcp/protomcp/internal/workers"
)

// Server is an MCP server speaking Streamable HTTP. It is an http.Handler: mount it at the
// path of your MCP endpoint. Tools, resources and prompts can be added and removed at any
// time; connected clients are told through list_changed notifications.
type Server struct {
	impl Implementation
	cfg  serverConfig
	log  *slog.Logger
	logs logBound // the lines peers can trigger per message, bounded (peerLog)

	baseCtx    context.Context
	baseCancel context.CancelFunc
	closing    chan struct{}
	closeOnce  sync.Once
	// stopGrace bounds how long Shutdown waits, once it cancelled them, for handlers and
	// streams to return: code that ignores its context (a handler, an EventStore's Replay)
	// is logged and left running rather than hang Shutdown (defaultStopGrace; tests
	// shorten it).
	stopGrace time.Duration

	mu       sync.RWMutex
	sessions map[string]*session
	reaping  bool // the idle-session reaper is running
	// running counts the handlers in flight and shutdown is set by Shutdown: atomics, so that
	// a request's start and end take no server-wide lock (every request takes mu's read side
	// to find its session). idle, guarded by mu, is closed when running drops to 0 during
	// shutdown.
	running  atomic.Int64
	shutdown atomic.Bool
	idle     chan struct{}
	held     atomic.Int64 // bytes charged to all sessions' budgets (budget.go)
	// scoped is set once a tool that needs scopes is added: until then no call needs the
	// scope check (auth_server.go).
	scoped atomic.Bool
	primer primer // starts the writers of slow inline SSE answers (inline.go)
	// allowedHost is the last Host header the DNS rebinding check allowed (origin.go).
	allowedHost atomic.Pointer[string]

	tools     registry[*toolEntry]
	resources registry[*resourceEntry]
	templates registry[*templateEntry]
	prompts   registry[*promptEntry]

	methods map[string]methodHandler
	// routes resolve what some methods target before the interceptors run (Request.Name,
	// Request.Message) and pick the registration's CallFunc.
	routes  map[string]func(*Request)
	call    CallFunc // the server's interceptors around the request's own CallFunc
	workers workers.Pool
	// hijacked tracks the GET streams that own their connections (hijack.go).
	hijacked hijackedStreams
	// clientMeta caches the decoding of the client capabilities and info of modern requests
	// (era_server.go).
	clientMeta atomic.Pointer[clientMeta]
	// deadlines are the handler deadlines of 2026-07-28 requests, which have no session
	// (deadline.go).
	deadlines deadlines

	modern modernState // the stateless era's listeners and requestState key (era_server.go)

	cluster *cluster // the replica set this server is part of, or nil (cluster.go)

	retention retention // delivered streams whose stored events are forgotten later (retention.go)

	limits *rateLimits // WithRateLimit and the tools' RateLimits (ratelimit.go)
	tasks  taskRunner  // tool calls run as tasks (task_server.go)
}

// methodHandler handles one JSON-RPC request method.
type methodHandler func(ctx context.Context, rs *requestState, params json.RawMessage) (any, error)

// NewServer returns a server that introduces itself as impl.
func NewServer(impl Implementation, opts ...ServerOption) *Server {
	cfg := defaultServerConfig()
	for _, o := range opts {
		o.applyServer(&cfg)
	}
	if impl.Name == "" {
		impl.Name = "protomcp-server"
	}
	if impl.Version == "" {
		impl.Version = Version
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		impl:       impl,
		cfg:        cfg,
		log:        cfg.logger,
		baseCtx:    ctx,
		baseCancel: cancel,
		stopGrace:  defaultStopGrace,
		closing:    make(chan struct{}),
		sessions:   make(map[string]*session),
	}
	s.workers.IdleTimeout = time.Second
	s.tools.init()
	s.resources.init()
	s.templates.init()
	s.prompts.init()
	s.methods = map[string]methodHandler{
		methodPing:               s.handlePing,
		methodToolsList:          s.handleListTools,
		methodToolsCall:          nil, // served by routeCallTool
		methodResourcesList:      s.handleListResources,
		methodResourceTemplates:  s.handleListTemplates,
		methodResourcesRead:      s.handleReadResource,
		methodResourcesSubscribe: s.handleSubscribe,
		methodResourcesUnsub:     s.handleUnsubscribe,
		methodPromptsList:        s.handleListPrompts,
		methodPromptsGet:         s.handleGetPrompt,
		methodComplete:           s.handleComplete,
		methodSetLevel:           s.handleSetLevel,
	}
	s.routes = map[string]func(*Request){
		methodToolsCall:          s.routeCallTool,
		methodPromptsGet:         s.routeGetPrompt,
		methodResourcesRead:      s.routeReadResource,
		methodResourcesSubscribe: routeURI,
		methodResourcesUnsub:     routeURI,
	}
	s.limits = newRateLimits(cfg.rateLimit, cfg.logger)
	s.call = chain(append(cfg.interceptors[:len(cfg.interceptors):len(cfg.interceptors)], s.limits.interceptor()), serveRequest)
	s.addTaskMethods()
	s.startCluster()
	return s
}

// serveRequest is the innermost CallFunc of the server's interceptors: it runs what the
// request's route chose.
func serveRequest(ctx context.Context, req *Request) (*Response, error) {
	return req.serve(ctx, req)
}

// callMethod is the CallFunc of methods served by a methodHandler.
func callMethod(ctx context.Context, req *Request) (*Response, error) {
	res, err := req.handler(ctx, req.rs, req.Params)
	if err != nil {
		return nil, err
	}
	resp := req.response()
	resp.Result = res
	return resp, nil
}

// response returns the Response a CallFunc fills in: the one kept in the request's state when
// there is one, so that a request costs no extra allocation for it.
func (req *Request) response() *Response {
	if req.rs != nil {
		return &req.rs.resp
	}
	return new(Response)
}

// ServeHTTP implements http.Handler: POST carries client messages, GET opens (or resumes) a
// server-to-client stream, DELETE ends a session.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r, ok := s.admit(w, r)
	if !ok {
		return
	}
	switch r.Method {
	case http.MethodPost:
		s.servePost(w, r)
	case http.MethodGet, http.MethodDelete:
		s.serveGetOrDelete(w, r)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		s.httpError(w, http.StatusMethodNotAllowed, CodeInvalidRequest, "method "+r.Method+" is not allowed on the MCP endpoint; use POST, GET or DELETE")
	}
}

// serveGetOrDelete serves a GET or a DELETE: a modern client's gets 405 (serveModernOther,
// era_server.go); the others are a session's, whose stream a GET opens and which a DELETE
// ends.
func (s *Server) serveGetOrDelete(w http.ResponseWriter, r *http.Request) {
	switch {
	case s.serveModernOther(w, r):
	case r.Method == http.MethodGet:
		s.serveGet(w, r)
	default:
		s.serveDelete(w, r)
	}
}

// admit decides whether the server takes an HTTP request at all, answering the refusal
// itself: a foreign Origin (spec 2025-11-25, Transports, Security Warning), a server shutting
// down, a request without valid credentials. It returns the request with what authentication
// learned in its context.
func (s *Server) admit(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	if s.cfg.dnsRebinding {
		if status, msg := s.checkOrigin(r); status != 0 {
			s.httpError(w, status, CodeInvalidRequest, msg)
			return nil, false
		}
	}
	select {
	case <-s.closing:
		s.httpError(w, http.StatusServiceUnavailable, CodeInternalError, "server is shutting down")
		return nil, false
	default:
	}
	if s.cfg.auth != nil {
		return s.authenticate(w, r)
	}
	return r, true
}

// httpError answers with an HTTP status and a JSON-RPC error body without an id.
func (s *Server) httpError(w http.ResponseWriter, status int, code Code, msg string) {
	s.writeJSON(w, status, encodeResponse(nil, nil, NewError(code, msg)))
}

// servePost serves a POST: its body is one message, or a batch of them, of the stateless era
// or of a session (initialize starts one).
func (s *Server) servePost(w http.ResponseWriter, r *http.Request) {
	if !s.checkPostHeaders(w, r) {
		return
	}
	body, err := s.readBody(w, r)
	if err != nil {
		s.bodyError(w, err)
		return
	}
	trimmed := trimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		s.serveBatch(w, r, trimmed) // batch.go: accepted on 2025-03-26 sessions only
		return
	}
	msg, rpcErr := decodeMessage(body)
	if rpcErr != nil {
		s.writeJSON(w, http.StatusBadRequest, encodeResponse(msg.idOrNil(), nil, rpcErr))
		return
	}
	s.serveMessage(w, r, msg, body)
}

// serveMessage serves a POSTed message by its era and kind: one of the stateless era, an
// initialize that starts a session, or a message of a session.
func (s *Server) serveMessage(w http.ResponseWriter, r *http.Request, msg *wireMessage, body []byte) {
	if s.isModernRequest(r, msg) {
		s.serveModern(w, r, msg) // the stateless era (era_server.go)
		return
	}
	if msg.Method == methodInitialize {
		s.serveInitialize(w, r, msg)
		return
	}
	token := TokenInfoFrom(r.Context()) // looked up once: each lookup walks the context's layers
	sess, ok := s.sessionForToken(w, r, token)
	if !ok {
		return
	}
	sess.touch()
	s.serveSessionMessage(w, r, sess, msg, body, token)
}

// idOrNil returns the id of a message that failed to decode, when it got that far.
func (m *wireMessage) idOrNil() *ID {
	if m == nil {
		return nil
	}
	return m.ID
}

// checkPostHeaders decides whether a POST says what it carries and accepts both forms of
// answer (spec 2025-11-25, Transports, Sending Messages to the Server), answering the refusal
// itself.
func (s *Server) checkPostHeaders(w http.ResponseWriter, r *http.Request) bool {
	if ct := headerValue(r.Header, "Content-Type"); !isMediaType(ct, "application/json") {
		s.httpError(w, http.StatusUnsupportedMediaType, CodeInvalidRequest, "Content-Type must be application/json, got "+quoteOrNone(ct))
		return false
	}
	if !acceptsJSONAndSSE(r) {
		s.httpError(w, http.StatusNotAcceptable, CodeInvalidRequest, "Accept must list both application/json and text/event-stream, got "+quoteOrNone(r.Header.Get("Accept")))
		return false
	}
	return true
}

// bodyError answers a POST whose body could not be read.
func (s *Server) bodyError(w http.ResponseWriter, err error) {
	if errors.Is(err, errBodyTimeout) {
		w.Header().Set("Connection", "close")
		s.httpError(w, http.StatusRequestTimeout, CodeInvalidRequest, "the request body did not arrive within "+s.cfg.bodyReadTimeout.String())
		return
	}
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		s.httpError(w, http.StatusRequestEntityTooLarge, CodeInvalidRequest, "request body exceeds the limit of "+itoa(s.cfg.maxBodyBytes)+" bytes")
		return
	}
	s.httpError(w, http.StatusBadRequest, CodeParseError, "could not read request body: "+err.Error())
}

// serveSessionMessage serves a POSTed message of a session: a notification or a response is
// accepted (202), a request answered.
func (s *Server) serveSessionMessage(w http.ResponseWriter, r *http.Request, sess *session, msg *wireMessage, body []byte, token *TokenInfo) {
	switch {
	case msg.isNotification():
		s.handleNotification(sess, msg)
		w.WriteHeader(http.StatusAccepted)
	case msg.isResponse():
		if !s.deliverResponse(sess, msg, body) {
			s.peerWarn("mcp: response to an unknown request", "session", sess.id, "id", msg.ID.short())
			s.writeJSON(w, http.StatusBadRequest, encodeResponse(nil, nil, Errorf(CodeInvalidRequest, "no request with id %s is awaiting a response", msg.ID.short())))
			return
		}
		w.WriteHeader(http.StatusAccepted)
	default:
		if msg.Method == methodToolsCall && !s.authorizeCall(w, r, msg) {
			return
		}
		s.serveRequest(w, r, sess, msg, token)
	}
}

// deliverResponse delivers a client's response (body, decoded as msg) to the request awaiting
// it: one of this replica's, or, in a replica set, the one of the replica the request's ID
// names. It reports false when no request awaits it.
func (s *Server) deliverResponse(sess *session, msg *wireMessage, body []byte) bool {
	return sess.deliverResponse(msg) || (s.cluster != nil && s.forwardResponse(sess, msg, body))
}

// sessionFor finds the session a request names, answering the error itself when it cannot:
// 400 without a session header, 404 for an unknown or ended session, 400 for an unsupported
// protocol version header.
func (s *Server) sessionFor(w http.ResponseWriter, r *http.Request) (*session, bool) {
	return s.sessionForToken(w, r, TokenInfoFrom(r.Context()))
}

// sessionForToken is sessionFor with the request's TokenInfo at hand.
func (s *Server) sessionForToken(w http.ResponseWriter, r *http.Request, token *TokenInfo) (*session, bool) {
	id := headerValue(r.Header, headerSessionID)
	if id == "" {
		s.httpError(w, http.StatusBadRequest, CodeInvalidRequest, "missing Mcp-Session-Id header: send initialize first, then the session ID it returns on every request")
		return nil, false
	}
	sess, ok := s.lookupSession(w, r, id)
	if !ok {
		return nil, false
	}
	if !sess.ownedBy(token) {
		s.httpError(w, http.StatusForbidden, CodeInvalidRequest, "this session was started by another identity: use the access token that started it, or send initialize to start a new session")
		return nil, false
	}
	return sess, s.checkVersionHeader(w, r)
}

// checkVersionHeader refuses a request of a session whose MCP-Protocol-Version header names a
// version the server does not support (spec 2025-11-25, Transports, Protocol Version Header),
// answering 400 itself; a request without the header passes.
func (s *Server) checkVersionHeader(w http.ResponseWriter, r *http.Request) bool {
	if v := headerValue(r.Header, headerProtocolVersion); v != "" && !isSupportedVersion(v) {
		s.httpError(w, http.StatusBadRequest, CodeInvalidRequest, "unsupported MCP-Protocol-Version "+quoteOrNone(v)+"; supported: "+strings.Join(supportedVersions, ", "))
		return false
	}
	return true
}

// lookupSession finds the session id, in the shared store too in a replica set, and marks it
// established (its client uses the ID initialize returned); it answers 404 itself when there
// is no such session.
func (s *Server) lookupSession(w http.ResponseWriter, r *http.Request, id string) (*session, bool) {
	s.mu.RLock()
	sess := s.sessions[id]
	s.mu.RUnlock()
	if s.cluster != nil {
		// A replica set: the store has the session's current state (cluster.go).
		var ok bool
		if sess, ok = s.loadShared(w, r, id, sess); !ok {
			return nil, false
		}
	}
	if sess == nil {
		s.httpError(w, http.StatusNotFound, CodeInvalidRequest, "session not found: it expired or was deleted; send initialize to start a new one")
		return nil, false
	}
	sess.establish()
	return sess, true
}

// serveInitialize serves an initialize POSTed without a session, returning the new session's
// ID in its header.
func (s *Server) serveInitialize(w http.ResponseWriter, r *http.Request, msg *wireMessage) {
	if !msg.isRequest() {
		s.httpError(w, http.StatusBadRequest, CodeInvalidRequest, "initialize must be a request with an id")
		return
	}
	if headerValue(r.Header, headerSessionID) != "" {
		s.writeJSON(w, http.StatusBadRequest, encodeResponse(msg.ID, nil, NewError(CodeInvalidRequest, "initialize must not carry an Mcp-Session-Id: this session is already initialized; DELETE it or start a new one without the header")))
		return
	}
	if secs, err := s.limits.admitSession(r, msg); err != nil {
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		s.writeJSON(w, http.StatusTooManyRequests, encodeResponse(msg.ID, nil, toRPCError(err)))
		return
	}
	sess, body, status := s.initialize(r.Context(), msg, r.Header, TokenInfoFrom(r.Context()), r.RemoteAddr, nil)
	if sess != nil {
		w.Header().Set(headerSessionID, sess.id)
	}
	s.writeJSON(w, status, body)
}

// initialize serves an initialize request (spec 2025-11-25, Lifecycle, Initialization)
// whatever transport carried it: it runs the server's interceptors around the start of a
// session, and returns the session (nil when none started) with the encoded answer and its
// HTTP status. header, token and peer (the remote address) are what the transport knows of
// the request (nil, nil and "" on stdio); line writes the session's messages on a
// message-stream transport (nil on HTTP).
func (s *Server) initialize(ctx context.Context, msg *wireMessage, header http.Header, token *TokenInfo, peer string, line *lineWriter) (*session, []byte, int) {
	meta, metaErr := requestMeta(msg.Params)
	if metaErr != nil {
		return nil, encodeResponse(msg.ID, nil, metaErr), http.StatusBadRequest
	}
	var sess *session
	req := &Request{Method: methodInitialize, ID: *msg.ID, Params: msg.Params, Meta: meta, Header: header}
	req.serve = func(_ context.Context, req *Request) (resp *Response, err error) {
		sess, resp, err = s.startSession(ctx, req, token, peer, line)
		return resp, err
	}
	resp, err := s.callInitialize(ctx, req)
	var b []byte
	if err == nil && resp != nil {
		b, err = json.Marshal(resp.Result)
	}
	if err != nil || sess == nil {
		b, status := s.initializeFailed(msg, sess, err)
		return nil, b, status
	}
	return sess, encodeResponse(msg.ID, b, nil), http.StatusOK
}

// initializeFailed answers an initialize that started no session, or one an interceptor
// refused after the session was made (which it ends), with the error and its HTTP status.
func (s *Server) initializeFailed(msg *wireMessage, sess *session, err error) ([]byte, int) {
	if sess != nil {
		s.endSession(sess) // an interceptor refused after the session was made
	}
	if err == nil {
		err = NewError(CodeInternalError, "initialize was answered without starting a session")
	}
	status := http.StatusOK
	var se *statusError
	if errors.As(err, &se) {
		status = se.status
	}
	return encodeResponse(msg.ID, nil, toRPCError(err)), status
}

// startSession is the innermost CallFunc of initialize: it negotiates the version, makes room
// in the session table (or refuses), and starts the session, owned by token's identity, held
// by that identity or else by peer's address (sessions.go), and written to by line when a
// message-stream transport carries it.
func (s *Server) startSession(ctx context.Context, req *Request, token *TokenInfo, peer string, line *lineWriter) (*session, *Response, error) {
	p, rpcErr := s.decodeInitialize(req.Params)
	if rpcErr != nil {
		return nil, nil, &statusError{status: http.StatusBadRequest, err: rpcErr}
	}
	version := p.ProtocolVersion
	if !isSupportedVersion(version) {
		version = LatestProtocolVersion // counter-offer (Lifecycle, Version Negotiation)
	}
	sess := s.addSession(p, version, token, holderOf(token, peer), line)
	if sess == nil {
		return nil, nil, &statusError{status: http.StatusServiceUnavailable, err: NewError(CodeInternalError, "too many sessions; try again later")}
	}
	if err := s.createShared(ctx, sess); err != nil {
		// The session is in the table: initialize ends it, as it does when an
		// interceptor refuses.
		return sess, nil, err
	}
	req.SessionID, req.ProtocolVersion = sess.id, version
	s.peerDebug("mcp: session started", "session", sess.id, "client", p.ClientInfo.Name, "version", version)
	return sess, &Response{Result: &InitializeResult{
		ProtocolVersion: version,
		Capabilities:    s.capabilities(),
		ServerInfo:      s.impl,
		Instructions:    s.cfg.instructions,
	}}, nil
}

// addSession starts a session in the table, owned by token's identity, held by h, and written
// to by line on a message-stream transport, evicting one when the table is full (the table's
// policy under pressure, sessions.go). It returns nil when there is still no room for it, or
// for its client's state in the server's budget.
func (s *Server) addSession(p *InitializeParams, version string, token *TokenInfo, h holder, line *lineWriter) *session {
	s.mu.Lock()
	var evicted *session
	if len(s.sessions) >= s.cfg.maxSessions {
		evicted = s.evictLocked(h)
	}
	var sess *session
	if s.roomLocked(stateSize(&p.ClientInfo)) {
		sess = s.newSession(p, version)
		sess.owner = token.identity()
		sess.holder = h
		if line != nil {
			sess.line = line
			// Its standalone stream is the connection itself, always there: the session
			// is never idle while the connection lasts. Nor is its handshake pending: the
			// client holds no session ID that it could fail to use (sessions.go).
			sess.standalone.attached = true
			sess.established.Store(true)
		}
		s.sessions[sess.id] = sess
		s.startReapingLocked()
	}
	s.mu.Unlock()
	if evicted != nil {
		if sess != nil {
			s.peerInfo("mcp: session table full; ended a session to make room", "session", evicted.id, "established", evicted.established.Load())
		}
		evicted.end() // out of the table already
	}
	return sess
}

// roomLocked reports whether the session table has room for a session, and the server's
// budget for size bytes of its client's state. s.mu is held.
func (s *Server) roomLocked(size int64) bool {
	return len(s.sessions) < s.cfg.maxSessions && s.held.Load()+size <= s.cfg.serverBudget
}

// startReapingLocked starts the reaper (s.mu is held) when sessions can expire and it is not
// running: it runs while there are sessions.
func (s *Server) startReapingLocked() {
	if !s.reaping && (s.cfg.sessionIdleTimeout > 0 || s.cfg.handshakeTimeout > 0) {
		s.reaping = true
		go s.reap(s.cfg.sessionIdleTimeout)
	}
}

// createShared records a new session in the shared store, in a replica set, so that every
// replica finds it.
func (s *Server) createShared(ctx context.Context, sess *session) error {
	c := s.cluster
	if c == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	err := c.sessions.Create(ctx, sess.id, sess.sharedState())
	cancel()
	if err != nil {
		s.peerWarn("mcp: session store unavailable", "error", err)
		return &statusError{status: http.StatusServiceUnavailable, err: Errorf(CodeInternalError, "the session store is unavailable (the replicas of this server share sessions through it); try again shortly: %v", err)}
	}
	return nil
}

// callInitialize runs initialize through the server's interceptors, containing their panics.
func (s *Server) callInitialize(ctx context.Context, req *Request) (resp *Response, err error) {
	defer func() {
		if p := recover(); p != nil {
			s.peerError("mcp: initialize panicked", "panic", p, "stack", string(debug.Stack()))
			err = NewError(CodeInternalError, "internal error: initialize panicked")
		}
	}()
	return s.call(ctx, req)
}

// statusError is an error answered with an HTTP status other than 200.
type statusError struct {
	status int
	err    error
}

// Error returns the wrapped error's text.
func (e *statusError) Error() string { return e.err.Error() }

// Unwrap returns the wrapped error.
func (e *statusError) Unwrap() error { return e.err }

// capabilities returns what the server declares in its initialize result.
func (s *Server) capabilities() ServerCapabilities {
	c := ServerCapabilities{
		Logging:   &struct{}{},
		Tools:     &ListChangedCapability{ListChanged: true},
		Prompts:   &ListChangedCapability{ListChanged: true},
		Resources: &ResourcesCapability{Subscribe: true, ListChanged: true},
	}
	if s.cfg.completion != nil || s.hasCompleters() {
		c.Completions = &struct{}{}
	}
	if s.taskCapable() {
		c.Tasks = tasksCapability()
	}
	return c
}

// serveRequest runs one request. The stream that carries its messages exists before the
// handler starts, and has a writer whenever the handler sends anything: the handler never
// waits for a writer (inline.go).
func (s *Server) serveRequest(w http.ResponseWriter, r *http.Request, sess *session, msg *wireMessage, token *TokenInfo) {
	rs, rpcErr, status := s.openRequest(sess, msg, r.Header, token, r.Context())
	if rpcErr != nil {
		s.writeJSON(w, status, encodeResponse(msg.ID, nil, rpcErr))
		return
	}
	rs.remote = r.RemoteAddr
	mode := modeAuto
	if s.cfg.alwaysSSE {
		mode = modeSSE
	}
	if !takeable(r, w) {
		// The response cannot end before its handler returns (HTTP/2), yet a
		// CloseSSEStream must end it at once: the client resumes on a new connection for what
		// the handler sends next, and may have to answer it (an elicitation) before the
		// handler can return. The handler runs on a worker, and this goroutine writes.
		s.workers.RunJob(rs)
		s.serveStream(r.Context(), w, rs.st, 1, mode, nil)
		return
	}
	s.runInline(r, w, rs, mode)
}

// openRequest admits a request to its session, whatever transport carried it: it finds the
// method's handler, registers the request in flight (duplicate ids and the in-flight limit are
// refused), charges its params to the session's budget, counts the handler in, and makes the
// stream that will carry its messages and its state. header and token are what the transport
// knows of the request (nil on stdio); values are the context values its handler sees behind
// its own (an HTTP request's: what middleware stored), or nil. On refusal it returns the
// JSON-RPC error to answer with and the HTTP status that goes with it.
func (s *Server) openRequest(sess *session, msg *wireMessage, header http.Header, token *TokenInfo, values context.Context) (*requestState, *Error, int) {
	h, ok := s.methods[msg.Method]
	if !ok {
		return nil, Errorf(CodeMethodNotFound, "method not found: %s", truncate(msg.Method, 100)), http.StatusOK
	}
	// One context per request, cancelled by notifications/cancelled or the session's end and
	// bounded by the handler timeout: one context rather than two, each costing allocations.
	ctx, cancel := s.handlerContext(sess.ctx, &sess.deadlines)
	if rpcErr, status := s.admitRequest(sess, msg, cancel); rpcErr != nil {
		cancel()
		return nil, rpcErr, status
	}
	st := sess.newRequestStream()
	if s.cluster != nil {
		st.requestID = []byte(msg.ID.raw) // for the outcome another replica may have to give
	}
	st.attach() // a new stream: nobody else holds it, and this is its writer generation 1
	rs := &requestState{sess: sess, st: st, id: msg.ID, header: header, token: token}
	rs.caller.rs = rs
	// The handler outlives neither its session nor its timeout, but it may outlive the
	// transport's request (CloseSSEStream, a client that goes away): it takes the request
	// context's values (what HTTP middleware stored: auth, the HTTP server span) without its
	// cancellation.
	rs.ctx = handlerCtx{Context: ctx, values: requestValues(values), rs: rs}
	rs.cancel, rs.handler, rs.msg = cancel, h, msg
	return rs, nil, 0
}

// admitRequest registers a request in its session's in-flight set (cancel cancels it),
// charges its params to the session's budget (they stay in memory while the handler runs),
// and counts its handler in, undoing what it did when a step refuses: a duplicate id or the
// in-flight limit, the budget, a server shutting down. It returns the error to answer a
// refusal with, and its HTTP status.
func (s *Server) admitRequest(sess *session, msg *wireMessage, cancel context.CancelFunc) (*Error, int) {
	if rpcErr, status := sess.startRequest(msg.ID, cancel); rpcErr != nil {
		return rpcErr, status
	}
	if !sess.reserve(requestCost(msg), false) {
		sess.endRequest(msg.ID)
		return budgetError(sess), http.StatusTooManyRequests
	}
	if !s.handlerStarted() {
		sess.release(requestCost(msg))
		sess.endRequest(msg.ID)
		return NewError(CodeInternalError, "server is shutting down"), http.StatusServiceUnavailable
	}
	return nil, 0
}

// runHandler runs a method handler and queues its response on the request's stream.
func (s *Server) runHandler(ctx context.Context, cancel context.CancelFunc, rs *requestState, h methodHandler, msg *wireMessage) {
	defer s.handlerDone()
	defer cancel()
	// The request leaves the session's in-flight set before its response is queued (below),
	// so that a client that has its answer finds the id free and the budget released; on the
	// paths that send no response, when the handler returns.
	ended := false
	defer func() {
		if !ended {
			rs.sess.release(requestCost(msg))
			rs.sess.endRequest(msg.ID)
		}
	}()
	metaErr := rs.takeMeta(msg.Params)
	ctx = rs.handlerContext(ctx)
	var (
		result any
		err    error
	)
	if metaErr != nil {
		err = metaErr
	} else {
		result, err = s.callHandler(ctx, rs, h, msg)
	}
	status := 0
	if rs.sess.stateless {
		result, status, err = s.modernAnswer(rs, result, err)
	}
	if cancelledByClient(ctx, rs.sess, err) {
		s.peerDebug("mcp: request cancelled", "session", rs.sess.id, "id", msg.ID.short())
		_ = rs.st.send(nil, true) // ends the stream without a message
		return
	}
	body, pooled := s.encodeFinal(ctx, rs.sess, msg, result, err)
	ended = true
	rs.sess.release(requestCost(msg))
	rs.sess.endRequest(msg.ID)
	if sendErr := rs.st.sendEvent(streamEvent{data: body, final: true, pooled: pooled, status: status}); sendErr != nil {
		level := slog.LevelError
		if errors.Is(sendErr, ErrClosed) {
			level = slog.LevelDebug // the session ended (the client went away): nobody waits for it
		}
		s.peerLog(level, "mcp: response could not be queued for the client", "session", rs.sess.id, "id", msg.ID.short(), "error", sendErr)
	}
}

// takeMeta records the request's _meta in its state, with the progress token the handler
// reports progress against, and returns the error that malformed _meta is answered with.
func (rs *requestState) takeMeta(params json.RawMessage) *Error {
	if rs.metaTaken {
		return nil
	}
	meta, metaErr := requestMeta(params)
	rs.meta = meta
	if meta != nil {
		rs.progressToken = meta.ProgressToken
	}
	return metaErr
}

// handlerContext returns the context the handler sees: the request's own, with its values,
// when the caller made it (openRequest), else one on ctx.
func (rs *requestState) handlerContext(ctx context.Context) context.Context {
	if rs.ctx.rs == rs {
		return &rs.ctx
	}
	return &handlerCtx{Context: ctx, rs: rs}
}

// encodeFinal encodes the response that ends a request's stream: a failure of a handler the
// shutdown cancelled says so, and a stateless-era response is a copy in its era's form, so
// that the pooled buffer can go back.
func (s *Server) encodeFinal(ctx context.Context, sess *session, msg *wireMessage, result any, err error) ([]byte, *wireBuf) {
	if err != nil && ctx.Err() != nil && s.baseCtx.Err() != nil {
		err = NewError(CodeInternalError, "request cancelled: the server is shutting down")
	}
	if sess.stateless && err == nil {
		if er, ok := result.(*encodedResult); ok {
			if body, pooled, ok := er.responseWith(msg.ID, modernMembers(msg.Method)); ok {
				return body, pooled
			}
		}
	}
	body, pooled := s.encodeAnswer(msg, result, err)
	if sess.stateless {
		body = modernBody(msg.Method, body, msg.ID)
		pooled.release()
		pooled = nil
	}
	return body, pooled
}

// cancelledByClient reports whether a handler failed because its client cancelled the request
// (notifications/cancelled), which then gets no response (spec 2025-11-25, Utilities,
// Cancellation): its context was cancelled, not by its deadline, while its session lives.
func cancelledByClient(ctx context.Context, sess *session, err error) bool {
	return err != nil && errors.Is(ctx.Err(), context.Canceled) && sess.ctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded)
}

// encodeAnswer encodes the response to msg: its handler's result, or its error. A typed tool's
// result comes encoded, in a pooled buffer that goes back once the response is written.
func (s *Server) encodeAnswer(msg *wireMessage, result any, err error) ([]byte, *wireBuf) {
	if err != nil {
		return encodeResponse(msg.ID, nil, toRPCError(err)), nil
	}
	if er, ok := result.(*encodedResult); ok {
		return er.response(msg.ID) // the envelope goes around it
	}
	raw, mErr := s.marshalResult(msg.Method, result)
	if mErr != nil {
		return encodeResponse(msg.ID, nil, toRPCError(mErr)), nil
	}
	return encodeResponse(msg.ID, raw, nil), nil
}

// callHandler runs a request through the server's interceptors to its handler, containing
// the handler's panics, and returns its result (a tool's in its CallToolResult form).
func (s *Server) callHandler(ctx context.Context, rs *requestState, h methodHandler, msg *wireMessage) (result any, err error) {
	req := &rs.req
	defer func() {
		if p := recover(); p != nil {
			err = s.handlerPanicked(req, msg.Method, p)
		}
	}()
	version := rs.sess.version()
	if msg.Method != methodPing && version == "" {
		return nil, NewError(CodeInvalidRequest, "session not initialized")
	}
	s.prepareRequest(req, rs, h, msg, version)
	resp, err := s.call(ctx, req)
	if msg.Method == methodToolsCall {
		return toolAnswer(ctx, req, resp, err)
	}
	return resultOf(resp, err)
}

// resultOf returns the result of a method other than tools/call: the handler's, or nil with
// its error.
func resultOf(resp *Response, err error) (any, error) {
	if err != nil || resp == nil {
		return nil, err
	}
	return resp.Result, nil
}

// prepareRequest fills in the Request the interceptors see, and lets the method's route (if
// any) resolve what it serves before they run: a tool call's tool and arguments.
func (s *Server) prepareRequest(req *Request, rs *requestState, h methodHandler, msg *wireMessage, version string) {
	req.Method, req.ID, req.Params, req.Meta = msg.Method, *msg.ID, msg.Params, rs.meta
	req.SessionID, req.ProtocolVersion, req.Header = rs.sess.id, version, rs.header
	req.rs, req.handler, req.serve = rs, h, callMethod
	if route := s.routes[msg.Method]; route != nil {
		route(req)
	}
}

// handlerPanicked logs a handler's panic with its stack and returns the internal error that
// answers the request, naming the tool for tools/call.
func (s *Server) handlerPanicked(req *Request, method string, p any) error {
	what := method
	if req.Name != "" && method == methodToolsCall {
		what = "tool " + strconv.Quote(truncate(req.Name, 64))
	}
	s.peerError("mcp: handler panicked", "method", method, "handler", what, "panic", p, "stack", string(debug.Stack()))
	return Errorf(CodeInternalError, "internal error: the %s handler panicked", what)
}

// marshalResult encodes a handler's result; json.RawMessage passes through. It runs after the
// handler returned, outside callHandler's recover: a panic in a result's MarshalJSON (a
// server's own type in a _meta map, say) is recovered here, logged with its stack, and becomes
// an internal error, as a panic in the handler does.
func (s *Server) marshalResult(method string, v any) (raw json.RawMessage, err error) {
	defer func() {
		if p := recover(); p != nil {
			s.peerError("mcp: encoding a result panicked", "method", method, "panic", p, "stack", string(debug.Stack()))
			raw, err = nil, Errorf(CodeInternalError, "internal error: encoding the %s result panicked", truncate(method, 64))
		}
	}()
	switch r := v.(type) {
	case nil:
		return json.RawMessage("{}"), nil
	case json.RawMessage:
		return r, nil
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return nil, Errorf(CodeInternalError, "could not encode result: %v", err)
		}
		return b, nil
	}
}

// toRPCError turns a handler error into a JSON-RPC error: an *Error passes through; a
// deadline becomes an internal error that says so; anything else is an internal error.
func toRPCError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return Errorf(CodeInternalError, "request timed out: %v", err)
	}
	return Errorf(CodeInternalError, "%v", err)
}

// handleNotification acts on a client's notification to a session.
func (s *Server) handleNotification(sess *session, msg *wireMessage) {
	switch msg.Method {
	case notifInitialized:
		sess.mu.Lock()
		sess.initialized = true
		sess.mu.Unlock()
	case notifCancelled:
		s.onCancelled(sess, msg.Params)
	case notifRootsListChanged, notifProgress:
		// Accepted; nothing to do without a roots or progress consumer.
	default:
		s.peerDebug("mcp: ignoring unknown notification", "session", sess.id, "method", msg.Method)
	}
}

// onCancelled cancels the request a notifications/cancelled names (spec 2025-11-25,
// Utilities, Cancellation): one of this replica's, else, in a replica set, whichever replica
// runs it.
func (s *Server) onCancelled(sess *session, params json.RawMessage) {
	var p CancelledParams
	if err := json.Unmarshal(params, &p); err != nil || p.RequestID == nil {
		s.peerDebug("mcp: ignoring invalid notifications/cancelled", "session", sess.id)
		return
	}
	if sess.cancelRequest(p.RequestID) {
		return
	}
	if s.cluster != nil {
		// The request may run on another replica.
		s.publish("", &busMessage{Kind: busCancel, Session: sess.id, Data: params})
	} else {
		s.peerDebug("mcp: notifications/cancelled for a request not in flight", "session", sess.id, "id", p.RequestID.short())
	}
}

// serveGet serves a GET: it opens the session's standalone stream, or resumes a stream after
// its Last-Event-ID.
func (s *Server) serveGet(w http.ResponseWriter, r *http.Request) {
	if !accepts(r, "text/event-stream") {
		s.httpError(w, http.StatusNotAcceptable, CodeInvalidRequest, "GET opens an SSE stream: Accept must list text/event-stream")
		return
	}
	sess, ok := s.sessionFor(w, r)
	if !ok {
		return
	}
	sess.touch()
	if last := headerValue(r.Header, headerLastEventID); last != "" && s.resumes(last) {
		s.resume(w, r, sess, last)
		return
	}
	my, ok := sess.standalone.attach()
	if !ok {
		s.httpError(w, http.StatusConflict, CodeInvalidRequest, "this session already has a GET stream open; only one is allowed")
		return
	}
	if s.serveHijacked(w, r, func(ctx context.Context, hr *hijackedResponse) {
		s.serveStream(ctx, hr, sess.standalone, my, modeSSE, nil)
	}) {
		return
	}
	s.serveStream(r.Context(), w, sess.standalone, my, modeSSE, nil)
}

// resumes decides whether a GET with Last-Event-ID last resumes a stream: all do but one that
// names another replica's GET stream, when this replica's starts afresh (cluster.go).
func (s *Server) resumes(last string) bool {
	streamID, _, _ := parseEventID(last)
	return s.cluster == nil || !s.cluster.isRemoteStandalone(streamID)
}

// resume continues a stream after the client's Last-Event-ID: stored events first, then live
// ones. IDs are looked up in this session only, so no event crosses sessions.
func (s *Server) resume(w http.ResponseWriter, r *http.Request, sess *session, last string) {
	streamID, seq, ok := parseEventID(last)
	if !ok {
		s.httpError(w, http.StatusBadRequest, CodeInvalidRequest, "malformed Last-Event-ID "+quoteOrNone(truncate(last, 64)))
		return
	}
	st := sess.lookupStream(streamID)
	if st == nil && s.cluster != nil {
		s.followRemote(w, r, sess, streamID, seq) // another replica's stream (cluster.go)
		return
	}
	if !s.resumable(w, st, seq) {
		return
	}
	if st != nil && st.standalone {
		// A resumed GET stream lives as long as a new one (hijack.go).
		if s.serveHijacked(w, r, func(ctx context.Context, hr *hijackedResponse) {
			s.replayAndFollow(ctx, hr, sess, st, streamID, seq)
		}) {
			return
		}
	}
	s.replayAndFollow(r.Context(), w, sess, st, streamID, seq)
}

// replayAndFollow serves a resumption of the stream streamID after seq: the stored events,
// then, when the stream is live (st not nil), its new ones, on this connection, which takes
// the stream over.
func (s *Server) replayAndFollow(ctx context.Context, w http.ResponseWriter, sess *session, st *stream, streamID string, seq uint64) {
	sw := newSSEWriter(ctx, w, s.cfg.writeTimeout)
	sw.cancellable() // a takeover must stop the replay too
	defer sw.finish()
	var my uint64
	if st != nil {
		// The newest connection wins: the client resumes because it lost the old one, which
		// the server may not have noticed yet. The old one is closed.
		my = st.takeover(sw)
	} else {
		// So it does for a stream that ended: one replay of it at a time, which starts
		// once the one it replaces let go of its events (their bytes are charged).
		mine, prev := sess.claimReplay(streamID, sw)
		defer sess.releaseReplay(streamID, mine)
		if prev != nil {
			t := time.NewTimer(s.cfg.writeTimeout + time.Second)
			select { // even when itself taken over: the next one waits for it, and so for prev
			case <-prev.done:
			case <-t.C:
			}
			t.Stop()
		}
	}
	sw.header()
	replayed, ok := s.replay(w, sess, st, my, streamID, seq, sw)
	if !ok {
		return
	}
	if st == nil {
		s.endStoredReplay(w, sw, replayed)
		return
	}
	s.serveStream(ctx, w, st, my, modeResume, sw)
}

// resumable decides whether a Last-Event-ID after seq can name an event of st (nil for a
// stream that ended, whose events only the event store may hold), answering 404 itself when
// it cannot: no store to look in, or an ID the server never sent.
func (s *Server) resumable(w http.ResponseWriter, st *stream, seq uint64) bool {
	if st == nil && s.cfg.eventStore == nil {
		s.httpError(w, http.StatusNotFound, CodeInvalidRequest, "Last-Event-ID names no stream of this session")
		return false
	}
	if st != nil && seq > st.lastSeq() {
		// An ID the server never sent: a crafted one, not a resumption.
		s.httpError(w, http.StatusNotFound, CodeInvalidRequest, "Last-Event-ID names no event of this stream")
		return false
	}
	return true
}

// endStoredReplay ends the resumption of a stream that ended: what was replayed is all there
// is, and nothing replayed means the store knew no such stream.
func (s *Server) endStoredReplay(w http.ResponseWriter, sw *sseWriter, replayed int) {
	if replayed == 0 {
		s.writeJSON(w, http.StatusNotFound, encodeResponse(nil, nil, NewError(CodeInvalidRequest, "Last-Event-ID names no stream of this session")))
		return
	}
	_ = sw.flush(true)
}

// replay writes the stored events of the stream streamID after seq into sw, out every
// sseChunk bytes, so that memory stays bounded however much is stored and however slowly the
// client reads. It returns how many it replayed, and false when the response is over (the
// replay failed part-way, or events were evicted); st, when not nil, is the live stream that
// writer my took over.
func (s *Server) replay(w http.ResponseWriter, sess *session, st *stream, my uint64, streamID string, seq uint64, sw *sseWriter) (int, bool) {
	store := s.cfg.eventStore
	if store == nil {
		return 0, true
	}
	replayed := 0
	var charged int64 // bytes of events the replay holds, charged to the budgets
	defer func() { sess.release(charged) }()
	err := store.Replay(sw.ctx, sess.id, streamID, seq, func(n uint64, data []byte) error {
		size := int64(len(data))
		if !sess.reserve(size, false) {
			return refuseReplay(sess, size)
		}
		charged += size
		var err error
		switch {
		case len(data) > sseChunk:
			err = sw.eventChunked(streamID, n, data)
		case len(sw.buf)+len(data) >= sseChunk:
			sw.event(streamID, n, data)
			err = sw.flush(false)
		default:
			sw.event(streamID, n, data) // held in sw.buf, and charged, until the next write
			sw.replayedThrough = n
			replayed++
			return nil
		}
		sess.release(charged) // written: the replay holds them no more
		charged = 0
		sw.replayedThrough = n
		replayed++
		return err
	})
	return replayed, s.replayEnded(w, sess, st, my, streamID, sw, err)
}

// replayRefusal stops a replay whose next event, of size bytes, would take the session or the
// server over its memory budget: a replay holds each event until it is written, and a client
// that resumes without reading would otherwise pin them all.
type replayRefusal struct {
	size   int64
	status int // 429 when the session's own budget is spent (it can make room), else 503
	msg    string
}

// refuseReplay returns the refusal of the next event of size bytes of a replay on sess.
func refuseReplay(sess *session, size int64) *replayRefusal {
	cfg := &sess.server.cfg
	if held := sess.held.Load(); held+size > cfg.sessionBudget {
		return &replayRefusal{size: size, status: http.StatusTooManyRequests, msg: fmt.Sprintf("resumption refused: this session holds %d bytes of its %d-byte memory budget (events queued for it, or replays it has not read) and the next stored event is %d bytes; read the session's open streams, or close the resumptions it no longer reads, then resume again", held, cfg.sessionBudget, size)}
	}
	return &replayRefusal{size: size, status: http.StatusServiceUnavailable, msg: fmt.Sprintf("resumption refused: the server's memory budget (%d bytes, all sessions) has no room for the next stored event of %d bytes; resume again shortly", cfg.serverBudget, size)}
}

func (e *replayRefusal) Error() string { return e.msg }

// replayEnded decides whether the response goes on after a replay that returned err: not
// when part of it went out before it failed (the client resumes again from what it got), nor
// when events were evicted (going on would skip them without a word); the writer my lets go
// of st then.
func (s *Server) replayEnded(w http.ResponseWriter, sess *session, st *stream, my uint64, streamID string, sw *sseWriter, err error) bool {
	if err == nil {
		return true
	}
	evicted := errors.Is(err, ErrEventsEvicted)
	if sw.ctx.Err() != nil {
		// A newer resumption took the stream over (abort), or the client went away:
		// nothing more goes out on this connection.
		if st != nil {
			st.detach(my)
		}
		return false
	}
	var refused *replayRefusal
	if errors.As(err, &refused) && !sw.sent {
		if st != nil {
			st.detach(my)
		}
		s.log.Info("mcp: resumption refused for lack of budget", "session", sess.id, "stream", streamID, "event_bytes", refused.size)
		w.Header().Set("Retry-After", "1")
		s.writeJSON(w, refused.status, encodeResponse(nil, nil, NewError(CodeInvalidRequest, refused.msg)))
		return false
	}
	if !sw.sent && !evicted {
		s.peerWarn("mcp: replay failed", "session", sess.id, "stream", streamID, "error", err)
		return true
	}
	if st != nil {
		st.detach(my)
	}
	if sw.sent {
		s.peerDebug("mcp: replay stopped", "session", sess.id, "stream", streamID, "error", err)
	} else {
		s.writeJSON(w, http.StatusNotFound, encodeResponse(nil, nil, NewError(CodeInvalidRequest, err.Error())))
	}
	return false
}

// serveDelete serves a DELETE: the client ends its session (spec 2025-11-25, Transports,
// Session Management).
func (s *Server) serveDelete(w http.ResponseWriter, r *http.Request) {
	sess, ok := s.sessionFor(w, r)
	if !ok {
		return
	}
	if s.cluster != nil && !s.deleteShared(w, r, sess) {
		return
	}
	s.endSession(sess)
	w.WriteHeader(http.StatusOK)
}

// deleteShared deletes a session from the shared store and tells the other replicas, whose
// copies end too (their handlers, their GET stream); it answers 503 itself when the store is
// unreachable.
func (s *Server) deleteShared(w http.ResponseWriter, r *http.Request, sess *session) bool {
	ctx, cancel := context.WithTimeout(r.Context(), storeTimeout)
	err := s.cluster.sessions.Delete(ctx, sess.id)
	cancel()
	if err != nil {
		s.storeUnavailable(w, err)
		return false
	}
	sess.mu.Lock()
	sess.forget = true
	sess.mu.Unlock()
	s.publish("", &busMessage{Kind: busEnded, Session: sess.id})
	return true
}

// endSession removes a session from the table and ends it.
func (s *Server) endSession(sess *session) {
	s.mu.Lock()
	delete(s.sessions, sess.id)
	s.mu.Unlock()
	sess.end()
}

// handlerStarted counts a handler in, unless the server is shutting down.
func (s *Server) handlerStarted() bool {
	// Counted before the check: a Shutdown that sets the flag after this load sees the
	// count and waits for this handler.
	s.running.Add(1)
	if s.shutdown.Load() {
		s.handlerDone()
		return false
	}
	return true
}

// handlerDone counts a handler out, waking a Shutdown waiting for the last one.
func (s *Server) handlerDone() {
	if s.running.Add(-1) == 0 && s.shutdown.Load() {
		s.mu.Lock()
		if s.idle != nil && s.running.Load() == 0 {
			close(s.idle)
			s.idle = nil
		}
		s.mu.Unlock()
	}
}

// reap ends sessions idle for longer than ttl. It runs while there are sessions, so an idle
// server holds no goroutine.
func (s *Server) reap(ttl time.Duration) {
	t := time.NewTicker(s.reapInterval())
	defer t.Stop()
	for {
		select {
		case <-s.baseCtx.Done():
			s.mu.Lock()
			s.reaping = false
			s.mu.Unlock()
			return
		case <-t.C:
		}
		if !s.reapOnce(ttl) {
			return
		}
	}
}

// reapOnce ends the sessions a sweep of the table finds idle (or still in their handshake
// past its timeout), and extends the stored lifetime of the busy ones in a replica set. It
// reports false, and the reaper stops, when the table is empty.
func (s *Server) reapOnce(ttl time.Duration) bool {
	idle, busy, ok := s.sweep(ttl)
	if !ok {
		return false
	}
	for _, sess := range idle {
		s.peerDebug("mcp: ending idle session", "session", sess.id)
		s.endSession(sess)
	}
	if len(busy) > 0 {
		s.touchShared(busy)
	}
	return true
}

// sweep looks at the session table once: it returns the sessions to end (handshakes not
// completed in time, sessions idle for longer than ttl) and, in a replica set, the busy ones,
// whose shared state must not expire. It reports false, and the reaper stops, when the table
// is empty.
func (s *Server) sweep(ttl time.Duration) (idle, busy []*session, ok bool) {
	now := time.Now().UnixNano()
	cutoff := now - int64(ttl)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.sessions) == 0 {
		s.reaping = false
		return nil, nil, false
	}
	idle = s.expiredHandshakesLocked(now)
	if ttl > 0 {
		idle = s.idleLocked(idle, cutoff)
	}
	if s.cluster != nil {
		busy = s.busyLocked()
	}
	return idle, busy, true
}

// idleLocked appends to idle the sessions unused since cutoff with nothing in flight and no
// GET stream (s.mu is held); a session still in its handshake is the handshake timeout's,
// when there is one.
func (s *Server) idleLocked(idle []*session, cutoff int64) []*session {
	for _, sess := range s.sessions {
		if s.idleSince(sess, cutoff) {
			idle = append(idle, sess)
		}
	}
	return idle
}

// idleSince reports whether sess was last used before cutoff and is idle now; a session still
// in its handshake is the handshake timeout's, when there is one.
func (s *Server) idleSince(sess *session, cutoff int64) bool {
	if !sess.established.Load() && s.cfg.handshakeTimeout > 0 {
		return false
	}
	return sess.lastUsed.Load() < cutoff && sess.idle()
}

// busyLocked returns the sessions with a request in flight or a GET stream (s.mu is held).
func (s *Server) busyLocked() []*session {
	var busy []*session
	for _, sess := range s.sessions {
		if !sess.idle() {
			busy = append(busy, sess)
		}
	}
	return busy
}

// idle reports whether the session has nothing in flight and no attached GET stream.
func (sess *session) idle() bool {
	sess.mu.Lock()
	n := len(sess.inflight)
	sess.mu.Unlock()
	sess.standalone.mu.Lock()
	attached := sess.standalone.attached
	sess.standalone.mu.Unlock()
	return n == 0 && !attached
}

// Shutdown stops accepting requests, waits for in-flight handlers to finish until ctx is done,
// then cancels the rest and ends every session. It does not close the http.Server: call
// http.Server.Shutdown as well (before or after).
func (s *Server) Shutdown(ctx context.Context) error {
	s.closeOnce.Do(func() { close(s.closing) })
	s.mu.Lock()
	s.shutdown.Store(true)
	done := make(chan struct{})
	if s.running.Load() == 0 {
		close(done)
	} else {
		s.idle = done
	}
	s.mu.Unlock()
	err := s.stopHandlers(ctx, done)
	for _, sess := range s.takeSessions() {
		sess.end()
	}
	s.awaitHijacked(ctx) // their sessions ended: they end too
	s.stopCluster()
	s.logs.flush(context.Background(), s.log)
	return err
}

// stopHandlers waits until done (the last handler returned) or ctx ends, then cancels what
// still runs; cancelled handlers return promptly, and it waits for them within a short bound,
// so that none outlives Shutdown, and before the streams close, so that their clients get the
// error that says why. It returns ctx's error when ctx ended first.
func (s *Server) stopHandlers(ctx context.Context, done chan struct{}) error {
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	s.baseCancel()
	s.workers.Stop()
	if err != nil {
		s.awaitCancelled(done)
	}
	return err
}

// defaultStopGrace is Server.stopGrace.
const defaultStopGrace = 5 * time.Second

// awaitCancelled waits, within a short bound, for the handlers Shutdown cancelled to return
// (done), and logs those that ignore their context.
func (s *Server) awaitCancelled(done chan struct{}) {
	t := time.NewTimer(s.stopGrace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		s.log.Error("mcp: handlers still running after shutdown; they ignore their context")
	}
}

// takeSessions empties the session table, returning what it held.
func (s *Server) takeSessions() []*session {
	s.mu.Lock()
	defer s.mu.Unlock()
	all := make([]*session, 0, len(s.sessions))
	for id, sess := range s.sessions {
		all = append(all, sess)
		delete(s.sessions, id)
	}
	return all
}

// broadcast sends a notification to every session's standalone stream, and to the
// subscriptions/listen streams that asked for it.
func (s *Server) broadcast(method string, params any) {
	if s.cluster != nil {
		// Every replica, this one included, delivers it to the GET streams it holds.
		m := &busMessage{Kind: busBroadcast, Method: method}
		if params != nil {
			if b, err := json.Marshal(params); err == nil {
				m.Data = b
			}
		}
		if s.publish("", m) {
			return
		}
		s.broadcastLocal(method, params, true) // the bus is down: this replica's at least
		return
	}
	s.broadcastLocal(method, params, false)
}

// handlePing answers ping (spec 2025-11-25, Utilities, Ping) with an empty result.
func (s *Server) handlePing(context.Context, *requestState, json.RawMessage) (any, error) {
	return json.RawMessage("{}"), nil
}
