package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// The client's side of the two eras: it probes with server/discover and speaks 2026-07-28
// when the server does, else falls back to initialize (spec 2026-07-28, Streamable HTTP,
// Backward Compatibility).

// maxInputRounds bounds the retries of one request answered with InputRequiredResult.
const maxInputRounds = 16

// open establishes what the client needs before its first call: a modern session-less state
// from server/discover, or a session from initialize, as the client's era allows.
func (c *Client) open(ctx context.Context) (*clientSession, error) {
	era := c.effectiveEra()
	if era == EraLegacy {
		return c.initialize(ctx)
	}
	st, err := c.probe(ctx, era)
	if st != nil || err != nil {
		return st, err
	}
	return c.initialize(ctx)
}

// effectiveEra is the era the client's options allow: WithEra's, unless the client was left
// to choose (EraAuto) and WithProtocolVersion pinned a version, whose era then decides.
func (c *Client) effectiveEra() Era {
	era := c.cfg.era
	if era != EraAuto || !c.cfg.versionPinned {
		return era
	}
	if isModernVersion(c.cfg.protocolVersion) {
		return EraModern
	}
	return EraLegacy
}

// probe sends server/discover, in the modern version the client prefers and then, once, in
// one the server lists. It returns the modern state when the server speaks a modern version
// of the client's; nil and no error when the client is to fall back to initialize (era
// EraAuto and a server of the session era, or of modern versions the client does not speak);
// an error when it is not to.
func (c *Client) probe(ctx context.Context, era Era) (*clientSession, error) {
	version := ProtocolVersion20260728
	if isModernVersion(c.cfg.protocolVersion) {
		version = c.cfg.protocolVersion
	}
	for attempt := range 2 {
		st, supported, err := c.discover(ctx, version)
		if err == nil {
			return st, nil
		}
		if supported == nil {
			return nil, c.discoverFailed(era, err)
		}
		// A refusal that lists the version just sent (a replica that did not speak it yet,
		// say) is retried once with it: the client retries with a version the server says
		// it supports (spec 2026-07-28, Versioning).
		next := firstModern(supported)
		if next == "" || (next == version && attempt > 0) {
			return nil, noCommonVersion(era, supported, err)
		}
		version = next
	}
	return nil, nil
}

// discoverFailed decides what a server/discover that failed without listing versions means:
// an error for a client pinned to the modern era or a failure that says nothing of the era,
// and otherwise nil, a fall back to initialize.
func (c *Client) discoverFailed(era Era, err error) error {
	if era == EraModern || !fallsBack(err) {
		return fmt.Errorf("mcp server/discover: %w", err)
	}
	c.cfg.logger.Debug("mcp: server/discover failed; falling back to initialize", "error", err)
	return nil
}

// noCommonVersion decides what a server listing no modern version the client speaks (supported)
// means: an error for a client pinned to the modern era, and otherwise nil, a fall back to
// initialize.
func noCommonVersion(era Era, supported []string, err error) error {
	if era == EraModern {
		return fmt.Errorf("mcp server/discover: the server speaks %s, none of which is a modern version this client speaks (%s): %w", strings.Join(supported, ", "), strings.Join(modernVersions, ", "), err)
	}
	return nil
}

// firstModern is the first of versions that is a modern version this client speaks, or "".
func firstModern(versions []string) string {
	for _, v := range versions {
		if isModernVersion(v) {
			return v
		}
	}
	return ""
}

// fallsBack reports whether a failed server/discover means a legacy server: anything but a
// recognised modern JSON-RPC error (spec 2026-07-28, Versioning, Backward Compatibility with
// Initialization-Based Versions): an HTTP error, a JSON-RPC error of the session era, an
// answer that is not a DiscoverResult. Refusals that say nothing of the era are returned as
// they are: 401 and 403 (authorization, which initialize would meet again), 429 and 5xx. A
// server that cannot be reached at all fails initialize the same way, which reports it.
func fallsBack(err error) bool {
	if _, modern := modernErrorCode(err); modern {
		return false
	}
	var he *HTTPError
	if errors.As(err, &he) {
		switch {
		case he.StatusCode == http.StatusUnauthorized, he.StatusCode == http.StatusForbidden,
			he.StatusCode == http.StatusTooManyRequests, he.StatusCode >= 500:
			return false
		}
	}
	return true
}

