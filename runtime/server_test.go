package runtime

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The tests in this file drive the real server over loopback HTTP. Rules about the wire are
// checked with raw net/http requests; every wait is bounded by a context.

// testServer is a Server behind an httptest.Server, with an HTTP client of its own.
type testServer struct {
	srv *Server
	hs  *httptest.Server
	url string
	tr  *http.Transport
	hc  *http.Client
}

// newTestServer starts a server with an "echo" tool. Cleanup shuts the server down, closes
// every connection and waits for the handlers, so that goleak finds nothing left.
func newTestServer(t *testing.T, opts ...ServerOption) *testServer {
	t.Helper()
	opts = append([]ServerOption{WithLogger(discardLogger())}, opts...)
	srv := NewServer(Implementation{Name: "test-server", Version: "1.0.0"}, opts...)
	srv.AddTool(ToolSpec{Name: "echo", Description: "echoes its arguments"}, func(_ context.Context, req *CallToolRequest) (*CallToolResult, error) {
		return &CallToolResult{Content: []Content{TextContent(string(req.Arguments))}}, nil
	})
	hs := httptest.NewServer(srv)
	tr := &http.Transport{MaxIdleConnsPerHost: 128, MaxIdleConns: 256}
	ts := &testServer{srv: srv, hs: hs, url: hs.URL, tr: tr, hc: &http.Client{Transport: tr}}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		hs.CloseClientConnections()
		hs.Close()
		tr.CloseIdleConnections()
	})
	return ts
}

// newClient returns a runtime client of ts, closed in cleanup.
func (ts *testServer) newClient(t *testing.T, opts ...ClientOption) *Client {
	t.Helper()
	c := NewClient(ts.url, append([]ClientOption{WithEra(EraLegacy)}, opts...)...) // the session era, unless a test asks for another
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = c.Close(ctx)
	})
	return c
}

// rawReq is one raw HTTP request to the MCP endpoint. POST gets Content-Type, Accept and,
// with a session, MCP-Protocol-Version by default; GET gets Accept: text/event-stream. A
// header set to "" in header is removed.
type rawReq struct {
	method  string // default POST
	session string
	body    string
	header  map[string]string
	host    string
}

func (ts *testServer) do(ctx context.Context, t *testing.T, r rawReq) *http.Response {
	t.Helper()
	resp, err := ts.doErr(ctx, r)
	if err != nil {
		t.Fatalf("%s: %v", r.method, err)
	}
	return resp
}

func (ts *testServer) doErr(ctx context.Context, r rawReq) (*http.Response, error) {
	if r.method == "" {
		r.method = http.MethodPost
	}
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, ts.url, body)
	if err != nil {
		return nil, err
	}
	switch r.method {
	case http.MethodPost:
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	case http.MethodGet:
		req.Header.Set("Accept", "text/event-stream")
	}
	if r.session != "" {
		req.Header.Set("Mcp-Session-Id", r.session)
		req.Header.Set("MCP-Protocol-Version", LatestProtocolVersion)
	}
	for k, v := range r.header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	if r.host != "" {
		req.Host = r.host
	}
	return ts.hc.Do(req)
}

// readBody reads a whole (finite) response body and closes it.
func readBody(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		t.Fatalf("reading the body: %v", err)
	}
	return b
}

func initBody(version string) string {
	return `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"` + version +
		`","capabilities":{},"clientInfo":{"name":"raw-test","version":"0"}}}`
}

