package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/protomcp/protomcp/internal/jsonscan"
)

// This file serves the modern (stateless, 2026-07-28) era on the same endpoint as the session
// era. A modern request is served through the same method handlers, routes, interceptors and
// response streams as a session's, with a transient session built from the request's _meta:
// it is never stored in the session table, and it ends with the request.

// modernState is the Server's state for the modern era: its subscriptions/listen streams and
// the key that protects requestState.
type modernState struct {
	mu        sync.Mutex
	listeners map[*listener]struct{}

	keyOnce sync.Once
	key     []byte

	paramHeaders sync.Map // *toolEntry -> []paramHeader: the tool's x-mcp-header annotations
}

// toolParamHeaders returns a tool's x-mcp-header annotations, parsed once for a tool that has
// some (the cache holds no entry for the others, whose schemas a byte search clears). A tool
// whose annotations are invalid has none to check (clients leave it out of their lists).
func (s *Server) toolParamHeaders(e *toolEntry) []paramHeader {
	if !bytes.Contains(e.tool.InputSchema, []byte(`"x-mcp-header"`)) {
		return nil
	}
	if v, ok := s.modern.paramHeaders.Load(e); ok {
		return v.([]paramHeader)
	}
	anns, err := paramHeaders(e.tool.InputSchema)
	if err != nil {
		s.log.Warn("mcp: a tool's x-mcp-header annotations are invalid; its headers are not checked", "tool", e.tool.Name, "error", err)
	}
	s.modern.paramHeaders.Store(e, anns)
	return anns
}

// DiscoverResult is the result of server/discover (spec 2026-07-28, Discovery).
type DiscoverResult struct {
	// SupportedVersions lists the protocol versions the server speaks, newest first.
	SupportedVersions []string           `json:"supportedVersions"`
	Capabilities      ServerCapabilities `json:"capabilities"`
	Instructions      string             `json:"instructions,omitempty"`
	// TTLMs and CacheScope are the result's caching hints (spec 2026-07-28, Caching).
	TTLMs      int64                      `json:"ttlMs"`
	CacheScope string                     `json:"cacheScope"`
	Meta       map[string]json.RawMessage `json:"_meta,omitempty"`
}

// isModernRequest reports whether a POSTed message is to be served by the modern era: it
// carries _meta's protocolVersion, or an MCP-Protocol-Version header naming a version that is
// not a session-era one and no session, or it is server/discover (spec 2026-07-28,
// Versioning: a dual-era server selects its behavior from how the client opens).
func (s *Server) isModernRequest(r *http.Request, msg *wireMessage) bool {
	switch s.cfg.era {
	case EraModern:
		return true
	case EraLegacy:
		return false
	}
	return opensModern(r, msg)
}

// opensModern decides, for a server of both eras, whether a POSTed message is of the modern
// era: server/discover, a request whose _meta names its protocolVersion, or one with a
// version header the session era does not know and no session.
func opensModern(r *http.Request, msg *wireMessage) bool {
	if msg.Method == methodInitialize {
		// initialize opens a session-era connection, unless it names a modern version in
		// _meta: then it is a modern request for a method the revision removed (spec
		// 2026-07-28, Streamable HTTP: 404 and -32601).
		return hasMetaVersion(msg.Params)
	}
	if msg.Method == methodDiscover {
		return true
	}
	// The headers first: a modern client sends its version in MCP-Protocol-Version (spec
	// 2026-07-28, Streamable HTTP, Standard Request Headers), which decides without a scan
	// of the params.
	if v := headerValue(r.Header, headerProtocolVersion); v != "" && !isSupportedVersion(v) && headerValue(r.Header, headerSessionID) == "" {
		return true
	}
	return hasMetaVersion(msg.Params)
}

// serveModernOther answers GET and DELETE for modern clients: 405, as the session era's
// standalone stream and session end do not exist (spec 2026-07-28, Streamable HTTP, Earlier
// Streamable HTTP Revisions). It reports whether it answered.
func (s *Server) serveModernOther(w http.ResponseWriter, r *http.Request) bool {
	v := headerValue(r.Header, headerProtocolVersion)
	if s.cfg.era != EraModern && !(s.cfg.era == EraAuto && isModernVersion(v)) {
		return false
	}
	w.Header().Set("Allow", "POST")
	s.httpError(w, http.StatusMethodNotAllowed, CodeInvalidRequest, r.Method+" is not part of MCP "+ProtocolVersion20260728+": there are no sessions and no standalone stream; POST every request, and use subscriptions/listen for change notifications")
	return true
}