// modernErrorCode reports whether err carries one of the modern era's error codes.
func modernErrorCode(err error) (Code, bool) {
	var e *Error
	if !errors.As(err, &e) {
		return 0, false
	}
	switch e.Code {
	case CodeHeaderMismatch, CodeMissingClientCapability, CodeUnsupportedProtocolVersion:
		return e.Code, true
	}
	return e.Code, false
}

// discover sends server/discover for version. On an UnsupportedProtocolVersionError it
// returns the versions the server listed.
func (c *Client) discover(ctx context.Context, version string) (*clientSession, []string, error) {
	pre := c.modernSession(version)
	req := &Request{Method: methodDiscover, IsClient: true, initSession: pre}
	resp, err := c.send(ctx, req)
	if err != nil {
		return nil, listedVersions(err), err
	}
	var res DiscoverResult
	if err := json.Unmarshal(rawResult(resp), &res); err != nil {
		return nil, nil, fmt.Errorf("decode result: %w", err)
	}
	if supported, err := checkDiscovered(&res, version); err != nil {
		return nil, supported, err
	}
	pre.capabilities, pre.instructions = res.Capabilities, res.Instructions
	if raw, ok := res.Meta[metaServerInfo]; ok {
		_ = json.Unmarshal(raw, &pre.serverInfo)
	}
	return pre, nil, nil
}

// listedVersions returns the versions an UnsupportedProtocolVersionError lists in its data
// (spec 2026-07-28, Versioning), or nil when err is not one or lists none.
func listedVersions(err error) []string {
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeUnsupportedProtocolVersion {
		return nil
	}
	var data struct {
		Supported []string `json:"supported"`
	}
	if json.Unmarshal(e.Data, &data) != nil || len(data.Supported) == 0 {
		return nil
	}
	return data.Supported
}

// checkDiscovered decides whether a DiscoverResult is one, and one that includes version; when
// it does not include it, it returns the versions it does.
func checkDiscovered(res *DiscoverResult, version string) ([]string, error) {
	if len(res.SupportedVersions) == 0 {
		// Not a DiscoverResult: a server that answers any method alike. Not modern.
		return nil, NewError(CodeInvalidRequest, "server/discover was answered without supportedVersions")
	}
	if !containsString(res.SupportedVersions, version) {
		err := Errorf(CodeUnsupportedProtocolVersion, "the server's supportedVersions (%s) do not include %s", strings.Join(res.SupportedVersions, ", "), version)
		return res.SupportedVersions, err
	}
	return nil, nil
}

// containsString reports whether list holds s.
func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// modernSession returns the client's state for a modern server speaking version: no session
// ID, and the _meta every request carries, encoded once.
func (c *Client) modernSession(version string) *clientSession {
	st := &clientSession{modern: true, version: version, versionHeader: []string{version}}
	v, _ := json.Marshal(version)
	info, _ := json.Marshal(c.cfg.info)
	caps, _ := json.Marshal(c.modernCapabilities(false))
	st.tasksCaps, _ = json.Marshal(c.modernCapabilities(true)) // for task requests (client_task.go)
	st.meta = map[string]json.RawMessage{metaProtocolVersion: v, metaClientInfo: info, metaClientCaps: caps}
	if c.cfg.onLog != nil || c.cfg.onNotification != nil {
		// The session era's default: info and above, for a client that reads log messages
		// (the modern era sends none unless _meta asks).
		l := LevelInfo
		st.logLevel.Store(&l)
	}
	return st
}

// modernMeta returns meta with the request metadata of the modern era added (spec
// 2026-07-28, Streamable HTTP, Request Metadata), leaving meta itself as it is.
func (st *clientSession) modernMeta(meta *RequestMeta) *RequestMeta {
	out := &RequestMeta{Other: make(map[string]json.RawMessage, len(st.meta)+2)}
	if meta != nil {
		out.ProgressToken = meta.ProgressToken
		for k, v := range meta.Other {
			out.Other[k] = v
		}
	}
	for k, v := range st.meta {
		if _, set := out.Other[k]; !set {
			out.Other[k] = v
		}
	}
	if l := st.logLevel.Load(); l != nil {
		if _, set := out.Other[metaLogLevel]; !set {
			out.Other[metaLogLevel], _ = json.Marshal(*l)
		}
	}
	return out
}