// initSession initializes a session over raw HTTP (and sends notifications/initialized).
func (ts *testServer) initSession(ctx context.Context, t *testing.T) string {
	t.Helper()
	resp := ts.do(ctx, t, rawReq{body: initBody(LatestProtocolVersion)})
	body := readBody(t, resp)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("initialize: %s %s", resp.Status, body)
	}
	sid := resp.Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatalf("initialize: no Mcp-Session-Id header")
	}
	resp = ts.do(ctx, t, rawReq{session: sid, body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`})
	readBody(t, resp)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %s", resp.Status)
	}
	return sid
}

// deleteSession ends a session with DELETE.
func (ts *testServer) deleteSession(ctx context.Context, t *testing.T, sid string) {
	t.Helper()
	resp := ts.do(ctx, t, rawReq{method: http.MethodDelete, session: sid})
	readBody(t, resp)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE: %s", resp.Status)
	}
}

// rpcResponse is a JSON-RPC response as it arrives.
type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *Error          `json:"error"`
}

func decodeRPC(t *testing.T, b []byte) rpcResponse {
	t.Helper()
	var m rpcResponse
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("body is not one JSON-RPC message: %v: %q", err, truncate(string(b), 300))
	}
	if m.JSONRPC != "2.0" {
		t.Fatalf(`jsonrpc = %q, want "2.0" in %s`, m.JSONRPC, truncate(string(b), 300))
	}
	return m
}

// sseEvent is one SSE field block as it went over the wire.
type sseEvent struct {
	id, event, data, retry   string
	hasID, hasData, hasRetry bool
}

// sseReader parses an SSE body field by field (go-sse would hide the priming event's empty
// data line and the retry field, which the tests check).
type sseReader struct{ br *bufio.Reader }

func newSSEReader(r io.Reader) *sseReader { return &sseReader{br: bufio.NewReaderSize(r, 64<<10)} }

// next returns the next field block; io.EOF when the body ends cleanly between blocks.
func (r *sseReader) next() (sseEvent, error) {
	var ev sseEvent
	seen := false
	for {
		line, err := r.br.ReadString('\n')
		if err != nil {
			if err == io.EOF && line == "" && !seen {
				return ev, io.EOF
			}
			if err == io.EOF {
				return ev, io.ErrUnexpectedEOF
			}
			return ev, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if seen {
				return ev, nil
			}
			continue
		}
		if line[0] == ':' {
			continue // comment (keep-alive)
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		seen = true
		switch field {
		case "id":
			ev.id, ev.hasID = value, true
		case "event":
			ev.event = value
		case "data":
			if ev.hasData {
				ev.data += "\n" + value
			} else {
				ev.data, ev.hasData = value, true
			}
		case "retry":
			ev.retry, ev.hasRetry = value, true
		}
	}
}

// nextMessage returns the next event that carries a JSON-RPC message, skipping priming and
// retry-only blocks.
func (r *sseReader) nextMessage(t *testing.T) (sseEvent, rpcResponse) {
	t.Helper()
	for {
		ev, err := r.next()
		if err != nil {
			t.Fatalf("reading the SSE stream: %v", err)
		}
		if ev.data == "" {
			continue
		}
		return ev, decodeRPC(t, []byte(ev.data))
	}
}

// readAllEvents reads a finite SSE body to its end.
func readAllEvents(t *testing.T, body []byte) []sseEvent {
	t.Helper()
	r := newSSEReader(bytes.NewReader(body))
	var out []sseEvent
	for {
		ev, err := r.next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("malformed SSE body: %v: %q", err, truncate(string(body), 500))
		}
		out = append(out, ev)
	}
}

// checkPriming checks the priming event (Streamable HTTP transport, Sending Messages to the Server): an ID naming stream seq 0, an empty data
// field and a retry interval. It returns the stream ID.
func checkPriming(t *testing.T, ev sseEvent) string {
	t.Helper()
	if !ev.hasID || !ev.hasData || ev.data != "" {
		t.Fatalf("first event %+v is not a priming event (an id and an empty data field)", ev)
	}
	stream, seq, ok := parseEventID(ev.id)
	if !ok || seq != 0 {
		t.Fatalf("priming event id %q does not name seq 0 of a stream", ev.id)
	}
	if !ev.hasRetry {
		t.Fatalf("priming event %+v has no retry field", ev)
	}
	if ms, err := strconv.Atoi(ev.retry); err != nil || ms <= 0 {
		t.Fatalf("priming retry %q is not a positive number of milliseconds", ev.retry)
	}
	return stream
}

func wireToolCall(id, name, args string) string {
	if args == "" {
		args = "{}"
	}
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + name + `","arguments":` + args + `}}`
}

func wireToolCallProgress(id, name, args, token string) string {
	if args == "" {
		args = "{}"
	}
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + name + `","arguments":` + args +
		`,"_meta":{"progressToken":"` + token + `"}}}`
}

func resultText(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var r CallToolResult
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("result is not a CallToolResult: %v: %s", err, raw)
	}
	return r.Text()
}

// waitFor polls cond until it holds or ctx ends. It waits for the server to reach a state;
// it is never an assertion about time.
func waitUntil(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("gave up waiting for %s: %v", what, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// recv receives from ch within ctx.
func recvWithin[T any](ctx context.Context, t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-ctx.Done():
		t.Fatalf("gave up waiting for %s: %v", what, ctx.Err())
		panic("unreachable")
	}
}

// pingClientTool calls back into the client (a server-to-client ping) and returns "pong".
func pingClientTool(_ *testing.T) (ToolSpec, ToolHandler) {
	return ToolSpec{Name: "ping_client"}, func(ctx context.Context, _ *CallToolRequest) (*CallToolResult, error) {
		if err := CallerFrom(ctx).Ping(ctx); err != nil {
			return nil, err
		}
		return &CallToolResult{Content: []Content{TextContent("pong")}}, nil
	}
}

// answerServerPing starts a tools/call of ping_client and returns, once the server's ping
// request arrived on the call's stream, the JSON-RPC response that answers it. The call's
// stream is read to its end in cleanup.
func answerServerPing(ctx context.Context, t *testing.T, ts *testServer, sid string) string {
	t.Helper()
	resp := ts.do(ctx, t, rawReq{session: sid, body: wireToolCall(`"call-ping"`, "ping_client", "")})
	t.Cleanup(func() { _, _ = io.Copy(io.Discard, resp.Body); resp.Body.Close() })
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("a call that sends a request before its result must be SSE, got %q", ct)
	}
	_, m := newSSEReader(resp.Body).nextMessage(t)
	if m.Method != "ping" || len(m.ID) == 0 {
		t.Fatalf("expected the server's ping request, got %+v", m)
	}
	return `{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{}}`
}

var sessionIDRE = regexp.MustCompile(`^[0-9a-f]{32}$`)

type sessionKind int

const (
	noSession      sessionKind = iota
	withSession                // a fresh, initialized session
	unknownSession             // an ID the server never issued
)

// wireRule is one transport rule: a request and what the server must answer.
type wireRule struct {
	name    string
	opts    []ServerOption
	session sessionKind
	// prepare runs after the session exists; a non-empty return replaces req.body.
	prepare func(ctx context.Context, t *testing.T, ts *testServer, sid string) string
	req     rawReq

	wantStatus int
	wantCT     string            // media type of the answer ("" = not checked)
	wantHeader map[string]string // exact values; "*" = present
	wantCode   Code              // JSON-RPC error code; 0 = no error expected
	wantMsg    string            // substring of the error message
	wantResult string            // the exact result JSON, when set
	emptyBody  bool
	// stream marks an open-ended SSE answer: the body is not read to its end, only its first
	// event, which must be a priming event.
	stream bool
	check  func(t *testing.T, ts *testServer, sid string, resp *http.Response, body []byte)
}