// modernRequest is what the runtime reads from a modern request's params before serving it,
// and what serving it makes, in one allocation of at most maxModernRequestSize bytes.
type modernRequest struct {
	inputResponses map[string]json.RawMessage
	requestState   *string
	// A tools/call's arguments, when its params were scanned (toolCall): routeCallTool
	// takes its name and arguments from here rather than read the params again.
	args     json.RawMessage
	toolCall bool

	// Its transient session, built as the request is checked (newModernRequest; the
	// protocol version, decodeClientMeta the client's capabilities and info, checkModern
	// the log level): the session-like state of one request, in no session table.
	sess session
	// Its state and its multi round-trip state (newMRTR). checkModern leaves the request's
	// decoded _meta in rs.meta, with rs.metaTaken, for serveModernRequest to keep, and what
	// the request names in mrtr.name (name).
	rs   requestState
	mrtr mrtrState
}

// name is params.name, or params.uri of a resources/read: what Mcp-Name mirrors.
func (mr *modernRequest) name() string { return mr.mrtr.name }

// maxModernRequestSize is the most modernRequest can hold (a test holds it there) for its
// allocation to stay in the 1152-byte size class, with the 8-byte header the Go runtime
// gives an object of pointers over 512 bytes: past it, every modern request costs 128 more.
const maxModernRequestSize = 1152 - 8

// modernError is a refusal of a modern request before any handler runs.
type modernError struct {
	status int
	err    *Error
}

func headerMismatch(format string, args ...any) *modernError {
	return &modernError{http.StatusBadRequest, Errorf(CodeHeaderMismatch, "header mismatch: "+format, args...)}
}

func invalidMeta(format string, args ...any) *modernError {
	return &modernError{http.StatusBadRequest, Errorf(CodeInvalidParams, format, args...)}
}

// unsupportedVersion is the UnsupportedProtocolVersionError for requested.
func (s *Server) unsupportedVersion(requested string) *modernError {
	data, _ := json.Marshal(map[string]any{"supported": s.supportedVersions(), "requested": requested})
	return &modernError{http.StatusBadRequest, &Error{
		Code:    CodeUnsupportedProtocolVersion,
		Message: "unsupported protocol version " + quoteOrNone(requested) + "; supported: " + strings.Join(s.supportedVersions(), ", "),
		Data:    data,
	}}
}

// supportedVersions lists the versions the server speaks, newest first.
func (s *Server) supportedVersions() []string {
	out := append([]string(nil), modernVersions...)
	if s.cfg.era != EraModern {
		out = append(out, supportedVersions...)
	}
	return out
}

// checkModern validates a modern request's metadata: the request's _meta and the headers that
// mirror it (spec 2026-07-28, Streamable HTTP, Request Metadata and Server Validation).
func (s *Server) checkModern(r *http.Request, msg *wireMessage) (*modernRequest, *modernError) {
	var p modernParams
	var meta modernMeta
	if me := decodeModernParams(msg.Params, &p, &meta); me != nil {
		return nil, me
	}
	version, me := s.checkModernVersion(headerValue(r.Header, headerProtocolVersion), meta.version)
	if me != nil {
		return nil, me
	}
	if me := s.checkModernHeaders(r.Header, msg, &p); me != nil {
		return nil, me
	}
	mr := s.newModernRequest(msg.Method, &p, version)
	if m, e := meta.requestMeta(p.Meta); e == nil {
		mr.rs.meta, mr.rs.metaTaken = m, true // one that fails is left to takeMeta, which answers it
	}
	if me := s.decodeClientMeta(&meta, mr); me != nil {
		return nil, me
	}
	if raw := meta.logLevel; raw != nil {
		l, me := decodeLogLevel(raw)
		if me != nil {
			return nil, me
		}
		mr.sess.logLevel.Store(l)
	}
	return mr, nil
}

// newModernRequest starts the modern request of method from its params: it decides what the
// request names (a resources/read's uri, otherwise the name) and whether it carries a
// requestState (spec 2026-07-28, Multi Round-Trip Requests).
func (s *Server) newModernRequest(method string, p *modernParams, version string) *modernRequest {
	mr := &modernRequest{inputResponses: p.InputResponses, requestState: p.RequestState}
	if method == methodResourcesRead && p.URI != nil {
		mr.mrtr.name = *p.URI
	} else if p.Name != nil {
		mr.mrtr.name = *p.Name
	}
	if method == methodToolsCall && p.scanned && mr.name() != "" {
		mr.toolCall = true
		if string(p.Arguments) != "null" {
			mr.args = p.Arguments
		}
	}
	sess := &mr.sess
	sess.server, sess.ctx, sess.cancel = s, s.baseCtx, func() {}
	sess.protocolVersion, sess.initialized, sess.stateless = version, true, true
	return mr
}