// modernMetaJSON returns modernMeta(nil) encoded: the same for every request without _meta of
// its own until SetLogLevel changes the level, so it is encoded once per level rather than
// once per request.
func (st *clientSession) modernMetaJSON() ([]byte, error) {
	l := st.logLevel.Load()
	if em := st.metaJSON.Load(); em != nil && em.level == l {
		return em.json, nil
	}
	b, err := json.Marshal(st.modernMeta(nil))
	if err != nil {
		return nil, err
	}
	st.metaJSON.Store(&encodedMeta{level: l, json: b})
	return b, nil
}

// setModernHeaders sets the headers that mirror a modern request's body (spec 2026-07-28,
// Streamable HTTP, Standard Request Headers).
func setModernHeaders(req *http.Request, method, name string) {
	req.Header[headerMethod] = []string{method}
	if _, ok := namedMethod(method); ok || isTaskMethod(method) {
		req.Header[headerName] = []string{encodeHeaderValue(name)}
	}
}

// inputRequired reports whether a result is an InputRequiredResult.
func inputRequired(raw json.RawMessage) bool {
	if !bytes.Contains(raw, []byte(`"`+resultTypeInputRequired+`"`)) {
		return false
	}
	var r struct {
		ResultType string `json:"resultType"`
	}
	return json.Unmarshal(raw, &r) == nil && r.ResultType == resultTypeInputRequired
}

// fulfil answers an InputRequiredResult: it runs the client's sampling, elicitation and roots
// handlers for its input requests, and retries the request with their answers and the
// requestState (spec 2026-07-28, Multi Round-Trip Requests, Client Requirements), until the
// server answers otherwise or maxInputRounds is reached.
func (c *Client) fulfil(ctx context.Context, st *clientSession, r *Request, co *callOptions, raw json.RawMessage) (json.RawMessage, error) {
	orig := r.Params
	defer func() { r.Params = orig }()
	for round := 0; inputRequired(raw); round++ {
		if round >= maxInputRounds {
			return nil, fmt.Errorf("the server asked for input %d times in a row; giving up", maxInputRounds)
		}
		var ir receivedInputRequests
		if err := json.Unmarshal(raw, &ir); err != nil {
			return nil, fmt.Errorf("decode InputRequiredResult: %w", err)
		}
		answers, err := c.answerInputs(ctx, ir.InputRequests)
		if err != nil {
			return nil, err
		}
		params, err := withInputResponses(orig, answers, ir.RequestState)
		if err != nil {
			return nil, err
		}
		r.Params = params
		raw, _, err = c.roundTrip(ctx, st, r, co)
		if err != nil {
			return nil, err
		}
	}
	return raw, nil
}

// receivedInputRequests is what the client reads of an InputRequiredResult.
type receivedInputRequests struct {
	InputRequests map[string]receivedInputRequest `json:"inputRequests"`
	RequestState  *string                         `json:"requestState"`
}

// receivedInputRequest is one of an InputRequiredResult's inputRequests, as the client reads it.
type receivedInputRequest struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// answerInputs runs the client's handlers for each input request, and returns their results
// by key for inputResponses; the first that fails fails the request.
func (c *Client) answerInputs(ctx context.Context, inputs map[string]receivedInputRequest) (map[string]json.RawMessage, error) {
	answers := make(map[string]json.RawMessage, len(inputs))
	for key, in := range inputs {
		res, err := c.handleServerRequest(ctx, &wireMessage{Method: in.Method, Params: in.Params})
		if err != nil {
			return nil, fmt.Errorf("input request %q (%s): %w", key, in.Method, err)
		}
		b, err := json.Marshal(res)
		if err != nil {
			return nil, fmt.Errorf("input request %q (%s): encode result: %w", key, in.Method, err)
		}
		answers[key] = b
	}
	return answers, nil
}

// withInputResponses returns params with inputResponses and requestState set (requestState
// only when the server sent one).
func withInputResponses(params json.RawMessage, answers map[string]json.RawMessage, state *string) (json.RawMessage, error) {
	all := map[string]json.RawMessage{}
	if p := bytes.TrimSpace(params); len(p) > 0 && string(p) != "null" {
		if err := json.Unmarshal(p, &all); err != nil {
			return nil, fmt.Errorf("params must be a JSON object: %w", err)
		}
	}
	delete(all, "requestState")
	ab, err := json.Marshal(answers)
	if err != nil {
		return nil, err
	}
	all["inputResponses"] = ab
	if state != nil {
		sb, _ := json.Marshal(*state)
		all["requestState"] = sb
	}
	return json.Marshal(all)
}