func TestServerTransportRules(t *testing.T) {
	const echoCall = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"a":1}}}`
	const ping = `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	rules := []wireRule{
		{
			name: "POST request answered with JSON", session: withSession,
			req:        rawReq{body: echoCall},
			wantStatus: 200, wantCT: "application/json",
			check: func(t *testing.T, _ *testServer, _ string, _ *http.Response, body []byte) {
				m := decodeRPC(t, body)
				if string(m.ID) != "1" || m.Error != nil {
					t.Fatalf("want the result for id 1, got %s", body)
				}
				if got := resultText(t, m.Result); got != `{"a":1}` {
					t.Fatalf("echo returned %q", got)
				}
			},
		},
		{
			name: "POST request answered with SSE (WithSSEResponses)", session: withSession,
			opts:       []ServerOption{WithSSEResponses()},
			req:        rawReq{body: echoCall},
			wantStatus: 200, wantCT: "text/event-stream",
			wantHeader: map[string]string{"Cache-Control": "no-cache, no-transform"},
			check: func(t *testing.T, _ *testServer, _ string, _ *http.Response, body []byte) {
				evs := readAllEvents(t, body)
				if len(evs) != 2 {
					t.Fatalf("want a priming event and the response, got %d events: %q", len(evs), body)
				}
				stream := checkPriming(t, evs[0])
				if evs[0].retry != "1000" {
					t.Fatalf("retry = %q, want the default 1000 ms", evs[0].retry)
				}
				ev := evs[1]
				if ev.event != "message" && ev.event != "" {
					t.Fatalf("response event type %q", ev.event)
				}
				s, seq, ok := parseEventID(ev.id)
				if !ok || s != stream || seq != 1 {
					t.Fatalf("response event id %q does not continue stream %q", ev.id, stream)
				}
				m := decodeRPC(t, []byte(ev.data))
				if string(m.ID) != "1" || resultText(t, m.Result) != `{"a":1}` {
					t.Fatalf("bad response event %q", ev.data)
				}
			},
		},
		{
			name: "notification accepted with 202 and no body", session: withSession,
			req:        rawReq{body: `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`},
			wantStatus: 202, emptyBody: true,
		},
		{
			name: "response to a server request accepted with 202 and no body", session: withSession,
			prepare:    answerServerPing,
			wantStatus: 202, emptyBody: true,
		},
		{
			name: "response to no pending request refused", session: withSession,
			req:        rawReq{body: `{"jsonrpc":"2.0","id":99,"result":{}}`},
			wantStatus: 400, wantCT: "application/json", wantCode: CodeInvalidRequest, wantMsg: "no request with id 99",
		},
		{
			name: "GET opens the standalone SSE stream", session: withSession,
			req:        rawReq{method: http.MethodGet},
			wantStatus: 200, wantCT: "text/event-stream", stream: true,
		},
		{
			name: "second GET on the same session gets 409", session: withSession,
			prepare: func(ctx context.Context, t *testing.T, ts *testServer, sid string) string {
				resp := ts.do(ctx, t, rawReq{method: http.MethodGet, session: sid})
				t.Cleanup(func() { resp.Body.Close() })
				if resp.StatusCode != 200 {
					t.Fatalf("first GET: %s", resp.Status)
				}
				checkPriming(t, mustNext(t, newSSEReader(resp.Body)))
				return ""
			},
			req:        rawReq{method: http.MethodGet},
			wantStatus: 409, wantCT: "application/json", wantCode: CodeInvalidRequest, wantMsg: "already has a GET stream",
		},
		{
			name: "GET with a malformed Last-Event-ID refused", session: withSession,
			req:        rawReq{method: http.MethodGet, header: map[string]string{"Last-Event-ID": "garbage"}},
			wantStatus: 400, wantCode: CodeInvalidRequest, wantMsg: "Last-Event-ID",
		},
		{
			name: "DELETE ends the session", session: withSession,
			req:        rawReq{method: http.MethodDelete},
			wantStatus: 200,
			check: func(t *testing.T, ts *testServer, sid string, _ *http.Response, _ []byte) {
				ctx := testCtx(t)
				for _, r := range []rawReq{{session: sid, body: ping}, {method: http.MethodGet, session: sid}, {method: http.MethodDelete, session: sid}} {
					resp := ts.do(ctx, t, r)
					readBody(t, resp)
					if resp.StatusCode != http.StatusNotFound {
						t.Fatalf("%s after DELETE: %s, want 404", r.method, resp.Status)
					}
				}
			},
		},
		{
			name: "request on a deleted session gets 404", session: withSession,
			prepare: func(ctx context.Context, t *testing.T, ts *testServer, sid string) string {
				ts.deleteSession(ctx, t, sid)
				return ""
			},
			req:        rawReq{body: ping},
			wantStatus: 404, wantCT: "application/json", wantCode: CodeInvalidRequest, wantMsg: "session not found",
		},
		{
			name:       "initialize assigns a 128-bit visible-ASCII session ID and echoes the latest version",
			req:        rawReq{body: initBody(LatestProtocolVersion)},
			wantStatus: 200, wantCT: "application/json", wantHeader: map[string]string{"Mcp-Session-Id": "*"},
			check: func(t *testing.T, ts *testServer, _ string, resp *http.Response, body []byte) {
				sid := resp.Header.Get("Mcp-Session-Id")
				if !sessionIDRE.MatchString(sid) {
					t.Fatalf("session ID %q is not 32 lowercase hex characters (128 bits)", sid)
				}
				for _, c := range []byte(sid) {
					if c < 0x21 || c > 0x7e {
						t.Fatalf("session ID %q has a character outside 0x21-0x7E", sid)
					}
				}
				checkInitResult(t, body, LatestProtocolVersion)
				// A second session gets another ID.
				ctx := testCtx(t)
				if other := ts.initSession(ctx, t); other == sid {
					t.Fatalf("two sessions share the ID %q", sid)
				}
			},
		},
		{
			name:       "initialize with an older supported version echoes it",
			req:        rawReq{body: initBody(ProtocolVersion20250618)},
			wantStatus: 200, wantCT: "application/json",
			check: func(t *testing.T, _ *testServer, _ string, _ *http.Response, body []byte) {
				checkInitResult(t, body, ProtocolVersion20250618)
			},
		},
		{
			name:       "initialize with the oldest supported version echoes it",
			req:        rawReq{body: initBody(ProtocolVersion20250326)},
			wantStatus: 200, wantCT: "application/json",
			check: func(t *testing.T, _ *testServer, _ string, _ *http.Response, body []byte) {
				checkInitResult(t, body, ProtocolVersion20250326)
			},
		},
		{
			name:       "initialize with an unsupported version gets a counter-offer of the latest",
			req:        rawReq{body: initBody("1999-01-01")},
			wantStatus: 200, wantCT: "application/json",
			check: func(t *testing.T, _ *testServer, _ string, _ *http.Response, body []byte) {
				checkInitResult(t, body, LatestProtocolVersion)
			},
		},
		{
			name: "initialize on an existing session refused", session: withSession,
			req:        rawReq{body: initBody(LatestProtocolVersion)},
			wantStatus: 400, wantCode: CodeInvalidRequest, wantMsg: "must not carry an Mcp-Session-Id",
		},
		{
			name:       "initialize sent as a notification refused",
			req:        rawReq{body: `{"jsonrpc":"2.0","method":"initialize","params":{}}`},
			wantStatus: 400, wantCode: CodeInvalidRequest,
		},
		{
			name:       "missing session ID gets 400",
			req:        rawReq{body: ping},
			wantStatus: 400, wantCT: "application/json", wantCode: CodeInvalidRequest, wantMsg: "missing Mcp-Session-Id",
		},
		{
			name:       "GET without a session ID gets 400",
			req:        rawReq{method: http.MethodGet},
			wantStatus: 400, wantCode: CodeInvalidRequest,
		},
		{
			name: "unknown session ID gets 404", session: unknownSession,
			req:        rawReq{body: ping},
			wantStatus: 404, wantCT: "application/json", wantCode: CodeInvalidRequest, wantMsg: "session not found",
		},
		{
			name: "unsupported MCP-Protocol-Version gets 400", session: withSession,
			req:        rawReq{body: ping, header: map[string]string{"MCP-Protocol-Version": "1999-01-01"}},
			wantStatus: 400, wantCT: "application/json", wantCode: CodeInvalidRequest, wantMsg: "unsupported MCP-Protocol-Version",
		},
		{
			name: "unsupported MCP-Protocol-Version on GET gets 400", session: withSession,
			req:        rawReq{method: http.MethodGet, header: map[string]string{"MCP-Protocol-Version": "2024-11-05"}},
			wantStatus: 400, wantCode: CodeInvalidRequest,
		},
		{
			name: "another supported MCP-Protocol-Version accepted on a session", session: withSession,
			req:        rawReq{body: ping, header: map[string]string{"MCP-Protocol-Version": ProtocolVersion20250326}},
			wantStatus: 200, wantCT: "application/json", wantResult: `{}`,
		},
		{
			name: "missing MCP-Protocol-Version accepted on a session", session: withSession,
			req:        rawReq{body: ping, header: map[string]string{"MCP-Protocol-Version": ""}},
			wantStatus: 200, wantResult: `{}`,
		},
		{
			name: "foreign Origin gets 403", session: withSession,
			req:        rawReq{body: ping, header: map[string]string{"Origin": "https://evil.example.com"}},
			wantStatus: 403, wantCT: "application/json", wantCode: CodeInvalidRequest, wantMsg: "Origin",
			check: func(t *testing.T, _ *testServer, _ string, _ *http.Response, body []byte) {
				if m := decodeRPC(t, body); len(m.ID) != 0 && string(m.ID) != "null" {
					t.Fatalf("a 403 error body must have no id, got %s", m.ID)
				}
			},
		},
		{
			name:       "foreign Origin on initialize gets 403",
			req:        rawReq{body: initBody(LatestProtocolVersion), header: map[string]string{"Origin": "http://attacker.test:8080"}},
			wantStatus: 403, wantCode: CodeInvalidRequest, wantMsg: "DNS rebinding",
		},
		{
			name: "loopback Origin allowed", session: withSession,
			req:        rawReq{body: ping, header: map[string]string{"Origin": "http://localhost:5173"}},
			wantStatus: 200, wantResult: `{}`,
		},
		{
			name: "Origin allowed by WithAllowedOrigins", session: withSession,
			opts:       []ServerOption{WithAllowedOrigins("https://app.example.com")},
			req:        rawReq{body: ping, header: map[string]string{"Origin": "https://app.example.com"}},
			wantStatus: 200, wantResult: `{}`,
		},
		{
			name: "Origin not in WithAllowedOrigins still refused", session: withSession,
			opts:       []ServerOption{WithAllowedOrigins("https://app.example.com")},
			req:        rawReq{body: ping, header: map[string]string{"Origin": "https://other.example.com"}},
			wantStatus: 403, wantCode: CodeInvalidRequest,
		},
		{
			name: "foreign Host gets 403", session: withSession,
			req:        rawReq{body: ping, host: "evil.example.com"},
			wantStatus: 403, wantCT: "application/json", wantCode: CodeInvalidRequest, wantMsg: "Host",
		},
		{
			name: "Host allowed by WithAllowedHosts", session: withSession,
			opts:       []ServerOption{WithAllowedHosts("mcp.example.com")},
			req:        rawReq{body: ping, host: "mcp.example.com:443"},
			wantStatus: 200, wantResult: `{}`,
		},
		{
			name: "foreign Origin and Host accepted WithoutDNSRebindingProtection", session: withSession,
			opts:       []ServerOption{WithoutDNSRebindingProtection()},
			req:        rawReq{body: ping, host: "evil.example.com", header: map[string]string{"Origin": "https://evil.example.com"}},
			wantStatus: 200, wantResult: `{}`,
		},
		{
			name: "wrong Content-Type gets 415", session: withSession,
			req:        rawReq{body: ping, header: map[string]string{"Content-Type": "text/plain"}},
			wantStatus: 415, wantCT: "application/json", wantCode: CodeInvalidRequest, wantMsg: "Content-Type",
		},
		{
			name: "Content-Type with a charset accepted", session: withSession,
			req:        rawReq{body: ping, header: map[string]string{"Content-Type": "application/json; charset=utf-8"}},
			wantStatus: 200, wantResult: `{}`,
		},
		{
			name: "Accept without text/event-stream gets 406", session: withSession,
			req:        rawReq{body: ping, header: map[string]string{"Accept": "application/json"}},
			wantStatus: 406, wantCT: "application/json", wantCode: CodeInvalidRequest, wantMsg: "Accept",
		},
		{
			name: "Accept without application/json gets 406", session: withSession,
			req:        rawReq{body: ping, header: map[string]string{"Accept": "text/event-stream"}},
			wantStatus: 406, wantCode: CodeInvalidRequest,
		},
		{
			name: "Accept listing both on separate headers values accepted", session: withSession,
			req:        rawReq{body: ping, header: map[string]string{"Accept": "application/json;q=0.9, text/event-stream;q=1"}},
			wantStatus: 200, wantResult: `{}`,
		},
		{
			name: "GET without text/event-stream gets 406", session: withSession,
			req:        rawReq{method: http.MethodGet, header: map[string]string{"Accept": "application/json"}},
			wantStatus: 406, wantCT: "application/json", wantCode: CodeInvalidRequest,
		},
		{
			name: "body over WithMaxBodyBytes gets 413", session: withSession,
			opts:       []ServerOption{WithMaxBodyBytes(256)},
			req:        rawReq{body: wireToolCall("1", "echo", `{"pad":"`+strings.Repeat("x", 300)+`"}`)},
			wantStatus: 413, wantCT: "application/json", wantCode: CodeInvalidRequest, wantMsg: "256 bytes",
		},
		{
			name: "body within WithMaxBodyBytes accepted", session: withSession,
			opts:       []ServerOption{WithMaxBodyBytes(256)},
			req:        rawReq{body: ping},
			wantStatus: 200, wantResult: `{}`,
		},
		{
			name: "batch refused", session: withSession,
			req:        rawReq{body: "[" + ping + "]"},
			wantStatus: 400, wantCT: "application/json", wantCode: CodeInvalidRequest, wantMsg: "batches are not supported",
		},
		{
			name: "malformed JSON is a parse error", session: withSession,
			req:        rawReq{body: `{"jsonrpc":"2.0","id":1,"method":`},
			wantStatus: 400, wantCT: "application/json", wantCode: CodeParseError,
		},
		{
			name: "wrong jsonrpc version is an invalid request that keeps its id", session: withSession,
			req:        rawReq{body: `{"jsonrpc":"1.0","id":7,"method":"ping"}`},
			wantStatus: 400, wantCode: CodeInvalidRequest, wantMsg: "jsonrpc",
			check: func(t *testing.T, _ *testServer, _ string, _ *http.Response, body []byte) {
				if m := decodeRPC(t, body); string(m.ID) != "7" {
					t.Fatalf("error id = %s, want 7", m.ID)
				}
			},
		},
		{
			name: "null id is an invalid request", session: withSession,
			req:        rawReq{body: `{"jsonrpc":"2.0","id":null,"method":"ping"}`},
			wantStatus: 400, wantCode: CodeInvalidRequest,
		},
		{
			name: "params that are not an object are an invalid request", session: withSession,
			req:        rawReq{body: `{"jsonrpc":"2.0","id":3,"method":"ping","params":[1]}`},
			wantStatus: 400, wantCode: CodeInvalidRequest, wantMsg: "params",
		},
		{
			name: "unknown method", session: withSession,
			req:        rawReq{body: `{"jsonrpc":"2.0","id":1,"method":"no/such/method"}`},
			wantStatus: 200, wantCT: "application/json", wantCode: CodeMethodNotFound, wantMsg: "no/such/method",
		},
		{
			name: "tools/call with params of the wrong type", session: withSession,
			req:        rawReq{body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}`},
			wantStatus: 200, wantCode: CodeInvalidParams, wantMsg: "name",
		},
		{
			name: "tools/call without a name", session: withSession,
			req:        rawReq{body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}`},
			wantStatus: 200, wantCode: CodeInvalidParams, wantMsg: "name",
		},
		{
			name: "unknown tool", session: withSession,
			req:        rawReq{body: wireToolCall("1", "nope", "")},
			wantStatus: 200, wantCode: CodeInvalidParams, wantMsg: `unknown tool "nope"`,
		},
		{
			name: "ping returns an empty result", session: withSession,
			req:        rawReq{body: ping},
			wantStatus: 200, wantCT: "application/json", wantResult: `{}`,
		},
		{
			name: "logging/setLevel with a valid level", session: withSession,
			req:        rawReq{body: `{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"warning"}}`},
			wantStatus: 200, wantResult: `{}`,
		},
		{
			name: "logging/setLevel with an invalid level", session: withSession,
			req:        rawReq{body: `{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"loud"}}`},
			wantStatus: 200, wantCode: CodeInvalidParams, wantMsg: "invalid log level",
		},
		{
			name: "tools/list with an invalid cursor", session: withSession,
			req:        rawReq{body: `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"not a cursor!"}}`},
			wantStatus: 200, wantCode: CodeInvalidParams, wantMsg: "invalid cursor",
		},
		{
			name: "other HTTP methods get 405 with Allow", session: withSession,
			req:        rawReq{method: http.MethodPut, body: ping},
			wantStatus: 405, wantHeader: map[string]string{"Allow": "GET, POST, DELETE"}, wantCode: CodeInvalidRequest,
		},
	}
	for _, rule := range rules {
		t.Run(rule.name, func(t *testing.T) {
			ctx := testCtx(t)
			ts := newTestServer(t, rule.opts...)
			ts.srv.AddTool(pingClientTool(t))
			var sid string
			switch rule.session {
			case withSession:
				sid = ts.initSession(ctx, t)
			case unknownSession:
				sid = newSessionID()
			}
			req := rule.req
			req.session = sid
			if rule.prepare != nil {
				if b := rule.prepare(ctx, t, ts, sid); b != "" {
					req.body = b
				}
			}
			resp := ts.do(ctx, t, req)
			if resp.StatusCode != rule.wantStatus {
				b := readBody(t, resp)
				t.Fatalf("status %s, want %d; body %s", resp.Status, rule.wantStatus, truncate(string(b), 300))
			}
			if rule.wantCT != "" {
				if ct := resp.Header.Get("Content-Type"); !isMediaType(ct, rule.wantCT) {
					t.Errorf("Content-Type %q, want %s", ct, rule.wantCT)
				}
			}
			for k, v := range rule.wantHeader {
				got := resp.Header.Get(k)
				if (v == "*" && got == "") || (v != "*" && got != v) {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
			var body []byte
			if rule.stream {
				ev := mustNext(t, newSSEReader(resp.Body))
				resp.Body.Close()
				checkPriming(t, ev)
				return
			}
			body = readBody(t, resp)
			if rule.emptyBody && len(body) != 0 {
				t.Errorf("want no body, got %q", body)
			}
			if rule.wantCode != 0 || rule.wantResult != "" {
				m := decodeRPC(t, body)
				switch {
				case rule.wantCode != 0 && m.Error == nil:
					t.Fatalf("want JSON-RPC error %d, got %s", rule.wantCode, body)
				case rule.wantCode != 0 && m.Error.Code != rule.wantCode:
					t.Fatalf("error code %d (%s), want %d", m.Error.Code, m.Error.Message, rule.wantCode)
				case rule.wantCode != 0 && !strings.Contains(m.Error.Message, rule.wantMsg):
					t.Fatalf("error message %q does not mention %q", m.Error.Message, rule.wantMsg)
				case rule.wantResult != "" && (m.Error != nil || string(m.Result) != rule.wantResult):
					t.Fatalf("want result %s, got %s", rule.wantResult, body)
				}
			}
			if rule.check != nil {
				rule.check(t, ts, sid, resp, body)
			}
		})
	}
}

func mustNext(t *testing.T, r *sseReader) sseEvent {
	t.Helper()
	ev, err := r.next()
	if err != nil {
		t.Fatalf("reading an SSE event: %v", err)
	}
	return ev
}

func checkInitResult(t *testing.T, body []byte, wantVersion string) {
	t.Helper()
	m := decodeRPC(t, body)
	if m.Error != nil || string(m.ID) != `"init"` {
		t.Fatalf("initialize failed: %s", body)
	}
	var res InitializeResult
	if err := json.Unmarshal(m.Result, &res); err != nil {
		t.Fatal(err)
	}
	if res.ProtocolVersion != wantVersion {
		t.Fatalf("protocolVersion %q, want %q", res.ProtocolVersion, wantVersion)
	}
	if res.ServerInfo.Name != "test-server" || res.Capabilities.Tools == nil || !res.Capabilities.Tools.ListChanged {
		t.Fatalf("bad InitializeResult %s", m.Result)
	}
}

// TestServerPagination walks tools/list with a page size of 2: every tool exactly once, in
// registration order, and the last page without a nextCursor.
func TestServerPagination(t *testing.T) {
	ctx := testCtx(t)
	ts := newTestServer(t, WithPageSize(2))
	want := []string{"echo"}
	for i := range 6 {
		name := fmt.Sprintf("tool_%d", i)
		want = append(want, name)
		ts.srv.AddTool(ToolSpec{Name: name}, func(context.Context, *CallToolRequest) (*CallToolResult, error) { return nil, nil })
	}
	c := ts.newClient(t)
	var got []string
	cursor := ""
	for page := 0; ; page++ {
		if page > len(want) {
			t.Fatalf("pagination does not end: %v", got)
		}
		res, err := c.ListTools(ctx, cursor)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Tools) == 0 || len(res.Tools) > 2 {
			t.Fatalf("page %d has %d tools, want 1 or 2", page, len(res.Tools))
		}
		for _, tl := range res.Tools {
			got = append(got, tl.Name)
			if string(tl.InputSchema) != `{"type":"object"}` {
				t.Fatalf("tool %s inputSchema %s", tl.Name, tl.InputSchema)
			}
		}
		if res.NextCursor == "" {
			break
		}
		cursor = res.NextCursor
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("walked %v, want %v", got, want)
	}
	_, err := c.ListTools(ctx, "bm90LWEtbnVtYmVy")
	var rpcErr *Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != CodeInvalidParams {
		t.Fatalf("invalid cursor: got %v, want a -32602 error", err)
	}
}