// decodeModernParams decodes a modern request's params into p, and their _meta into meta.
func decodeModernParams(params json.RawMessage, p *modernParams, meta *modernMeta) *modernError {
	if len(params) > 0 {
		if err := p.decode(params); err != nil {
			return invalidMeta("invalid params: %v", err)
		}
	}
	if m := trimSpace(p.Meta); len(m) > 0 && string(m) != "null" {
		if m[0] != '{' || !meta.decode(m) {
			return invalidMeta("params._meta must be an object carrying %s, %s and %s", metaProtocolVersion, metaClientCaps, metaClientInfo)
		}
	}
	return nil
}

// checkModernVersion checks that the MCP-Protocol-Version header and params._meta's
// protocolVersion (raw, its JSON) agree and name a version of the modern era, and returns it.
func (s *Server) checkModernVersion(header string, raw json.RawMessage) (string, *modernError) {
	version, me := metaVersion(raw)
	if me != nil {
		return "", me
	}
	if me := s.compareVersions(header, version); me != nil {
		return "", me
	}
	if !isModernVersion(version) {
		return "", s.unsupportedVersion(version)
	}
	return version, nil
}

// metaVersion decodes params._meta's protocolVersion (raw, its JSON; "" when absent), deciding
// that one present must be a non-empty string.
func metaVersion(raw json.RawMessage) (string, *modernError) {
	if raw == nil {
		return "", nil
	}
	if string(raw) == `"`+ProtocolVersion20260728+`"` {
		return ProtocolVersion20260728, nil // the common case, without a copy
	}
	if version, isString := jsonString(raw); isString && version != "" {
		return version, nil
	}
	return "", invalidMeta("params._meta[%q] must be a non-empty string", metaProtocolVersion)
}

// compareVersions decides whether the MCP-Protocol-Version header and params._meta's
// protocolVersion (version) are both there and agree, and which error names what is missing
// or different (spec 2026-07-28, Streamable HTTP, Request Metadata).
func (s *Server) compareVersions(header, version string) *modernError {
	switch {
	case header == "" && version == "":
		return headerMismatch("missing MCP-Protocol-Version header and params._meta[%q]: every request names its protocol version in both (supported: %s)", metaProtocolVersion, strings.Join(s.supportedVersions(), ", "))
	case header == "":
		return headerMismatch("missing MCP-Protocol-Version header: it must repeat params._meta[%q] (%q)", metaProtocolVersion, truncate(version, 40))
	case version == "" && !isModernVersion(header):
		// A session-era request reaching a modern-only server, or an unknown version: say
		// which versions the server speaks.
		return s.unsupportedVersion(header)
	case version == "":
		// The header is there and names a modern version: what is missing is the request's
		// own metadata, so this is invalid params, not a header mismatch (spec 2026-07-28,
		// Streamable HTTP, Request Metadata: a request without the required _meta fields is
		// rejected with -32602).
		return invalidMeta("params._meta[%q] is required: every request names its protocol version (the MCP-Protocol-Version header %q repeats it)", metaProtocolVersion, truncate(header, 40))
	case header != version:
		return headerMismatch("MCP-Protocol-Version header value %q does not match params._meta[%q] value %q", truncate(header, 40), metaProtocolVersion, truncate(version, 40))
	}
	return nil
}

// checkModernHeaders checks the headers that mirror the body (spec 2026-07-28, Streamable
// HTTP): Mcp-Method, Mcp-Name for the methods that name something, and a tool's parameter
// headers.
func (s *Server) checkModernHeaders(h http.Header, msg *wireMessage, p *modernParams) *modernError {
	if me := checkMethodHeader(headerValue(h, headerMethod), msg.Method); me != nil {
		return me
	}
	if field, ok := namedMethod(msg.Method); ok {
		body := p.Name
		if field == "uri" {
			body = p.URI
		}
		if me := checkNameHeader(h[headerName], msg.Method, field, body); me != nil {
			return me
		}
	}
	if msg.Method == methodToolsCall {
		return s.checkToolHeaders(h, p)
	}
	return checkTaskNameHeader(h[headerName], msg) // task_methods.go
}

// checkToolHeaders checks a tools/call's Mcp-Param-* headers against the annotations of the
// tool it names; a call of no known tool has none to check (spec 2026-07-28, Streamable
// HTTP, Server Behavior for Custom Headers).
func (s *Server) checkToolHeaders(h http.Header, p *modernParams) *modernError {
	if p.Name == nil {
		return nil
	}
	e, ok := s.tools.get(*p.Name)
	if !ok {
		return nil
	}
	return checkParamHeaders(h, s.toolParamHeaders(e), p.Arguments)
}

// checkMethodHeader checks the Mcp-Method header (hm) against the body's method: it must be
// there and repeat it.
func checkMethodHeader(hm, method string) *modernError {
	switch {
	case hm == "":
		return headerMismatch("missing required Mcp-Method header: it must repeat the body's method %q", truncate(method, 100))
	case hm != method:
		return headerMismatch("Mcp-Method header value %q does not match body value %q", truncate(hm, 100), truncate(method, 100))
	}
	return nil
}