// listenModern is the modern era's standalone stream (WithStandaloneStream): it keeps a
// subscriptions/listen request open for the list changes of every feature the server has,
// dispatching what arrives to the notification handler, and opens it again after it ends,
// until the client closes or the server refuses it (spec 2026-07-28, Subscriptions). It
// closes ready once the first request has been answered (or has failed).
func (c *Client) listenModern(st *clientSession, ready chan struct{}) {
	defer c.bg.Done()
	var readyOnce sync.Once
	signal := func() { readyOnce.Do(func() { close(ready) }) }
	defer signal()
	ctx := c.listenCtx
	filter := SubscriptionFilter{
		ToolsListChanged:     st.capabilities.Tools != nil,
		PromptsListChanged:   st.capabilities.Prompts != nil,
		ResourcesListChanged: st.capabilities.Resources != nil,
	}
	cur := &streamCursor{retry: time.Second}
	disp := &dispatcher{}
	defer disp.logs.flush(context.Background(), c.cfg.logger)
	failures := 0
	for ctx.Err() == nil {
		id := IntID(c.nextID.Add(1))
		req, err := c.listenRequest(ctx, st, &id, filter)
		if err != nil {
			return
		}
		resp, err := c.hc.Do(req)
		signal()
		if err == nil && resp.StatusCode != http.StatusOK {
			herr := readHTTPError(resp)
			resp.Body.Close()
			c.cfg.logger.Debug("mcp: the server refused subscriptions/listen", "error", herr)
			return
		}
		if err == nil {
			failures = 0
			_, _, _ = c.consume(ctx, st, &id, resp.Body, nil, cur, disp, nil)
		} else {
			failures++
			if failures > c.cfg.maxResumes {
				c.cfg.logger.Warn("mcp: giving up on subscriptions/listen", "error", err)
				return
			}
		}
		if !sleep(ctx, cur.retry) {
			return
		}
	}
}

// listenRequest builds one subscriptions/listen request (ID id) for the list changes of filter,
// with the modern era's metadata and headers (spec 2026-07-28, Subscriptions).
func (c *Client) listenRequest(ctx context.Context, st *clientSession, id *ID, filter SubscriptionFilter) (*http.Request, error) {
	params, err := withMeta(mustJSON(map[string]any{"notifications": filter}), st.modernMeta(nil))
	if err != nil {
		return nil, err
	}
	body, err := encodeRequest(id, methodListen, params)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	c.setHeaders(req, st)
	setPostHeaders(req)
	setModernHeaders(req, methodListen, "")
	return req, nil
}

// mustJSON encodes v, which cannot fail to encode.
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// recordToolHeaders keeps, for a modern server, the x-mcp-header annotations of the tools a
// tools/list returned, so that calls mirror those parameters into Mcp-Param-* headers; a tool
// whose annotations are invalid is left out of the result, with a warning (spec 2026-07-28,
// Streamable HTTP, Schema Extension).
func (c *Client) recordToolHeaders(res *ListToolsResult) {
	c.mu.Lock()
	st := c.state
	c.mu.Unlock()
	if st == nil || !st.modern {
		return
	}
	kept := res.Tools[:0]
	for _, t := range res.Tools {
		anns, err := paramHeaders(t.InputSchema)
		if err != nil {
			c.peerWarn("mcp: leaving out a tool whose x-mcp-header annotations are invalid", "tool", t.Name, "error", err)
			continue
		}
		if len(anns) > 0 {
			st.toolHeaders.Store(t.Name, anns)
		} else {
			st.toolHeaders.Delete(t.Name)
		}
		kept = append(kept, t)
	}
	res.Tools = kept
}

// retryForParamHeaders reports whether a failed call is to be sent again: a tools/call that a
// modern server refused with HeaderMismatch, after listing the tools to learn the headers
// their parameters need (spec 2026-07-28, Streamable HTTP, Client Behavior).
func (c *Client) retryForParamHeaders(ctx context.Context, st *clientSession, method string, err error) bool {
	if !st.modern || method != methodToolsCall || CodeOf(err) != CodeHeaderMismatch || !strings.Contains(err.Error(), headerParamPrefix) {
		return false
	}
	for _, lerr := range c.Tools(ctx) {
		if lerr != nil {
			return false
		}
	}
	return true
}