// TestServerListChangedOnStandaloneStream: adding or removing a tool sends
// notifications/tools/list_changed on an open GET stream.
func TestServerListChangedOnStandaloneStream(t *testing.T) {
	ctx := testCtx(t)
	ts := newTestServer(t)
	sid := ts.initSession(ctx, t)
	resp := ts.do(ctx, t, rawReq{method: http.MethodGet, session: sid})
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET: %s", resp.Status)
	}
	r := newSSEReader(resp.Body)
	checkPriming(t, mustNext(t, r))

	// A call's own messages go on its stream only, never on the GET stream (Streamable HTTP transport, Multiple Connections): had the
	// progress below been sent there too, it would arrive before the list_changed.
	ts.srv.AddTool(ToolSpec{Name: "progress"}, func(ctx context.Context, _ *CallToolRequest) (*CallToolResult, error) {
		return &CallToolResult{}, CallerFrom(ctx).NotifyProgress(ctx, 1, 1, "on the call's stream")
	})
	if _, m := r.nextMessage(t); m.Method != "notifications/tools/list_changed" {
		t.Fatalf("want notifications/tools/list_changed, got %+v", m)
	}
	call := ts.do(ctx, t, rawReq{session: sid, body: wireToolCallProgress("1", "progress", "", "tok")})
	if b := readBody(t, call); !strings.Contains(string(b), "on the call's stream") {
		t.Fatalf("the call's progress did not arrive on its own stream: %q", b)
	}

	ts.srv.AddTool(ToolSpec{Name: "added"}, func(context.Context, *CallToolRequest) (*CallToolResult, error) { return nil, nil })
	ev, m := r.nextMessage(t)
	if m.Method != "notifications/tools/list_changed" || len(m.ID) != 0 {
		t.Fatalf("want notifications/tools/list_changed, got %s", ev.data)
	}
	if _, _, ok := parseEventID(ev.id); !ok {
		t.Fatalf("event id %q is not resumable", ev.id)
	}
	ts.srv.RemoveTool("added")
	if _, m = r.nextMessage(t); m.Method != "notifications/tools/list_changed" {
		t.Fatalf("RemoveTool: want notifications/tools/list_changed, got %+v", m)
	}
	ts.srv.AddPrompt(Prompt{Name: "p"}, func(context.Context, map[string]string) (*GetPromptResult, error) { return nil, nil })
	if _, m = r.nextMessage(t); m.Method != "notifications/prompts/list_changed" {
		t.Fatalf("AddPrompt: want notifications/prompts/list_changed, got %+v", m)
	}
}