// checkNameHeader checks the Mcp-Name header (its values hv) against params.<field> (body) of
// a method that names something.
func checkNameHeader(hv []string, method, field string, body *string) *modernError {
	if len(hv) == 0 {
		return headerMismatch("missing required Mcp-Name header for %s: it must repeat params.%s", method, field)
	}
	if len(hv) > 1 {
		return headerMismatch("more than one Mcp-Name header")
	}
	name, ok := decodeHeaderValue(hv[0])
	if !ok {
		return headerMismatch("Mcp-Name header value %q is not valid =?base64?...?= encoding of UTF-8 text", truncate(hv[0], 100))
	}
	if body == nil {
		return invalidMeta("%s needs params.%s", method, field)
	}
	if name != *body {
		return headerMismatch("Mcp-Name header value %q does not match body value %q", truncate(name, 100), truncate(*body, 100))
	}
	return nil
}

// decodeClientMeta decodes the client's capabilities (required) and info from params._meta
// into mr's transient session, from the server's cache when a client sends the same text
// again.
func (s *Server) decodeClientMeta(meta *modernMeta, mr *modernRequest) *modernError {
	capsRaw := meta.caps
	if capsRaw == nil {
		return invalidMeta("params._meta[%q] is required (an empty object declares no capabilities)", metaClientCaps)
	}
	infoRaw, hasInfo := meta.info, meta.info != nil
	if c := s.clientMeta.Load(); c.holds(capsRaw, infoRaw, hasInfo) {
		// A client sends the same capabilities and info with every request: decoded once,
		// and copied, since handlers are given them (Caller.Capabilities) and other clients'
		// requests may carry the same text.
		mr.sess.clientCaps, mr.sess.clientInfo = ownCaps(c.decodedCaps), c.decodedInfo
		return nil
	}
	caps, info := &mr.sess.clientCaps, &mr.sess.clientInfo
	if !decodeObject(capsRaw, caps) {
		return invalidMeta("params._meta[%q] must be a ClientCapabilities object", metaClientCaps)
	}
	if hasInfo && !decodeObject(infoRaw, info) {
		return invalidMeta("params._meta[%q] must be an Implementation object (name, version)", metaClientInfo)
	}
	if caps.Experimental == nil {
		// (Experimental capabilities, free-form values, are decoded for each request: a
		// copy would cost as much.)
		s.clientMeta.Store(&clientMeta{caps: string(capsRaw), info: string(infoRaw), hasInfo: hasInfo, decodedCaps: ownCaps(*caps), decodedInfo: *info})
	}
	return nil
}

// decodeObject decodes raw into v, deciding that only a JSON object will do.
func decodeObject(raw json.RawMessage, v any) bool {
	b := trimSpace(raw)
	return len(b) > 0 && b[0] == '{' && json.Unmarshal(b, v) == nil
}

// decodeLogLevel decodes params._meta's logLevel (raw, its JSON).
func decodeLogLevel(raw json.RawMessage) (*LoggingLevel, *modernError) {
	ls, isString := jsonString(raw)
	if !isString {
		return nil, invalidMeta("params._meta[%q] must be a logging level", metaLogLevel)
	}
	l := LoggingLevel(ls)
	if _, known := levelRank[l]; !known {
		return nil, invalidMeta("params._meta[%q]: unknown logging level %q", metaLogLevel, truncate(string(l), 20))
	}
	return &l, nil
}

// modernMethods are the methods of the modern era served by the session era's handlers;
// server/discover and subscriptions/listen are served apart. initialize, ping,
// logging/setLevel and resources/(un)subscribe do not exist in 2026-07-28.
var modernMethods = map[string]bool{
	methodToolsList: true, methodToolsCall: true,
	methodResourcesList: true, methodResourceTemplates: true, methodResourcesRead: true,
	methodPromptsList: true, methodPromptsGet: true,
	methodComplete: true,
	methodTasksGet: true, methodTasksUpdate: true, methodTasksCancel: true,
	methodTasksResult: true, methodTasksList: true, // refused with -32601 by their handlers
}

// serveModern serves a POSTed message of the modern era.
func (s *Server) serveModern(w http.ResponseWriter, r *http.Request, msg *wireMessage) {
	if s.answerNonRequest(w, msg) {
		return
	}
	if msg.Method == methodInitialize && !hasMetaVersion(msg.Params) {
		s.refuseInitialize(w, msg)
		return
	}
	mr, me := s.checkModern(r, msg)
	if me != nil {
		s.writeJSON(w, me.status, encodeResponse(msg.ID, nil, me.err))
		return
	}
	s.routeModern(w, r, mr, msg)
}

// answerNonRequest answers a modern message that is not a request, and reports whether it
// was one: a response is refused, a notification accepted and ignored.
func (s *Server) answerNonRequest(w http.ResponseWriter, msg *wireMessage) bool {
	switch {
	case msg.isResponse():
		s.writeJSON(w, http.StatusBadRequest, encodeResponse(nil, nil, NewError(CodeInvalidRequest,
			"a client sends no JSON-RPC responses in MCP "+ProtocolVersion20260728+": answer input requests with inputResponses when retrying the original request (spec 2026-07-28, Multi Round-Trip Requests)")))
		return true
	case msg.isNotification():
		// No client notification is defined on Streamable HTTP in this revision (closing the
		// response stream cancels); accept and ignore, as the transport rules ask.
		w.WriteHeader(http.StatusAccepted)
		return true
	}
	return false
}

// refuseInitialize answers a legacy client's initialize on a modern-only server: it names the
// versions the server speaks, as legacy clients have no other way to learn them (spec
// 2026-07-28, Versioning). An initialize that names a modern version in _meta is served as
// any removed method.
func (s *Server) refuseInitialize(w http.ResponseWriter, msg *wireMessage) {
	var p InitializeParams
	_ = json.Unmarshal(msg.Params, &p)
	me := s.unsupportedVersion(p.ProtocolVersion)
	me.err.Message = "this server speaks only MCP " + strings.Join(modernVersions, ", ") + " (no initialize, no sessions): " + me.err.Message
	s.writeJSON(w, me.status, encodeResponse(msg.ID, nil, me.err))
}

// routeModern decides who serves a checked modern request: the runtime itself
// (server/discover, subscriptions/listen), the session era's handler of a method the modern
// era keeps, or nobody (method not found).
func (s *Server) routeModern(w http.ResponseWriter, r *http.Request, mr *modernRequest, msg *wireMessage) {
	switch msg.Method {
	case methodDiscover:
		s.serveDiscover(w, r, mr, msg)
		return
	case methodListen:
		s.serveListen(w, r, mr, msg)
		return
	}
	h, ok := s.methods[msg.Method]
	if !ok || !modernMethods[msg.Method] {
		s.writeJSON(w, http.StatusNotFound, encodeResponse(msg.ID, nil, Errorf(CodeMethodNotFound, "method not found: %s is not a method of MCP %s", truncate(msg.Method, 100), mr.sess.protocolVersion)))
		return
	}
	if msg.Method == methodToolsCall && !s.authorizeCall(w, r, msg) {
		return // the tool's scopes, as in the session era (auth_server.go)
	}
	s.serveModernRequest(w, r, mr, h, msg)
}

// serveDiscover answers server/discover (spec 2026-07-28, Discovery).
func (s *Server) serveDiscover(w http.ResponseWriter, r *http.Request, mr *modernRequest, msg *wireMessage) {
	resp, err := s.callDirect(r, mr, msg, func(context.Context, *Request) (*Response, error) {
		info, _ := json.Marshal(s.impl)
		return &Response{Result: &DiscoverResult{
			SupportedVersions: s.supportedVersions(),
			Capabilities:      s.discoverCapabilities(),
			Instructions:      s.cfg.instructions,
			CacheScope:        "public",
			Meta:              map[string]json.RawMessage{metaServerInfo: info},
		}}, nil
	})
	if err != nil {
		s.writeJSON(w, statusOf(err), encodeResponse(msg.ID, nil, toRPCError(err)))
		return
	}
	var b []byte
	if resp != nil {
		b, err = s.marshalResult(msg.Method, resp.Result)
	}
	if err != nil {
		s.writeJSON(w, http.StatusOK, encodeResponse(msg.ID, nil, Errorf(CodeInternalError, "could not encode result: %v", err)))
		return
	}
	s.writeJSON(w, http.StatusOK, insertResultType(encodeResponse(msg.ID, b, nil), msg.ID))
}

// callDirect runs a request that the runtime answers itself (server/discover,
// subscriptions/listen) through the server's interceptors, so that they see every request
// (authorization, say), containing their panics.
//
// The interceptors' context carries the request's Caller, as a handler's does: the client's
// info and capabilities from the request metadata, its headers, its token. The request has
// no response stream of its own, so the Caller sends nothing (Log, progress and the requests
// to the client fail with errNoStream).
func (s *Server) callDirect(r *http.Request, mr *modernRequest, msg *wireMessage, serve CallFunc) (resp *Response, err error) {
	meta, _ := requestMeta(msg.Params)
	meta = withoutRequestMetadata(meta)
	rs := &mr.rs
	*rs = requestState{sess: &mr.sess, id: msg.ID, meta: meta, metaTaken: true, header: r.Header, remote: r.RemoteAddr, token: TokenInfoFrom(r.Context())}
	rs.caller.rs = rs
	rs.req = Request{Method: msg.Method, ID: *msg.ID, Params: msg.Params, Meta: meta, Header: r.Header, ProtocolVersion: mr.sess.protocolVersion, rs: rs, serve: serve}
	defer func() {
		if p := recover(); p != nil {
			s.peerError("mcp: an interceptor panicked", "method", msg.Method, "panic", p, "stack", string(debug.Stack()))
			err = Errorf(CodeInternalError, "internal error: %s panicked", msg.Method)
		}
	}()
	return s.call(&handlerCtx{Context: r.Context(), rs: rs}, &rs.req)
}