// TestServerCancelledNotification: notifications/cancelled cancels the handler's context, and
// the cancelled request gets no response.
func TestServerCancelledNotification(t *testing.T) {
	ctx := testCtx(t)
	ts := newTestServer(t)
	started := make(chan struct{})
	ctxErr := make(chan error, 1)
	ts.srv.AddTool(ToolSpec{Name: "block"}, func(hctx context.Context, _ *CallToolRequest) (*CallToolResult, error) {
		close(started)
		select {
		case <-hctx.Done():
			ctxErr <- hctx.Err()
			return nil, hctx.Err()
		case <-ctx.Done():
			ctxErr <- nil
			return nil, ctx.Err()
		}
	})
	sid := ts.initSession(ctx, t)
	type answer struct {
		resp *http.Response
		body []byte
		err  error
	}
	answers := make(chan answer, 1)
	go func() {
		resp, err := ts.doErr(ctx, rawReq{session: sid, body: wireToolCall(`"c-1"`, "block", "")})
		if err != nil {
			answers <- answer{err: err}
			return
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		answers <- answer{resp: resp, body: b, err: err}
	}()
	recvWithin(ctx, t, "the handler to start", started)
	resp := ts.do(ctx, t, rawReq{session: sid, body: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c-1","reason":"user"}}`})
	readBody(t, resp)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("notifications/cancelled: %s", resp.Status)
	}
	if err := recvWithin(ctx, t, "the handler's context to end", ctxErr); !errors.Is(err, context.Canceled) {
		t.Fatalf("handler ctx error %v, want context.Canceled", err)
	}
	a := recvWithin(ctx, t, "the cancelled call's HTTP answer", answers)
	if a.err != nil {
		t.Fatalf("the cancelled call's answer: %v", a.err)
	}
	if bytes.Contains(a.body, []byte(`"c-1"`)) {
		t.Fatalf("a cancelled request must get no response, got %q", a.body)
	}
	// The session serves on.
	resp = ts.do(ctx, t, rawReq{session: sid, body: wireToolCall("2", "echo", `{"x":2}`)})
	if m := decodeRPC(t, readBody(t, resp)); m.Error != nil {
		t.Fatalf("call after cancellation: %+v", m.Error)
	}
}

// TestServerClientCancellation: cancelling the runtime client's call context reaches the
// handler as a cancelled context (the client sends notifications/cancelled).
func TestServerClientCancellation(t *testing.T) {
	ctx := testCtx(t)
	ts := newTestServer(t)
	started := make(chan struct{})
	ctxErr := make(chan error, 1)
	ts.srv.AddTool(ToolSpec{Name: "block"}, func(hctx context.Context, _ *CallToolRequest) (*CallToolResult, error) {
		close(started)
		select {
		case <-hctx.Done():
			ctxErr <- hctx.Err()
		case <-ctx.Done():
			ctxErr <- nil
		}
		return nil, hctx.Err()
	})
	c := ts.newClient(t)
	if err := c.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	callCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := c.CallTool(callCtx, "block", nil)
		done <- err
	}()
	recvWithin(ctx, t, "the handler to start", started)
	cancel()
	if err := recvWithin(ctx, t, "the call to return", done); !errors.Is(err, context.Canceled) {
		t.Fatalf("call error %v, want context.Canceled", err)
	}
	if err := recvWithin(ctx, t, "the handler's context to end", ctxErr); !errors.Is(err, context.Canceled) {
		t.Fatalf("handler ctx error %v, want context.Canceled", err)
	}
}

// TestServerHandlerPanic: a panicking handler becomes an internal error for that call, and
// the server and the session keep serving.
func TestServerHandlerPanic(t *testing.T) {
	ctx := testCtx(t)
	for _, mode := range []struct {
		name string
		opts []ServerOption
	}{{"json", nil}, {"sse", []ServerOption{WithSSEResponses()}}} {
		t.Run(mode.name, func(t *testing.T) {
			ts := newTestServer(t, mode.opts...)
			ts.srv.AddTool(ToolSpec{Name: "boom"}, func(context.Context, *CallToolRequest) (*CallToolResult, error) {
				panic("kaboom")
			})
			c := ts.newClient(t)
			for i := range 3 {
				_, err := c.CallTool(ctx, "boom", nil)
				var rpcErr *Error
				if !errors.As(err, &rpcErr) || rpcErr.Code != CodeInternalError || !strings.Contains(rpcErr.Message, "panicked") {
					t.Fatalf("call %d: got %v, want a -32603 error saying the handler panicked", i, err)
				}
				if strings.Contains(rpcErr.Message, "kaboom") {
					t.Fatalf("the panic value leaked to the client: %q", rpcErr.Message)
				}
				res, err := c.CallTool(ctx, "echo", json.RawMessage(`{"after":"panic"}`))
				if err != nil || res.Text() != `{"after":"panic"}` {
					t.Fatalf("call after a panic: %v %+v", err, res)
				}
			}
		})
	}
}

// TestServerLogLevel: Log sends notifications/message on the call's stream at and above the
// level the client set with logging/setLevel (default info).
func TestServerLogLevel(t *testing.T) {
	ctx := testCtx(t)
	ts := newTestServer(t)
	ts.srv.AddTool(ToolSpec{Name: "logs"}, func(ctx context.Context, _ *CallToolRequest) (*CallToolResult, error) {
		for _, l := range []LoggingLevel{LevelDebug, LevelInfo, LevelWarning, LevelError} {
			if err := CallerFrom(ctx).Log(ctx, l, "test", string(l)); err != nil {
				return nil, err
			}
		}
		return &CallToolResult{Content: []Content{TextContent("logged")}}, nil
	})
	sid := ts.initSession(ctx, t)
	levels := func() []string {
		t.Helper()
		resp := ts.do(ctx, t, rawReq{session: sid, body: wireToolCall("1", "logs", "")})
		var got []string
		for _, ev := range readAllEvents(t, readBody(t, resp)) {
			if ev.data == "" {
				continue
			}
			if m := decodeRPC(t, []byte(ev.data)); m.Method == "notifications/message" {
				var p LogMessageParams
				if err := json.Unmarshal(m.Params, &p); err != nil {
					t.Fatal(err)
				}
				got = append(got, string(p.Level))
			}
		}
		return got
	}
	if got := strings.Join(levels(), ","); got != "info,warning,error" {
		t.Fatalf("default level: got %s, want info,warning,error", got)
	}
	resp := ts.do(ctx, t, rawReq{session: sid, body: `{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"warning"}}`})
	if m := decodeRPC(t, readBody(t, resp)); m.Error != nil {
		t.Fatal(m.Error)
	}
	if got := strings.Join(levels(), ","); got != "warning,error" {
		t.Fatalf("after setLevel warning: got %s, want warning,error", got)
	}
}

// TestServerIdleSessionReaped: a session unused for longer than WithSessionIdleTimeout is
// ended; its ID then gets 404 and a new initialize works.
func TestServerIdleSessionReaped(t *testing.T) {
	ctx := testCtx(t)
	ts := newTestServer(t, WithSessionIdleTimeout(50*time.Millisecond))
	sid := ts.initSession(ctx, t)
	waitUntil(ctx, t, "the idle session to be reaped", func() bool {
		ts.srv.mu.RLock()
		defer ts.srv.mu.RUnlock()
		return ts.srv.sessions[sid] == nil
	})
	resp := ts.do(ctx, t, rawReq{session: sid, body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`})
	if readBody(t, resp); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("a reaped session: %s, want 404", resp.Status)
	}
	ts.initSession(ctx, t)
}