// statusOf is the HTTP status of an error answered before a response stream: a statusError's,
// else 200 (a JSON-RPC error).
func statusOf(err error) int {
	var se *statusError
	if errors.As(err, &se) {
		return se.status
	}
	return http.StatusOK
}

// serveModernRequest runs one modern request through the session era's machinery: its
// handler runs as the session era's do (inline.go), and its stream is written the same way. Closing the response
// stream cancels the request (spec 2026-07-28, Streamable HTTP, Cancellation).
func (s *Server) serveModernRequest(w http.ResponseWriter, r *http.Request, mr *modernRequest, h methodHandler, msg *wireMessage) {
	sess := &mr.sess
	ctx, cancel := s.handlerContext(s.baseCtx, &s.deadlines)
	stop := context.AfterFunc(r.Context(), cancel)
	defer stop()
	if !sess.reserve(requestCost(msg), false) {
		// The params stay in memory while the handler runs: the server's budget bounds the
		// modern era's requests too (runHandler releases it).
		cancel()
		s.writeJSON(w, http.StatusTooManyRequests, encodeResponse(msg.ID, nil, budgetError(sess)))
		return
	}
	if !s.handlerStarted() {
		cancel()
		sess.release(requestCost(msg))
		s.httpError(w, http.StatusServiceUnavailable, CodeInternalError, "server is shutting down")
		return
	}
	var in *mrtrState
	if _, ok := namedMethod(msg.Method); ok {
		var me *modernError
		if in, me = s.newMRTR(msg, mr, mr.name(), principal(r)); me != nil {
			cancel()
			sess.release(requestCost(msg))
			s.handlerDone()
			s.writeJSON(w, me.status, encodeResponse(msg.ID, nil, me.err))
			return
		}
	}
	st := sess.newRequestStream()
	st.attach() // writer generation 1 (runInline)
	rs := &mr.rs
	meta, metaTaken := rs.meta, rs.metaTaken // checkModern's
	*rs = requestState{sess: sess, st: st, id: msg.ID, header: r.Header, remote: r.RemoteAddr, token: TokenInfoFrom(r.Context()), mrtr: in}
	if mr.toolCall {
		rs.modern = mr
	}
	rs.caller.rs = rs
	// The request's values (what HTTP middleware stored) behind the handler's own context.
	rs.ctx = handlerCtx{Context: ctx, values: requestValues(r.Context()), rs: rs}
	rs.cancel, rs.handler, rs.msg = cancel, h, msg
	if metaTaken { // the _meta checkModern found: takeMeta need not look for it again
		rs.meta, rs.metaTaken = meta, true
		if meta != nil {
			rs.progressToken = meta.ProgressToken
		}
	}
	mode := modeAuto
	if s.cfg.alwaysSSE {
		mode = modeSSE
	}
	s.runInline(r, w, rs, mode)
	if r.Context().Err() != nil {
		// The client closed the stream. The AfterFunc above may not have run yet (a context's
		// Done closes before its AfterFuncs are started), and the deferred stop would then
		// keep it from running: cancel here.
		cancel()
	}
}

// modernAnswer turns a handler's answer into the modern era's: an InputRequiredResult when
// the handler asked for input it has not got yet, -32602 for an unknown resource (spec
// 2026-07-28, changelog), and the HTTP status of the answer when it is not 200.
func (s *Server) modernAnswer(rs *requestState, result any, err error) (any, int, error) {
	if rs.mrtr != nil {
		if ir := rs.mrtr.inputRequired(); ir != nil {
			return ir, 0, nil
		}
	}
	if err == nil {
		return result, 0, nil
	}
	var e *Error
	if !errors.As(err, &e) {
		return result, 0, err
	}
	switch e.Code {
	case CodeResourceNotFound:
		return nil, 0, &Error{Code: CodeInvalidParams, Message: e.Message, Data: e.Data}
	case CodeMissingClientCapability:
		return nil, http.StatusBadRequest, e
	}
	return result, 0, err
}

// modernBody adds resultType (and, for cacheable results, the caching hints) to a response.
func modernBody(method string, body []byte, id *ID) []byte {
	switch method {
	case methodToolsList, methodPromptsList, methodResourcesList, methodResourceTemplates:
		// A list's handler put its hint first (withListHint, from WithListCacheHint and the
		// registrations').
		if n, ok := resultStart(body, id); ok && bytes.HasPrefix(body[n:], []byte(`"ttlMs":`)) {
			return insertResultMembers(body, id, `"resultType":"complete"`)
		}
	}
	return insertResultMembers(body, id, modernMembers(method))
}

// modernMembers are the members the 2026-07-28 era adds at the start of a result of method.
func modernMembers(method string) string {
	switch method {
	case methodToolsList, methodPromptsList, methodResourcesList, methodResourceTemplates, methodResourcesRead:
		// Cacheable results (spec 2026-07-28, Caching): unless a list's handler put its own
		// hint first (modernBody), immediately stale, and private, as handlers may answer per
		// caller.
		return `"resultType":"complete","ttlMs":0,"cacheScope":"private"`
	}
	return `"resultType":"complete"`
}

// modernParams are the members of a modern request's params that the runtime reads before
// serving it.
type modernParams struct {
	Meta           json.RawMessage            `json:"_meta"`
	Name           *string                    `json:"name"`
	URI            *string                    `json:"uri"`
	InputResponses map[string]json.RawMessage `json:"inputResponses"`
	RequestState   *string                    `json:"requestState"`
	Arguments      json.RawMessage            `json:"arguments"`
	// scanned says the members above were read by scan, as scanCallToolParams reads them,
	// not by encoding/json.
	scanned bool
}

// decode reads params as json.Unmarshal into p would; the common shapes are scanned without
// encoding/json's reflection.
func (p *modernParams) decode(params []byte) error {
	if p.scan(params) {
		p.scanned = true
		return nil
	}
	q := new(modernParams) // not p: encoding/json would put every request's p on the heap
	err := json.Unmarshal(params, q)
	*p = *q
	return err
}

// scan reads params for decode, and reports false for what it leaves to encoding/json: a
// member named as one of p's only without regard to case (encoding/json matches it), a value
// of the wrong type (encoding/json says what is wrong), inputResponses, escaped keys.
func (p *modernParams) scan(params []byte) bool {
	ok := true
	if !jsonscan.Members(params, func(k, v []byte) bool {
		ok = p.member(k, v) && ok
		return true
	}) {
		return false
	}
	return ok
}

// member takes one member of the params (key k, value v), and reports whether the scan can
// stand: false when a string member is not a string or null, or when k differs only in case
// from a member the runtime reads (which json.Unmarshal would match).
func (p *modernParams) member(k, v []byte) bool {
	switch string(k) {
	case "_meta":
		p.Meta = v
	case "arguments":
		p.Arguments = v
	case "name":
		return optionalString(v, &p.Name)
	case "uri":
		return optionalString(v, &p.URI)
	case "requestState":
		return optionalString(v, &p.RequestState)
	default:
		return !foldsToParam(k)
	}
	return true
}

// foldsToParam reports whether k matches, ignoring ASCII case, a member of the params the
// runtime reads.
func foldsToParam(k []byte) bool {
	for _, n := range [...]string{"_meta", "arguments", "name", "uri", "requestState", "inputResponses"} {
		if equalFoldASCII(k, n) {
			return true
		}
	}
	return false
}

// modernMeta are the members of a modern request's _meta that the runtime reads, as views of
// the params.
type modernMeta struct {
	version, caps, info, logLevel json.RawMessage
	// all holds every other member, as decodeRequestMeta's rawMembers would, read in the same
	// pass (allOK), so that the RequestMeta handlers see needs no pass of its own.
	all   map[string]json.RawMessage
	allOK bool
}

// decode reads a _meta object, as json.Unmarshal into a map would (the last of duplicate keys
// wins); it reports false when m is not an object.
func (mm *modernMeta) decode(m []byte) bool {
	mm.allOK = true
	take := func(k, v []byte) bool {
		switch string(k) {
		case metaProtocolVersion:
			mm.version = v
			return true
		case metaClientCaps:
			mm.caps = v
			return true
		case metaClientInfo:
			mm.info = v
			return true
		case metaLogLevel:
			mm.logLevel = v
			return true
		}
		if mm.allOK {
			mm.allOK = mm.keep(k, v)
		}
		return true
	}
	if jsonscan.Members(m, take) {
		return true
	}
	*mm = modernMeta{}
	var all map[string]json.RawMessage
	if json.Unmarshal(m, &all) != nil {
		return false
	}
	for k, v := range all {
		take([]byte(k), v)
	}
	mm.all, mm.allOK = nil, false // requestMeta reads m again, as encoding/json does
	return true
}

// keep adds the member k: v to mm.all, as rawMembers would, and reports false for a key that
// is not valid UTF-8.
func (mm *modernMeta) keep(k, v []byte) bool {
	if mm.all == nil {
		mm.all = make(map[string]json.RawMessage, 4)
	}
	return putMember(mm.all, k, v)
}

// requestMeta returns the RequestMeta of raw, the _meta that mm was decoded from, as
// requestMetaOf does without the request metadata (withoutRequestMetadata), from the members
// decode kept when it could.
func (mm *modernMeta) requestMeta(raw json.RawMessage) (*RequestMeta, *Error) {
	if !mm.allOK || len(raw) > maxMetaBytes {
		m, e := requestMetaOf(raw)
		return withoutRequestMetadata(m), e
	}
	all := mm.all
	if all == nil {
		return nil, nil // the request metadata alone: as a session's request without _meta
	}
	mm.all = nil // the RequestMeta's now
	m := &RequestMeta{}
	if t, ok := all["progressToken"]; ok {
		m.ProgressToken = t
		delete(all, "progressToken")
	}
	if len(all) > 0 {
		m.Other = all
	}
	if e := checkProgressToken(m.ProgressToken); e != nil {
		return nil, e
	}
	return m, nil
}

// requestMetadataKeys are the members of a modern request's _meta that the runtime reads
// itself (spec 2026-07-28, Streamable HTTP, Request Metadata), and reports through Caller:
// ProtocolVersion, Capabilities, Info, and the level of the request's log messages.
var requestMetadataKeys = [...]string{metaProtocolVersion, metaClientCaps, metaClientInfo, metaLogLevel}

// withoutRequestMetadata removes the request metadata from m, the _meta of a modern request,
// so that handlers and interceptors see what they would in the session era, where these
// members are not in _meta, and what a client's interceptors see (Client adds them after
// its interceptors ran). It returns nil when nothing else is left, as for a request without
// _meta.
func withoutRequestMetadata(m *RequestMeta) *RequestMeta {
	if m == nil {
		return nil
	}
	for _, k := range requestMetadataKeys {
		delete(m.Other, k)
	}
	if len(m.Other) == 0 {
		m.Other = nil
		if len(m.ProgressToken) == 0 {
			return nil
		}
	}
	return m
}

// optionalString decodes v as json.Unmarshal into a *string would: nil for null; it reports
// false for any other kind of value.
func optionalString(v []byte, dst **string) bool {
	if string(v) == "null" {
		*dst = nil
		return true
	}
	s, isString := jsonString(v)
	*dst = &s
	return isString
}

// clientMeta is the last client capabilities and info a modern request carried, as text and
// decoded.
type clientMeta struct {
	caps, info  string
	hasInfo     bool
	decodedCaps ClientCapabilities
	decodedInfo Implementation
}

// holds reports whether c (nil when nothing is cached) was decoded from the same capabilities
// and info text, the info present or not alike.
func (c *clientMeta) holds(caps, info json.RawMessage, hasInfo bool) bool {
	return c != nil && c.caps == string(caps) && c.info == string(info) && c.hasInfo == hasInfo
}

// ownCaps returns caps with its own copies of what its pointers and maps hold, so that a
// handler that changes the capabilities it is given (Caller.Capabilities) changes nothing
// another request sees, and races with nothing: the server reads the extensions of every
// request's own (clientDeclaresTasks). Experimental is shared: clientMeta keeps none. A
// *Supported, which holds nothing, is shared.
func ownCaps(caps ClientCapabilities) ClientCapabilities {
	if caps.Roots != nil {
		r := *caps.Roots
		caps.Roots = &r
	}
	if caps.Sampling != nil {
		s := *caps.Sampling
		caps.Sampling = &s
	}
	if caps.Elicitation != nil {
		e := *caps.Elicitation
		caps.Elicitation = &e
	}
	if caps.Tasks != nil {
		caps.Tasks = ownTasksCaps(*caps.Tasks)
	}
	if caps.Extensions != nil {
		ext := make(map[string]json.RawMessage, len(caps.Extensions))
		for k, v := range caps.Extensions {
			ext[k] = bytes.Clone(v)
		}
		caps.Extensions = ext
	}
	return caps
}

// ownTasksCaps is ownCaps for the task capabilities t.
func ownTasksCaps(t TasksCapability) *TasksCapability {
	if r := t.Requests; r != nil {
		own := *r
		if own.Tools != nil {
			c := *own.Tools
			own.Tools = &c
		}
		if own.Sampling != nil {
			c := *own.Sampling
			own.Sampling = &c
		}
		if own.Elicitation != nil {
			c := *own.Elicitation
			own.Elicitation = &c
		}
		t.Requests = &own
	}
	return &t
}
