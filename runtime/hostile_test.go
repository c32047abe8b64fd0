package runtime

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
	weatherv1 "github.com/protomcp/protomcp/gen/weather/v1"
)

// This file holds the hardening tests' shared harness (a real server on loopback, with a
// set of tools that misbehave on purpose, and a raw HTTP client that can send anything) and
// the table of hostile inputs. limits_test.go, fault_test.go and load_test.go use the same
// harness.

// hardenLog is a concurrency-safe buffer for the server's log, so that tests can check that
// a limit or a panic was logged.
type hardenLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *hardenLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *hardenLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// hardenEnv is a Server with the hardening tools, served by httptest on loopback.
type hardenEnv struct {
	t      *testing.T
	srv    *Server
	hs     *httptest.Server
	url    string
	hc     *http.Client
	log    *hardenLog
	ctl    *hardenCtl
	sid    string // the main session, initialized by newHardenEnv
	nextID int
	mu     sync.Mutex
}

// hardenCtl lets tests steer the blocking tools.
type hardenCtl struct {
	started chan string // the "block" and "notify_block" tools send their "tag" argument here

	mu      sync.Mutex
	release chan struct{} // closed to let the tools blocked on it return
	final   bool
}

// gate returns what blocked tools wait for.
func (c *hardenCtl) gate() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.release
}

// open releases the tools blocked now; later ones block again.
func (c *hardenCtl) open() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.final {
		return
	}
	close(c.release)
	c.release = make(chan struct{})
}

// releaseAll releases every blocked tool, now and later.
func (c *hardenCtl) releaseAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.final {
		c.final = true
		close(c.release)
	}
}

// streamArgs are the arguments of the "stream" tool.
type streamArgs struct {
	N    int    `json:"n"`    // notifications to send before the result
	Size int    `json:"size"` // bytes of filler in each
	Tag  string `json:"tag"`
	// Items is how many items the result holds.
	Items int `json:"items"`
	// Gate makes the tool send one notification, report Tag on ctl.started and wait for the
	// gate before sending the n others.
	Gate bool `json:"gate"`
}

// addHardenTools registers the tools the hardening tests call.
func addHardenTools(s *Server, ctl *hardenCtl) {
	obj := `{"type":"object"}`
	s.AddTool(ToolSpec{Name: "echo", Description: "returns its arguments", InputSchema: obj}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		return &CallToolResult{Content: []Content{TextContent(string(req.Arguments))}}, nil
	})
	s.AddTool(ToolSpec{Name: "len", Description: "returns the length of its arguments", InputSchema: obj}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		return &CallToolResult{Content: []Content{TextContent("len=" + strconv.Itoa(len(req.Arguments)))}}, nil
	})
	s.AddTool(ToolSpec{Name: "block", Description: "blocks until released", InputSchema: obj}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		var a struct{ Tag string }
		_ = json.Unmarshal(req.Arguments, &a)
		gate := ctl.gate() // before telling the test: it may open the gate at once
		select {
		case ctl.started <- a.Tag:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		select {
		case <-gate:
			return &CallToolResult{Content: []Content{TextContent("released " + a.Tag)}}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	s.AddTool(ToolSpec{Name: "notify_block", Description: "logs one message, then blocks until released", InputSchema: obj}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		var a struct{ Tag string }
		_ = json.Unmarshal(req.Arguments, &a)
		if err := CallerFrom(ctx).Log(ctx, LevelWarning, "harden", "secret-of-"+a.Tag); err != nil {
			return nil, err
		}
		gate := ctl.gate() // before telling the test: it may open the gate at once
		select {
		case ctl.started <- a.Tag:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		select {
		case <-gate:
			return &CallToolResult{Content: []Content{TextContent("released " + a.Tag)}}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	s.AddTool(ToolSpec{Name: "stream", Description: "sends n notifications of size bytes, then a result of items items", InputSchema: obj}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		var a streamArgs
		if err := json.Unmarshal(req.Arguments, &a); err != nil {
			return ErrorResult(err.Error()), nil
		}
		filler := strings.Repeat("x", a.Size)
		if a.Gate {
			if err := CallerFrom(ctx).Log(ctx, LevelWarning, "stream", "first of "+a.Tag); err != nil {
				return nil, err
			}
			gate := ctl.gate() // before telling the test: it may open the gate at once
			select {
			case ctl.started <- a.Tag:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			select {
			case <-gate:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		for i := 0; i < a.N; i++ {
			if err := CallerFrom(ctx).Log(ctx, LevelWarning, "stream", map[string]any{"i": i, "tag": a.Tag, "filler": filler}); err != nil {
				return nil, fmt.Errorf("notification %d of %d: %w", i, a.N, err)
			}
		}
		items := make([]string, a.Items)
		for i := range items {
			items[i] = a.Tag + "-" + strconv.Itoa(i)
		}
		b, _ := json.Marshal(map[string]any{"tag": a.Tag, "items": items})
		return &CallToolResult{Content: []Content{TextContent(string(b))}, StructuredContent: b}, nil
	})
	s.AddTool(ToolSpec{Name: "logflood", Description: "sends n log notifications of size bytes whatever happens to them, then reports on ctl.started", InputSchema: obj}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		var a streamArgs
		if err := json.Unmarshal(req.Arguments, &a); err != nil {
			return ErrorResult(err.Error()), nil
		}
		filler := strings.Repeat("x", a.Size)
		failed := 0
		for i := 0; i < a.N; i++ {
			if CallerFrom(ctx).Log(ctx, LevelWarning, "flood", map[string]any{"i": i, "filler": filler}) != nil {
				failed++
			}
		}
		select {
		case ctl.started <- a.Tag:
		case <-ctx.Done():
		}
		return &CallToolResult{Content: []Content{TextContent(fmt.Sprintf("%d of %d failed", failed, a.N))}}, nil
	})
	s.AddTool(ToolSpec{Name: "fail", Description: "a raw handler that returns a plain error", InputSchema: obj}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		return nil, errors.New("the disk is full")
	})
	s.AddTool(ToolSpec{Name: "panic", Description: "a raw handler that panics", InputSchema: obj}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		panic("raw tool exploded")
	})
	s.AddTool(ToolSpec{Name: "strict", Description: "a raw handler whose schema allows one integer, n", InputSchema: `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}`},
		func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
			return &CallToolResult{Content: []Content{TextContent("strict " + string(req.Arguments))}}, nil
		})
	AddTypedTool(s, ToolSpec{Name: "forecast", Description: "typed: GetForecastRequest"}, func(ctx context.Context, req *weatherv1.GetForecastRequest) (*weatherv1.GetForecastResponse, error) {
		return &weatherv1.GetForecastResponse{Place: &weatherv1.Place{Name: req.GetCity()}, Unit: req.GetUnit()}, nil
	})
	AddTypedTool(s, ToolSpec{Name: "link", Description: "typed: ResourceLink (int64 size)"}, func(ctx context.Context, req *mcpv1.ResourceLink) (*mcpv1.ResourceLink, error) {
		return req, nil
	})
	// A resource and a prompt whose results panic while the runtime encodes them, after
	// their handlers returned: the panic happens in the runtime's encoding, not the handler.
	s.AddResource(Resource{URI: "test://panic-encode", Name: "panic-encode"}, func(ctx context.Context, uri string) (*ReadResourceResult, error) {
		return &ReadResourceResult{Contents: []ResourceContents{{URI: uri, Meta: map[string]any{"x": panicMarshaler{}}}}}, nil
	})
	s.AddPrompt(Prompt{Name: "panic_encode"}, func(ctx context.Context, args map[string]string) (*GetPromptResult, error) {
		return &GetPromptResult{Messages: []PromptMessage{{Role: "user", Content: Content{Type: "text", Text: "x", Meta: map[string]any{"x": panicMarshaler{}}}}}}, nil
	})
	AddTypedTool(s, ToolSpec{Name: "panic_typed", Description: "a typed handler that panics"}, func(ctx context.Context, req *weatherv1.GetForecastRequest) (*weatherv1.GetForecastResponse, error) {
		var p *weatherv1.Place
		return &weatherv1.GetForecastResponse{Place: &weatherv1.Place{Name: p.Name}}, nil // nil dereference
	})
}

// panicMarshaler panics when encoded, as a buggy MarshalJSON in a server's own types would.
type panicMarshaler struct{}

func (panicMarshaler) MarshalJSON() ([]byte, error) { panic("MarshalJSON exploded") }

// newHardenEnv starts a server with the hardening tools and initializes a main session. The
// cleanup releases blocked tools, shuts the server down and closes the listener.
func newHardenEnv(t *testing.T, opts ...ServerOption) *hardenEnv {
	t.Helper()
	return newHardenEnvOn(t, nil, opts...)
}

// newHardenEnvOn is newHardenEnv with setup called on the httptest server before it starts
// (to wrap its listener or configure its http.Server; nil: as is).
func newHardenEnvOn(t *testing.T, setup func(*httptest.Server), opts ...ServerOption) *hardenEnv {
	t.Helper()
	e := &hardenEnv{t: t, log: &hardenLog{}, ctl: &hardenCtl{started: make(chan string, 64), release: make(chan struct{})}}
	logger := slog.New(slog.NewTextHandler(e.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e.srv = NewServer(Implementation{Name: "harden", Version: "1"}, append([]ServerOption{WithLogger(logger)}, opts...)...)
	addHardenTools(e.srv, e.ctl)
	e.hs = httptest.NewUnstartedServer(e.srv)
	if setup != nil {
		setup(e.hs)
	}
	e.hs.Start()
	e.url = e.hs.URL
	e.hc = &http.Client{Transport: DefaultTransport()}
	t.Cleanup(func() {
		e.ctl.releaseAll()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = e.srv.Shutdown(ctx)
		e.hs.CloseClientConnections()
		e.hs.Close()
		e.hc.CloseIdleConnections()
	})
	e.sid = e.initialize()
	return e
}

// id returns a fresh request ID.
func (e *hardenEnv) id() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.nextID++
	return 1000 + e.nextID
}

// hardenResp is an HTTP answer, with the JSON-RPC message it carried, if any.
type hardenResp struct {
	status int
	header http.Header
	body   []byte
	msg    *wireMessage // the response (JSON body, or the last response event of an SSE body)
	events []string     // the data of every SSE event
}

// send makes one raw HTTP request. hdr overrides the defaults (a POST's Content-Type and
// Accept, the session and the protocol version); an empty value removes the header.
func (e *hardenEnv) send(ctx context.Context, method, sid, body string, hdr map[string]string) (*hardenResp, error) {
	req, err := http.NewRequestWithContext(ctx, method, e.url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	} else if method == http.MethodGet {
		req.Header.Set("Accept", "text/event-stream")
	}
	if sid != "" {
		req.Header.Set(headerSessionID, sid)
		req.Header.Set(headerProtocolVersion, LatestProtocolVersion)
	}
	for k, v := range hdr {
		if strings.EqualFold(k, "Host") {
			req.Host = v
			continue
		}
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := e.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	r := &hardenResp{status: resp.StatusCode, header: resp.Header, body: b}
	if err != nil {
		return r, err
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		r.events = sseData(b)
		for _, d := range r.events {
			if m, rpcErr := decodeMessage([]byte(d)); rpcErr == nil && m.isResponse() {
				r.msg = m
			}
		}
	} else if len(b) > 0 {
		var m wireMessage
		if json.Unmarshal(b, &m) == nil {
			r.msg = &m
		}
	}
	return r, nil
}

// sseData returns the data of each event of an SSE body.
func sseData(b []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && d != "" {
			out = append(out, d)
		}
	}
	return out
}

func (e *hardenEnv) ctx() context.Context {
	return testCtx(e.t)
}

// initialize starts a session and sends notifications/initialized; it returns the session ID.
func (e *hardenEnv) initialize() string {
	e.t.Helper()
	r, err := e.send(e.ctx(), http.MethodPost, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+LatestProtocolVersion+`","capabilities":{},"clientInfo":{"name":"hostile","version":"0"}}}`, nil)
	require.Falsef(e.t, err != nil || r.status != http.StatusOK, "initialize: %v %+v", err, r)
	sid := r.header.Get(headerSessionID)
	require.False(e.t, sid == "", "initialize: no session ID")
	r, err = e.send(e.ctx(), http.MethodPost, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil)
	require.Falsef(e.t, err != nil || r.status != http.StatusAccepted, "notifications/initialized: %v %+v", err, r)
	return sid
}

// call sends a request on session sid and returns the answer.
func (e *hardenEnv) call(ctx context.Context, sid, method, params string) (*hardenResp, error) {
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, e.id(), method, params)
	return e.send(ctx, http.MethodPost, sid, body, nil)
}

// mustWork checks that a ping and a tool call on session sid succeed.
func (e *hardenEnv) mustWork(sid string) {
	e.t.Helper()
	r, err := e.call(e.ctx(), sid, "ping", `{}`)
	require.Falsef(e.t, err != nil || r.status != http.StatusOK || r.msg == nil || r.msg.Error != nil || r.msg.Result == nil, "ping after the hostile input failed: %v %s", err, dump(r))
	r, err = e.call(e.ctx(), sid, "tools/call", `{"name":"echo","arguments":{"still":"alive"}}`)
	require.Falsef(e.t, err != nil || r.status != http.StatusOK || r.msg == nil || r.msg.Error != nil || !bytes.Contains(r.msg.Result, []byte(`still`)), "tools/call after the hostile input failed: %v %s", err, dump(r))
}

func dump(r *hardenResp) string {
	if r == nil {
		return "<no response>"
	}
	return fmt.Sprintf("HTTP %d %s", r.status, truncate(string(r.body), 600))
}

// toolResult decodes a tools/call result.
func toolResult(r *hardenResp) (*CallToolResult, error) {
	if r.msg == nil || r.msg.Result == nil {
		return nil, errors.New("no result")
	}
	var res CallToolResult
	if err := json.Unmarshal(r.msg.Result, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

func nested(depth int) string {
	return strings.Repeat(`{"a":`, depth) + "1" + strings.Repeat("}", depth)
}

func nestedArrays(depth int) string {
	return strings.Repeat("[", depth) + strings.Repeat("]", depth)
}

// hostileCase is one hostile input and exactly what the server must answer.
type hostileCase struct {
	name string
	// The request: method (default POST), session ("" the main session, or one of the
	// session* constants), body, and header overrides (empty value: remove).
	method  string
	session string
	body    string
	hdr     map[string]string
	// run replaces the request above for inputs that need set-up.
	run func(t *testing.T, e *hardenEnv) *hardenResp

	status  int    // the exact HTTP status
	code    Code   // the JSON-RPC error code; 0 for a result (or no body)
	isError bool   // the result is a tool error (isError: true)
	msg     string // a substring of the error message, tool error text or result
}

const (
	sessionUninit  = "uninitialized" // initialize answered, notifications/initialized not sent
	sessionNone    = "none"
	sessionUnknown = "unknown"
	sessionDeleted = "deleted"
)

func req(id, method, params string) string {
	if params == "" {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":%q}`, id, method)
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":%q,"params":%s}`, id, method, params)
}

func toolCall(id, tool, args string) string {
	return req(id, "tools/call", fmt.Sprintf(`{"name":%q,"arguments":%s}`, tool, args))
}

func hostileCases() []hostileCase {
	initBody := req("1", "initialize", `{"protocolVersion":"`+LatestProtocolVersion+`","capabilities":{},"clientInfo":{"name":"x","version":"0"}}`)
	return []hostileCase{
		// Malformed bytes.
		{name: "truncated JSON", body: `{"jsonrpc":"2.0","id":1,"method":"pi`, status: 400, code: CodeParseError, msg: "parse error"},
		{name: "not JSON", body: `hello`, status: 400, code: CodeParseError, msg: "parse error"},
		{name: "empty body", body: ``, status: 400, code: CodeParseError, msg: "parse error"},
		{name: "trailing garbage", body: req("2", "ping", "") + `}`, status: 400, code: CodeParseError, msg: "parse error"},
		{name: "raw control character in a string", body: "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"pi\x01ng\"}", status: 400, code: CodeParseError, msg: "parse error"},
		{name: "invalid UTF-8 in a string", body: toolCall("4", "echo", "{\"s\":\"\xff\xfe\"}"), status: 400, code: CodeParseError, msg: "UTF-8"},
		{name: "invalid UTF-8 in the method", body: "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"\xc3\x28\"}", status: 400, code: CodeParseError, msg: "UTF-8"},
		{name: "JSON null", body: `null`, status: 400, code: CodeInvalidRequest, msg: `"jsonrpc": "2.0"`},
		{name: "JSON string", body: `"ping"`, status: 400, code: CodeInvalidRequest, msg: "invalid request"},
		{name: "deep nesting (100k) in params", body: req("6", "ping", nested(100000)), status: 400, code: CodeParseError, msg: "exceeded max depth"},
		{name: "deep nesting (100k arrays) in arguments", body: toolCall("7", "echo", `{"a":`+nestedArrays(100000)+`}`), status: 400, code: CodeParseError, msg: "exceeded max depth"},
		{name: "nesting under the bound reaches a raw tool", body: toolCall("8", "len", nested(5000)), status: 200, msg: "len=" + strconv.Itoa(len(nested(5000)))},
		{name: "nesting under the bound in typed arguments", body: toolCall("9", "forecast", `{"coordinates":`+nested(5000)+`}`), status: 200, isError: true, msg: `unknown field "a"`},

		// The JSON-RPC envelope.
		{name: "wrong jsonrpc version", body: `{"jsonrpc":"1.0","id":10,"method":"ping"}`, status: 400, code: CodeInvalidRequest, msg: `unsupported jsonrpc version "1.0"`},
		{name: "missing jsonrpc", body: `{"id":11,"method":"ping"}`, status: 400, code: CodeInvalidRequest, msg: `missing "jsonrpc"`},
		{name: "jsonrpc of the wrong type", body: `{"jsonrpc":2,"id":12,"method":"ping"}`, status: 400, code: CodeInvalidRequest, msg: "jsonrpc"},
		{name: "null id", body: `{"jsonrpc":"2.0","id":null,"method":"ping"}`, status: 400, code: CodeInvalidRequest, msg: "not null"},
		{name: "object id", body: `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, status: 400, code: CodeInvalidRequest, msg: "id must be a string or an integer"},
		{name: "array id", body: `{"jsonrpc":"2.0","id":[1],"method":"ping"}`, status: 400, code: CodeInvalidRequest, msg: "id must be a string or an integer"},
		{name: "fractional id", body: `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, status: 400, code: CodeInvalidRequest, msg: "id must be a string or an integer"},
		{name: "boolean id", body: `{"jsonrpc":"2.0","id":true,"method":"ping"}`, status: 400, code: CodeInvalidRequest, msg: "id must be a string or an integer"},
		{name: "id beyond int64", body: `{"jsonrpc":"2.0","id":99999999999999999999,"method":"ping"}`, status: 400, code: CodeInvalidRequest, msg: "id must be a string or an integer"},
		{name: "method of the wrong type", body: `{"jsonrpc":"2.0","id":13,"method":5}`, status: 400, code: CodeInvalidRequest, msg: "invalid request"},
		{name: "member names in upper case", body: `{"jsonrpc":"2.0","ID":70,"METHOD":"ping"}`, status: 400, code: CodeInvalidRequest, msg: "case-sensitive"},
		{name: "a member name escaped to upper case", body: `{"jsonrpc":"2.0","id":71,"method":"ping","\u0050arams":{}}`, status: 400, code: CodeInvalidRequest, msg: "case-sensitive"},
		{name: "a huge id is cut in the error message", body: `{"jsonrpc":"2.0","id":"` + strings.Repeat("i", 100<<10) + `","result":{}}`, status: 400, code: CodeInvalidRequest, msg: "no request with id \"iiii"},
		{name: "neither method nor id", body: `{"jsonrpc":"2.0"}`, status: 400, code: CodeInvalidRequest, msg: `needs a "method"`},
		{name: "request with a result", body: `{"jsonrpc":"2.0","id":14,"method":"ping","result":{}}`, status: 400, code: CodeInvalidRequest, msg: "must not carry a result"},
		{name: "params an array", body: req("15", "ping", `[1,2]`), status: 400, code: CodeInvalidRequest, msg: `"params" must be an object`},
		{name: "params a string", body: req("16", "tools/list", `"x"`), status: 400, code: CodeInvalidRequest, msg: `"params" must be an object`},
		{name: "batch", body: `[` + req("17", "ping", "") + `]`, status: 400, code: CodeInvalidRequest, msg: "batches are not supported"},
		{name: "empty batch", body: ` []`, status: 400, code: CodeInvalidRequest, msg: "batches are not supported"},
		{name: "batch over the count limit on a 2025-03-26 session", run: runBatch(`[` + strings.Repeat(req("74", "ping", "")+`,`, DefaultMaxBatchSize) + req("74", "ping", "") + `]`), status: 400, code: CodeInvalidRequest, msg: "the JSON-RPC batch holds 101 messages; the limit is 100"},
		{name: "empty batch on a 2025-03-26 session", run: runBatch(`[]`), status: 400, code: CodeInvalidRequest, msg: "an empty JSON-RPC batch"},
		{name: "unknown method", body: req("18", "tools/explode", `{}`), status: 200, code: CodeMethodNotFound, msg: "method not found: tools/explode"},
		{name: "huge method name is truncated in the error", body: req("19", strings.Repeat("m", 1<<20), `{}`), status: 200, code: CodeMethodNotFound, msg: strings.Repeat("m", 100) + "..."},
		{name: "response to a request never sent", body: `{"jsonrpc":"2.0","id":12345,"result":{}}`, status: 400, code: CodeInvalidRequest, msg: "no request with id 12345 is awaiting a response"},
		{name: "response with result and error", body: `{"jsonrpc":"2.0","id":12346,"result":{},"error":{"code":1,"message":"x"}}`, status: 400, code: CodeInvalidRequest, msg: "exactly one of result and error"},
		{name: "cancelling an unknown id", body: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":987654}}`, status: 202},
		{name: "cancel without a requestId", body: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{}}`, status: 202},
		{name: "unknown notification", body: `{"jsonrpc":"2.0","method":"notifications/explode"}`, status: 202},
		{name: "duplicate in-flight id", run: runDuplicateID, status: 400, code: CodeInvalidRequest, msg: "already in use by a request in flight"},

		// Params and tool arguments.
		{name: "tools/call name of the wrong type", body: req("20", "tools/call", `{"name":5}`), status: 200, code: CodeInvalidParams, msg: `field "name" must be string`},
		{name: "tools/call without a name", body: req("21", "tools/call", `{}`), status: 200, code: CodeInvalidParams, msg: `needs "name"`},
		{name: "unknown tool", body: toolCall("22", "nope", `{}`), status: 200, code: CodeInvalidParams, msg: `unknown tool "nope"`},
		{name: "arguments an array", body: toolCall("23", "forecast", `[1]`), status: 200, isError: true, msg: "arguments must be a JSON object"},
		{name: "unknown argument name", body: toolCall("24", "forecast", `{"cty":"Paris"}`), status: 200, isError: true, msg: `unknown field "cty"`},
		{name: "unknown nested argument name", body: toolCall("25", "forecast", `{"coordinates":{"lat":1}}`), status: 200, isError: true, msg: `unknown field "lat"`},
		{name: "enum name not in the set", body: toolCall("26", "forecast", `{"city":"Paris","unit":"TEMPERATURE_UNIT_KELVIN"}`), status: 200, isError: true, msg: "TEMPERATURE_UNIT_KELVIN"},
		{name: "enum number outside the declared set", body: toolCall("57", "forecast", `{"city":"Paris","unit":7}`), status: 200, isError: true, msg: "field unit: 7 is an enum number"},
		{name: "enum number inside the declared set", body: toolCall("58", "forecast", `{"city":"Paris","unit":1}`), status: 200, isError: true, msg: "field unit: 1 is an enum number"},
		{name: "32-bit integer as a numeric string", body: toolCall("59", "forecast", `{"city":"Paris","days":"5"}`), status: 200, isError: true, msg: `field days: "5" is a string`},
		{name: "int32 overflow", body: toolCall("27", "forecast", `{"city":"Paris","days":99999999999}`), status: 200, isError: true, msg: "days"},
		{name: "int64 overflow", body: toolCall("28", "link", `{"uri":"a:b","name":"n","size":"9223372036854775808"}`), status: 200, isError: true, msg: "size"},
		{name: "int64 overflow as a number", body: toolCall("29", "link", `{"uri":"a:b","name":"n","size":92233720368547758070}`), status: 200, isError: true, msg: "size"},
		{name: "argument of the wrong type", body: toolCall("30", "forecast", `{"city":["Paris"]}`), status: 200, isError: true, msg: "city"},
		{name: "both members of a oneof", body: toolCall("31", "forecast", `{"city":"Paris","coordinates":{"latitude":1}}`), status: 200, isError: true, msg: "oneof"},
		{name: "huge string under the body limit", body: toolCall("32", "len", `{"s":"`+strings.Repeat("a", 3<<20)+`"}`), status: 200, msg: "len=" + strconv.Itoa(3<<20+8)},
		{name: "huge body", body: toolCall("33", "len", `{"s":"`+strings.Repeat("a", 5<<20)+`"}`), status: 413, code: CodeInvalidRequest, msg: "request body exceeds the limit of 4194304 bytes"},
		{name: "raw tool arguments breaking its input schema", body: toolCall("72", "strict", `{"n":"1","`+strings.Repeat("x", 10000)+`":1}`), status: 200, isError: true, msg: "xxx...; n: got string, want integer"},
		{name: "raw tool arguments conforming to its input schema", body: toolCall("73", "strict", `{"n":1}`), status: 200, msg: `strict {\"n\":1}`},
		{name: "raw tool handler returns a plain error", body: toolCall("38", "fail", `{}`), status: 200, isError: true, msg: "the disk is full"},
		{name: "raw tool handler panics", body: toolCall("34", "panic", `{}`), status: 200, code: CodeInternalError, msg: `the tool "panic" handler panicked`},
		{name: "typed tool handler panics", body: toolCall("35", "panic_typed", `{}`), status: 200, code: CodeInternalError, msg: `the tool "panic_typed" handler panicked`},
		{name: "resources/read result panics while encoding", body: req("39", "resources/read", `{"uri":"test://panic-encode"}`), status: 200, code: CodeInternalError, msg: "resources/read"},
		{name: "prompts/get result panics while encoding", body: req("39", "prompts/get", `{"name":"panic_encode"}`), status: 200, code: CodeInternalError, msg: "prompts/get"},
		{name: "_meta over its limit", body: req("51", "tools/call", `{"name":"echo","arguments":{},"_meta":{"k":"`+strings.Repeat("m", 70<<10)+`"}}`), status: 200, code: CodeInvalidParams, msg: "params._meta of"},
		{name: "_meta not an object", body: req("52", "ping", `{"_meta":5}`), status: 200, code: CodeInvalidParams, msg: "params._meta must be an object"},
		{name: "progressToken an object", body: req("53", "tools/call", `{"name":"echo","arguments":{},"_meta":{"progressToken":{"a":[1,2,3]}}}`), status: 200, code: CodeInvalidParams, msg: "progressToken must be a string or a number"},
		{name: "progressToken a boolean", body: req("54", "ping", `{"_meta":{"progressToken":true}}`), status: 200, code: CodeInvalidParams, msg: "progressToken must be a string or a number"},
		{name: "progressToken over its limit", body: req("55", "ping", `{"_meta":{"progressToken":"`+strings.Repeat("p", 1000)+`"}}`), status: 200, code: CodeInvalidParams, msg: "progressToken of 1002 bytes"},
		{name: "subscription over the state budget", body: req("56", "resources/subscribe", `{"uri":"test://`+strings.Repeat("u", 70<<10)+`"}`), status: 200, code: CodeInvalidParams, msg: "subscription refused"},
		{name: "invalid log level", body: req("36", "logging/setLevel", `{"level":"loud"}`), status: 200, code: CodeInvalidParams, msg: "loud"},
		{name: "invalid cursor", body: req("37", "tools/list", `{"cursor":"!!not-a-cursor"}`), status: 200, code: CodeInvalidParams, msg: "cursor"},

		// HTTP framing.
		{name: "wrong Content-Type", body: req("40", "ping", ""), hdr: map[string]string{"Content-Type": "text/plain"}, status: 415, code: CodeInvalidRequest, msg: `Content-Type must be application/json, got "text/plain"`},
		{name: "no Content-Type", body: req("41", "ping", ""), hdr: map[string]string{"Content-Type": ""}, status: 415, code: CodeInvalidRequest, msg: "Content-Type must be application/json, got (none)"},
		{name: "Accept without text/event-stream", body: req("42", "ping", ""), hdr: map[string]string{"Accept": "application/json"}, status: 406, code: CodeInvalidRequest, msg: "Accept must list both"},
		{name: "Accept without application/json", body: req("43", "ping", ""), hdr: map[string]string{"Accept": "text/event-stream"}, status: 406, code: CodeInvalidRequest, msg: "Accept must list both"},
		{name: "no Accept", body: req("44", "ping", ""), hdr: map[string]string{"Accept": ""}, status: 406, code: CodeInvalidRequest, msg: "got (none)"},
		{name: "GET without text/event-stream", method: http.MethodGet, hdr: map[string]string{"Accept": "application/json"}, status: 406, code: CodeInvalidRequest, msg: "Accept must list text/event-stream"},
		{name: "PUT", method: http.MethodPut, body: req("45", "ping", ""), status: 405, code: CodeInvalidRequest, msg: "method PUT is not allowed"},
		{name: "unsupported protocol version", body: req("46", "ping", ""), hdr: map[string]string{headerProtocolVersion: "1999-01-01"}, status: 400, code: CodeInvalidRequest, msg: `unsupported MCP-Protocol-Version "1999-01-01"`},
		{name: "bad Origin", body: req("47", "ping", ""), hdr: map[string]string{"Origin": "https://evil.example"}, status: 403, code: CodeInvalidRequest, msg: "Origin \"https://evil.example\" is not allowed"},
		{name: "Origin null", body: req("48", "ping", ""), hdr: map[string]string{"Origin": "null"}, status: 403, code: CodeInvalidRequest, msg: "WithAllowedOrigins"},
		{name: "bad Host", body: req("49", "ping", ""), hdr: map[string]string{"Host": "evil.example:80"}, status: 403, code: CodeInvalidRequest, msg: "Host \"evil.example:80\" is not allowed"},
		{name: "loopback-looking Host suffix", body: req("50", "ping", ""), hdr: map[string]string{"Host": "localhost.evil.example"}, status: 403, code: CodeInvalidRequest, msg: "WithAllowedHosts"},

		// Sessions and lifecycle.
		{name: "request without a session (before initialize)", session: sessionNone, body: req("60", "tools/list", ""), status: 400, code: CodeInvalidRequest, msg: "missing Mcp-Session-Id"},
		{name: "GET without a session", method: http.MethodGet, session: sessionNone, status: 400, code: CodeInvalidRequest, msg: "missing Mcp-Session-Id"},
		{name: "DELETE without a session", method: http.MethodDelete, session: sessionNone, status: 400, code: CodeInvalidRequest, msg: "missing Mcp-Session-Id"},
		// With a session, initialize has been answered: the client only skipped
		// notifications/initialized, which the server tolerates (Lifecycle, Initialization: the
		// ordering rules bind the client and the server's own requests, not the server's answers).
		{name: "request before notifications/initialized", session: sessionUninit, body: req("65", "tools/list", ""), status: 200, msg: `"name":"echo"`},
		{name: "unknown session", session: sessionUnknown, body: req("61", "ping", ""), status: 404, code: CodeInvalidRequest, msg: "send initialize to start a new one"},
		{name: "deleted session", session: sessionDeleted, body: req("62", "ping", ""), status: 404, code: CodeInvalidRequest, msg: "session not found"},
		{name: "expired session", run: runExpiredSession, status: 404, code: CodeInvalidRequest, msg: "expired or was deleted"},
		{name: "initialize twice", body: initBody, status: 400, code: CodeInvalidRequest, msg: "must not carry an Mcp-Session-Id"},
		{name: "initialize as a notification", session: sessionNone, body: `{"jsonrpc":"2.0","method":"initialize","params":{}}`, status: 400, code: CodeInvalidRequest, msg: "initialize must be a request with an id"},
		{name: "initialize with params of the wrong type", session: sessionNone, body: req("63", "initialize", `{"protocolVersion":5}`), status: 400, code: CodeInvalidParams, msg: `field "protocolVersion" must be string`},
		{name: "initialize with a clientInfo over the state budget", session: sessionNone, body: req("66", "initialize", `{"protocolVersion":"`+LatestProtocolVersion+`","capabilities":{},"clientInfo":{"name":"`+strings.Repeat("n", 1<<20)+`","version":"0"}}`), status: 400, code: CodeInvalidParams, msg: "clientInfo of 1048577 bytes exceeds"},
		{name: "initialize with an unknown version gets a counter-offer", session: sessionNone, body: req("64", "initialize", `{"protocolVersion":"1999-01-01","capabilities":{},"clientInfo":{"name":"x","version":"0"}}`), status: 200, msg: `"protocolVersion":"` + LatestProtocolVersion + `"`},

		// Resumption.
		{name: "malformed Last-Event-ID", method: http.MethodGet, hdr: map[string]string{"Last-Event-ID": "garbage"}, status: 400, code: CodeInvalidRequest, msg: "malformed Last-Event-ID"},
		{name: "Last-Event-ID of a finished stream", method: http.MethodGet, hdr: map[string]string{"Last-Event-ID": "1_1"}, status: 404, code: CodeInvalidRequest, msg: "names no stream of this session"},
		{name: "Last-Event-ID beyond what the stream sent", method: http.MethodGet, hdr: map[string]string{"Last-Event-ID": "0_999999"}, status: 404, code: CodeInvalidRequest, msg: "names no event of this stream"},
		{name: "Last-Event-ID from another session", run: runForeignLastEventID, status: 404, code: CodeInvalidRequest, msg: "names no stream of this session"},

		// The modern era (spec 2026-07-28, Streamable HTTP, Request Metadata and Server
		// Validation): no session, the request's metadata in _meta and mirrored in headers.
		{name: "modern: server/discover", session: sessionNone, body: modernReq("70", "server/discover", ""), hdr: modernHdr("server/discover", ""), status: 200, msg: `"supportedVersions":["2026-07-28","2025-11-25"`},
		{name: "modern: tools/call with every header", session: sessionNone, body: modernReq("71", "tools/call", `"name":"echo","arguments":{"x":1}`), hdr: modernHdr("tools/call", "echo"), status: 200, msg: `"resultType":"complete"`},
		{name: "modern: Mcp-Name in the Base64 sentinel form", session: sessionNone, body: modernReq("72", "tools/call", `"name":"echo","arguments":{}`), hdr: modernHdr("tools/call", "=?base64?ZWNobw==?="), status: 200, msg: `"resultType":"complete"`},
		{name: "modern: Mcp-Name does not match the body", session: sessionNone, body: modernReq("73", "tools/call", `"name":"echo","arguments":{}`), hdr: modernHdr("tools/call", "len"), status: 400, code: CodeHeaderMismatch, msg: `Mcp-Name header value "len" does not match body value "echo"`},
		{name: "modern: Mcp-Name missing", session: sessionNone, body: modernReq("74", "tools/call", `"name":"echo","arguments":{}`), hdr: modernHdr("tools/call", ""), status: 400, code: CodeHeaderMismatch, msg: "missing required Mcp-Name header"},
		{name: "modern: Mcp-Name of invalid Base64", session: sessionNone, body: modernReq("75", "resources/read", `"uri":"x:/a"`), hdr: modernHdr("resources/read", "=?base64?@@@?="), status: 400, code: CodeHeaderMismatch, msg: "not valid =?base64?"},
		{name: "modern: Mcp-Method missing", session: sessionNone, body: modernReq("76", "tools/list", ""), hdr: modernHdr("", ""), status: 400, code: CodeHeaderMismatch, msg: "missing required Mcp-Method header"},
		{name: "modern: Mcp-Method does not match the body", session: sessionNone, body: modernReq("77", "tools/list", ""), hdr: modernHdr("prompts/list", ""), status: 400, code: CodeHeaderMismatch, msg: `Mcp-Method header value "prompts/list" does not match body value "tools/list"`},
		{name: "modern: MCP-Protocol-Version missing", session: sessionNone, body: modernReq("78", "tools/list", ""), hdr: map[string]string{"Mcp-Method": "tools/list"}, status: 400, code: CodeHeaderMismatch, msg: "missing MCP-Protocol-Version header"},
		{name: "modern: MCP-Protocol-Version does not match _meta", session: sessionNone, body: modernReq("79", "tools/list", ""), hdr: map[string]string{"Mcp-Method": "tools/list", "MCP-Protocol-Version": "2025-11-25"}, status: 400, code: CodeHeaderMismatch, msg: `header value "2025-11-25" does not match`},
		{name: "modern: unsupported protocol version", session: sessionNone, body: strings.ReplaceAll(modernReq("80", "tools/list", ""), ProtocolVersion20260728, "2099-01-01"), hdr: map[string]string{"Mcp-Method": "tools/list", "MCP-Protocol-Version": "2099-01-01"}, status: 400, code: CodeUnsupportedProtocolVersion, msg: "supported: 2026-07-28, 2025-11-25"},
		{name: "modern: _meta absent", session: sessionNone, body: req("81", "tools/list", `{}`), hdr: modernHdr("tools/list", ""), status: 400, code: CodeInvalidParams, msg: "_meta[\"io.modelcontextprotocol/protocolVersion\"] is required"},
		{name: "modern: initialize naming a modern version", session: sessionNone, body: modernReq("87", "initialize", `"protocolVersion":"2026-07-28","capabilities":{},"clientInfo":{"name":"c","version":"1"}`), hdr: modernHdr("initialize", ""), status: 404, code: CodeMethodNotFound, msg: "initialize"},
		{name: "modern: _meta of the wrong type", session: sessionNone, body: req("82", "tools/list", `{"_meta":"2026-07-28"}`), hdr: modernHdr("tools/list", ""), status: 400, code: CodeInvalidParams, msg: "params._meta must be an object"},
		{name: "modern: protocolVersion of the wrong type", session: sessionNone, body: req("83", "tools/list", `{"_meta":{"io.modelcontextprotocol/protocolVersion":20260728,"io.modelcontextprotocol/clientCapabilities":{}}}`), hdr: modernHdr("tools/list", ""), status: 400, code: CodeInvalidParams, msg: "must be a non-empty string"},
		{name: "modern: clientCapabilities missing", session: sessionNone, body: req("84", "tools/list", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`), hdr: modernHdr("tools/list", ""), status: 400, code: CodeInvalidParams, msg: "clientCapabilities\"] is required"},
		{name: "modern: clientCapabilities of the wrong type", session: sessionNone, body: req("85", "tools/list", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":[]}}`), hdr: modernHdr("tools/list", ""), status: 400, code: CodeInvalidParams, msg: "must be a ClientCapabilities object"},
		{name: "modern: clientInfo of the wrong type", session: sessionNone, body: req("92", "tools/list", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":"me"}}`), hdr: modernHdr("tools/list", ""), status: 400, code: CodeInvalidParams, msg: "must be an Implementation object"},
		{name: "modern: unknown logLevel", session: sessionNone, body: req("93", "tools/list", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"loud"}}`), hdr: modernHdr("tools/list", ""), status: 400, code: CodeInvalidParams, msg: `unknown logging level "loud"`},
		{name: "modern: inputResponses of the wrong type", session: sessionNone, body: modernReq("94", "tools/call", `"name":"echo","arguments":{},"inputResponses":[1]`), hdr: modernHdr("tools/call", "echo"), status: 400, code: CodeInvalidParams, msg: "invalid params"},
		{name: "modern: unknown method", session: sessionNone, body: modernReq("86", "tools/frobnicate", ""), hdr: modernHdr("tools/frobnicate", ""), status: 404, code: CodeMethodNotFound, msg: "tools/frobnicate"},
		{name: "modern: a session-era method", session: sessionNone, body: modernReq("87", "logging/setLevel", `"level":"debug"`), hdr: modernHdr("logging/setLevel", ""), status: 404, code: CodeMethodNotFound, msg: "is not a method of MCP 2026-07-28"},
		{name: "modern: a response with a resultType from the client", session: sessionNone, body: `{"jsonrpc":"2.0","id":88,"result":{"resultType":"complete"}}`, hdr: modernHdr("", ""), status: 400, code: CodeInvalidRequest, msg: "a client sends no JSON-RPC responses"},
		{name: "modern: session headers are ignored", body: modernReq("89", "tools/list", ""), hdr: modernHdr("tools/list", ""), status: 200, msg: `"resultType":"complete"`},
		{name: "modern: tampered requestState", session: sessionNone, body: modernReq("90", "tools/call", `"name":"echo","arguments":{},"requestState":"e30.AAAA"`), hdr: modernHdr("tools/call", "echo"), status: 400, code: CodeInvalidParams, msg: "invalid requestState"},
		{name: "modern: GET", method: http.MethodGet, session: sessionNone, hdr: modernHdr("", ""), status: 405, code: CodeInvalidRequest, msg: "use subscriptions/listen"},
		{name: "modern: DELETE", method: http.MethodDelete, session: sessionNone, hdr: modernHdr("", ""), status: 405, code: CodeInvalidRequest, msg: "there are no sessions"},
		{name: "modern: subscriptions/listen without a filter", session: sessionNone, body: modernReq("91", "subscriptions/listen", ""), hdr: modernHdr("subscriptions/listen", ""), status: 400, code: CodeInvalidParams, msg: "needs params.notifications"},
	}
}

// modernReq returns a modern-era request whose params are members (without braces) and the
// request metadata in _meta.
func modernReq(id, method, members string) string {
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"hostile","version":"0"}}`
	if members != "" {
		meta = members + "," + meta
	}
	return req(id, method, "{"+meta+"}")
}

// modernHdr returns the headers of a modern request: MCP-Protocol-Version, and Mcp-Method and
// Mcp-Name when not empty.
func modernHdr(method, name string) map[string]string {
	h := map[string]string{"MCP-Protocol-Version": ProtocolVersion20260728}
	if method != "" {
		h["Mcp-Method"] = method
	}
	if name != "" {
		h["Mcp-Name"] = name
	}
	return h
}

// runDuplicateID sends a request that blocks, then another with the same ID while the first
// is in flight. The first one is then released and must still get its own answer.
// runBatch returns a run function that sends body on a new session that negotiated
// 2025-03-26, the version that has batches.
func runBatch(body string) func(t *testing.T, e *hardenEnv) *hardenResp {
	return func(t *testing.T, e *hardenEnv) *hardenResp {
		r, err := e.send(e.ctx(), http.MethodPost, "", req("1", "initialize", `{"protocolVersion":"`+ProtocolVersion20250326+`","capabilities":{},"clientInfo":{"name":"hostile","version":"0"}}`), nil)
		require.Falsef(t, err != nil || r.status != http.StatusOK, "initialize: %v %s", err, dump(r))
		sid := r.header.Get(headerSessionID)
		noVersion := map[string]string{headerProtocolVersion: ""} // 2025-03-26 had no such header
		if r, err := e.send(e.ctx(), http.MethodPost, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, noVersion); err != nil || r.status != http.StatusAccepted {
			require.Fail(t, fmt.Sprintf("notifications/initialized: %v %s", err, dump(r)))
		}
		r, err = e.send(e.ctx(), http.MethodPost, sid, body, noVersion)
		require.NoError(t, err, "batch")
		return r
	}
}

func runDuplicateID(t *testing.T, e *hardenEnv) *hardenResp {
	body := toolCall(`"dup"`, "block", `{"tag":"dup"}`)
	first := make(chan *hardenResp, 1)
	go func() {
		r, err := e.send(e.ctx(), http.MethodPost, e.sid, body, nil)
		assert.NoError(t, err, "first request")
		first <- r
	}()
	select {
	case <-e.ctl.started:
	case <-time.After(10 * time.Second):
		require.Fail(t, "the blocking tool did not start")
	}
	r, err := e.send(e.ctx(), http.MethodPost, e.sid, toolCall(`"dup"`, "echo", `{}`), nil)
	require.NoError(t, err)
	e.ctl.open()
	select {
	case f := <-first:
		assert.Falsef(t, f == nil || f.status != 200 || f.msg == nil || !bytes.Contains(f.msg.Result, []byte("released dup")), "the first request did not get its own answer: %s", dump(f))
	case <-time.After(10 * time.Second):
		require.Fail(t, "the first request never finished")
	}
	return r
}

// runExpiredSession starts a session on a server with a short idle timeout and waits until
// the server has reaped it.
func runExpiredSession(t *testing.T, _ *hardenEnv) *hardenResp {
	short := newHardenEnv(t, WithSessionIdleTimeout(50*time.Millisecond))
	// Requests would keep the session alive: watch the server's table instead.
	ok := waitFor(10*time.Second, func() bool {
		short.srv.mu.RLock()
		defer short.srv.mu.RUnlock()
		return short.srv.sessions[short.sid] == nil
	})
	require.True(t, ok, "the idle session was never reaped")
	r, err := short.send(short.ctx(), http.MethodPost, short.sid, req("1", "ping", ""), nil)
	require.NoError(t, err)
	// The same server still takes a new session.
	short.mustWork(short.initialize())
	return r
}

// runForeignLastEventID leaves a stream of another session with an undelivered event, then
// tries to resume it from the main session with that stream's event ID.
func runForeignLastEventID(t *testing.T, e *hardenEnv) *hardenResp {
	other := e.initialize()
	// A call on the other session whose connection drops after its first event: the server
	// keeps the stream (and the event store its events) for that session to resume.
	ctx, cancel := context.WithCancel(e.ctx())
	done := make(chan string, 1)
	go func() {
		hreq, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.url, strings.NewReader(toolCall("1", "notify_block", `{"tag":"other"}`)))
		hreq.Header.Set("Content-Type", "application/json")
		hreq.Header.Set("Accept", "application/json, text/event-stream")
		hreq.Header.Set(headerSessionID, other)
		resp, err := e.hc.Do(hreq)
		if err != nil {
			done <- ""
			return
		}
		defer resp.Body.Close()
		// Read until the log event, remember its ID.
		sc := bufio.NewScanner(resp.Body)
		id := ""
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
				id = v
			}
			if strings.Contains(sc.Text(), "secret-of-other") {
				break
			}
		}
		done <- id
	}()
	var eventID string
	select {
	case <-e.ctl.started:
	case <-time.After(10 * time.Second):
		require.Fail(t, "notify_block did not start")
	}
	select {
	case eventID = <-done:
	case <-time.After(10 * time.Second):
		require.Fail(t, "no event from notify_block")
	}
	cancel()
	require.False(t, eventID == "", "notify_block's event had no ID")
	// The main session asks for that stream, from before its first event.
	streamID, _, _ := parseEventID(eventID)
	r, err := e.send(e.ctx(), http.MethodGet, e.sid, "", map[string]string{"Last-Event-ID": streamID + "_0"})
	require.NoError(t, err)
	require.Falsef(t, bytes.Contains(r.body, []byte("secret-of-other")), "an event of another session was replayed: %s", r.body)
	// The owner can still resume it and gets the event, then the response once released.
	rch := make(chan *hardenResp, 1)
	go func() {
		rr, _ := e.send(e.ctx(), http.MethodGet, other, "", map[string]string{"Last-Event-ID": streamID + "_0"})
		rch <- rr
	}()
	e.ctl.open()
	select {
	case rr := <-rch:
		assert.Falsef(t, rr == nil || !bytes.Contains(rr.body, []byte("secret-of-other")) || rr.msg == nil, "the owning session could not resume its stream: %s", dump(rr))
	case <-time.After(10 * time.Second):
		require.Fail(t, "the owner's resumption never finished")
	}
	return r
}

// TestHostileInputs sends each hostile input to a real server on loopback and checks the
// exact answer; after each, a ping and a tool call on the main session must still succeed.
func TestHostileInputs(t *testing.T) {
	t.Parallel()
	cases := hostileCases()
	require.Falsef(t, len(cases) < 40, "the table has %d rows; it must keep at least 40", len(cases))
	e := newHardenEnv(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var r *hardenResp
			if tc.run != nil {
				r = tc.run(t, e)
			} else {
				sid := e.sid
				switch tc.session {
				case sessionNone:
					sid = ""
				case sessionUnknown:
					sid = "0123456789abcdef0123456789abcdef"
				case sessionUninit:
					r, err := e.send(e.ctx(), http.MethodPost, "", req("1", "initialize", `{"protocolVersion":"`+LatestProtocolVersion+`","capabilities":{},"clientInfo":{"name":"x","version":"0"}}`), nil)
					require.Falsef(t, err != nil || r.status != 200, "initialize: %v %s", err, dump(r))
					sid = r.header.Get(headerSessionID)
				case sessionDeleted:
					sid = e.initialize()
					d, err := e.send(e.ctx(), http.MethodDelete, sid, "", nil)
					require.Falsef(t, err != nil || d.status != http.StatusOK, "DELETE: %v %s", err, dump(d))
				}
				method := tc.method
				if method == "" {
					method = http.MethodPost
				}
				var err error
				r, err = e.send(e.ctx(), method, sid, tc.body, tc.hdr)
				require.NoError(t, err, "request failed")
			}
			checkHostile(t, tc, r)
			e.mustWork(e.sid)
		})
	}
	if t.Failed() {
		t.Logf("server log:\n%s", truncate(e.log.String(), 8000))
	}
}

func checkHostile(t *testing.T, tc hostileCase, r *hardenResp) {
	t.Helper()
	require.False(t, r == nil, "no response")
	require.Falsef(t, r.status != tc.status, "HTTP status %d, want %d: %s", r.status, tc.status, dump(r))
	if tc.status == http.StatusAccepted {
		require.Falsef(t, len(r.body) != 0, "202 with a body: %s", dump(r))
		return
	}
	require.Falsef(t, r.msg == nil, "no JSON-RPC message in the answer: %s", dump(r))
	require.Falsef(t, r.msg.JSONRPC != "2.0", "answer without jsonrpc 2.0: %s", dump(r))
	switch {
	case tc.code != 0:
		require.Falsef(t, r.msg.Error == nil, "want JSON-RPC error %d, got a result: %s", tc.code, dump(r))
		require.Falsef(t, r.msg.Error.Code != tc.code, "JSON-RPC error code %d, want %d: %s", r.msg.Error.Code, tc.code, dump(r))
		require.Containsf(t, r.msg.Error.Message, tc.msg, "error message %q does not contain %q", truncate(r.msg.Error.Message, 300), truncate(tc.msg, 100))
		require.Falsef(t, len(r.msg.Error.Message) > 1024, "error message of %d bytes: unbounded echo of the input", len(r.msg.Error.Message))
	case tc.isError:
		res, err := toolResult(r)
		require.NoErrorf(t, err, "want a tool error result: %v: %s", err, dump(r))
		require.Truef(t, res.IsError, "want isError: %s", dump(r))
		require.Containsf(t, res.Text(), tc.msg, "tool error %q does not contain %q", truncate(res.Text(), 300), tc.msg)
	default:
		if r.msg.Error != nil {
			require.Fail(t, fmt.Sprintf("want a result, got error %d %s", r.msg.Error.Code, r.msg.Error.Message))
		}
		require.Containsf(t, string(r.msg.Result), tc.msg, "result %s does not contain %q", truncate(string(r.msg.Result), 300), tc.msg)
	}
}

// withEvictionGrace sets the grace period of new sessions in a full session table.
func withEvictionGrace(d time.Duration) ServerOption {
	return serverOptionFunc(func(c *serverConfig) { c.evictionGrace = d })
}

// floodClient is an HTTP client whose connections come from addr, another loopback address
// than the test's clients': the server sees another holder (sessions.go).
func floodClient(addr string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(addr)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 16}}
}

// floodPost POSTs body with hc, on session sid when not empty, and returns the status and
// the session ID answered.
func floodPost(ctx context.Context, hc *http.Client, url, sid, body string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set(headerSessionID, sid)
		req.Header.Set(headerProtocolVersion, LatestProtocolVersion)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get(headerSessionID), nil
}

// delayTransport delays every request by delay before sending it.
type delayTransport struct {
	rt    http.RoundTripper
	delay time.Duration
}

func (d delayTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t := time.NewTimer(d.delay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
		return nil, r.Context().Err()
	}
	return d.rt.RoundTrip(r)
}

// A flood of fully initialized sessions at the session cap (initialize, then
// notifications/initialized, then one request, in a loop, from one address) does not lock
// other clients out: the flood churns through its own sessions, and a newcomer's session is
// safe while its handshake completes. Our client, from another address, connects and calls
// a tool while the flood runs.
func TestHostileSessionFlood(t *testing.T) {
	const max, attempts = 30, 40
	e := newHardenEnv(t, WithMaxSessions(max))
	leaks := goleak.IgnoreCurrent()
	attacker := floodClient("127.0.0.2")
	defer attacker.CloseIdleConnections()
	ctx, stop := context.WithCancel(e.ctx())
	defer stop()
	initBody := req("1", "initialize", `{"protocolVersion":"`+LatestProtocolVersion+`","capabilities":{},"clientInfo":{"name":"flood","version":"0"}}`)
	var (
		wg      sync.WaitGroup
		started atomic.Int64 // sessions the flood started
	)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				status, sid, err := floodPost(ctx, attacker, e.url, "", initBody)
				if err != nil || status != http.StatusOK {
					continue
				}
				started.Add(1)
				_, _, _ = floodPost(ctx, attacker, e.url, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
				_, _, _ = floodPost(ctx, attacker, e.url, sid, req("2", "tools/list", `{}`))
			}
		}()
	}
	require.True(t, waitFor(10*time.Second, func() bool { return e.tableSize() >= max }), "the flood did not fill the session table")
	// The newcomers are farther away than the flood: each of their requests takes 20 ms more
	// to arrive, as across a network, so that their half-open sessions are older than the
	// flood's when it needs room.
	distant := delayTransport{rt: DefaultTransport(), delay: 20 * time.Millisecond}
	before := started.Load()
	ok := 0
	var failures []string
	for i := range attempts {
		c := NewClient(e.url, WithEra(EraLegacy), WithHTTPClient(&http.Client{Transport: distant}))
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := c.CallTool(cctx, "echo", json.RawMessage(`{"n":`+strconv.Itoa(i)+`}`))
		cancel()
		if err == nil {
			ok++
		} else {
			failures = append(failures, err.Error())
		}
		_ = c.Close(context.Background())
	}
	during := started.Load() - before
	stop()
	wg.Wait()
	require.GreaterOrEqualf(t, ok*100, attempts*95, "%d of %d newcomers connected during the flood; failures: %q", ok, attempts, failures)
	require.Positivef(t, during, "the flood started no session while the newcomers connected: it did not run alongside them")
	t.Logf("%d of %d newcomers connected while the flood started %d sessions", ok, attempts, during)
	e.mustWork(e.sid) // the established session of the test's own address, idle in between
	attacker.CloseIdleConnections()
	distant.rt.(*http.Transport).CloseIdleConnections()
	goleak.VerifyNone(t, leaks)
}

// The eviction policy, step by step: at the cap, a newcomer of the holder with the most
// sessions churns through its own sessions past their grace period, never another holder's
// half-open session however old; a newcomer of a lighter holder evicts the heaviest holder's,
// even young ones; and a holder's own young sessions are safe from its newcomers.
func TestSessionEvictionPolicy(t *testing.T) {
	srv := NewServer(Implementation{Name: "evict", Version: "1"}, WithMaxSessions(4), withEvictionGrace(time.Hour))
	defer func() { _ = srv.Shutdown(context.Background()) }()
	flood, alice := holder{addr: "10.0.0.2"}, holder{addr: "10.0.0.1"}
	add := func(h holder) *session {
		return srv.addSession(&InitializeParams{ClientInfo: Implementation{Name: "c"}}, LatestProtocolVersion, nil, h, nil)
	}
	has := func(sess *session) bool {
		srv.mu.RLock()
		defer srv.mu.RUnlock()
		return srv.sessions[sess.id] == sess
	}
	a := add(alice) // half-open, the oldest
	var fs []*session
	for range 3 {
		fs = append(fs, add(flood))
	}
	// The table is full of young sessions: the flood's newcomer may not end its own, nor
	// alice's, which holds fewer.
	require.True(t, add(flood) == nil, "a flood's newcomer got a session in a table of young ones")
	require.True(t, has(a), "the flood evicted another holder's half-open session")
	// Past their grace period, the flood's sessions are what its newcomers evict: the oldest
	// half-open one first; alice's, older still, stays.
	for _, f := range fs {
		f.created -= int64(2 * time.Hour)
	}
	a.created -= int64(3 * time.Hour)
	f4 := add(flood)
	require.NotNil(t, f4, "the flood's newcomer found no session of its own to evict")
	require.True(t, has(a), "the flood evicted another holder's half-open session")
	require.False(t, has(fs[0]), "the flood's oldest session was not the one evicted")
	// A newcomer of a lighter holder evicts the heaviest holder's, even a young one (f4).
	for _, f := range fs[1:] {
		f.established.Store(true)
	}
	b := add(holder{addr: "10.0.0.3"})
	require.NotNil(t, b, "a newcomer of another holder was refused")
	require.True(t, has(a), "alice's session was evicted for a newcomer")
	require.True(t, !has(f4) || !has(fs[1]) || !has(fs[2]), "no session of the flood was evicted")
	for _, sess := range []*session{a, b, fs[1], fs[2], f4} {
		sess.end()
	}
}

// Our client tries the handshake once more when the server ended the new session before its
// notifications/initialized arrived (404), as a full session table may; not twice.
func TestClientHandshakeRetry(t *testing.T) {
	for _, evictions := range []int{1, 2} {
		e := newHardenEnv(t)
		var mu sync.Mutex
		inits, left := 0, evictions
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			mu.Lock()
			if bytes.Contains(body, []byte(`"initialize"`)) {
				inits++
			}
			evict := left > 0 && bytes.Contains(body, []byte(`notifications/initialized`))
			if evict {
				left--
			}
			mu.Unlock()
			if evict {
				http.Error(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"session not found"}}`, http.StatusNotFound)
				return
			}
			e.srv.ServeHTTP(w, r)
		})
		hs := httptest.NewServer(h)
		c := NewClient(hs.URL, WithEra(EraLegacy))
		err := c.Connect(e.ctx())
		_ = c.Close(context.Background())
		hs.Close()
		mu.Lock()
		n := inits
		mu.Unlock()
		if evictions == 1 {
			require.NoError(t, err, "the handshake was not tried again after one eviction")
			require.Equal(t, 2, n, "initializes sent")
		} else {
			require.Error(t, err, "the handshake was tried more than twice")
			require.Equal(t, 2, n, "initializes sent")
		}
	}
}

// session returns the server's session sid.
func (e *hardenEnv) session(sid string) *session {
	e.srv.mu.RLock()
	defer e.srv.mu.RUnlock()
	return e.srv.sessions[sid]
}

// bigAnswer calls echo with an argument of n bytes on session sid, SSE answers being on, reads
// its answer whole, and returns its priming event's ID: resuming from it replays the answer,
// an event of about n bytes, from the event store once the stream has ended.
func (e *hardenEnv) bigAnswer(sid string, n int) string {
	e.t.Helper()
	r, err := e.send(e.ctx(), http.MethodPost, sid, toolCall(strconv.Itoa(e.id()), "echo", `{"s":"`+strings.Repeat("a", n)+`"}`), nil)
	require.NoError(e.t, err)
	require.Equalf(e.t, http.StatusOK, r.status, "echo: %s", dump(r))
	first, _, _ := bytes.Cut(r.body, []byte("\n"))
	id, ok := strings.CutPrefix(string(first), "id: ")
	require.Truef(e.t, ok, "the answer does not start with a priming event: %.100q", r.body)
	return id
}

// resumeUnread sends GET with Last-Event-ID last on session sid with hc and returns the
// response once its headers are in, its body unread.
func (e *hardenEnv) resumeUnread(ctx context.Context, hc *http.Client, sid, last string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set(headerSessionID, sid)
	req.Header.Set(headerProtocolVersion, LatestProtocolVersion)
	req.Header.Set(headerLastEventID, last)
	return hc.Do(req)
}

// Resumptions of a stream that ended do not pin memory each: 60 GETs resuming a finished
// stream whose answer is one 8 MiB event, none of them reading, share one replay (the newest
// takes over and the others' connections are closed), the replay is charged to the session's
// budget while it holds the event, and a resumption that finally reads gets the whole event,
// once. Memory is measured by the budgets' own counters and the event store's.
func TestHostileReplayPinning(t *testing.T) {
	const size, resumers = 8 << 20, 60
	store := NewMemoryEventStore(0)
	e := newHardenEnv(t, WithSSEResponses(), WithMaxBodyBytes(10<<20), WithEventStore(store))
	leaks := goleak.IgnoreCurrent()
	last := e.bigAnswer(e.sid, size)
	sess := e.session(e.sid)
	require.NotNil(t, sess)
	base := sess.held.Load()

	var (
		stop                                   = make(chan struct{})
		sampled                                sync.WaitGroup
		peakHeld, peakServer, peakStore, peakN atomic.Int64
	)
	sampled.Add(1)
	go func() { // the peaks of what the session, the server and the store hold
		defer sampled.Done()
		for {
			peakHeld.Store(max(peakHeld.Load(), sess.held.Load()-base))
			peakServer.Store(max(peakServer.Load(), e.srv.held.Load()))
			store.mu.Lock()
			peakStore.Store(max(peakStore.Load(), int64(store.total)))
			store.mu.Unlock()
			sess.mu.Lock()
			peakN.Store(max(peakN.Load(), int64(len(sess.replays))))
			sess.mu.Unlock()
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	tr := &http.Transport{MaxIdleConnsPerHost: resumers, DialContext: smallWindowDialer().DialContext}
	hc := &http.Client{Transport: tr}
	ctx := e.ctx()
	resps := make([]*http.Response, resumers)
	var wg sync.WaitGroup
	for i := range resumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// An error: a newer resumption took the stream over before this one's
			// headers went out, and its connection was closed.
			if r, err := e.resumeUnread(ctx, hc, e.sid, last); err == nil {
				resps[i] = r
			}
		}()
	}
	wg.Wait()
	refused := 0
	for _, r := range resps {
		if r == nil {
			continue
		}
		switch r.StatusCode {
		case http.StatusOK:
		case http.StatusTooManyRequests: // overlapping takeovers: each charged the event
			b, _ := io.ReadAll(r.Body)
			r.Body.Close()
			assert.Containsf(t, string(b), "resumption refused: this session holds", "a refused resumption's message")
			refused++
		default:
			assert.Failf(t, "resumption answered", "%s", r.Status)
		}
	}
	// One more resumption, which reads: it takes over, and gets the event whole, once.
	r, err := e.resumeUnread(ctx, hc, e.sid, last)
	require.NoError(t, err)
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	require.NoError(t, err)
	data := sseData(body)
	require.Lenf(t, data, 1, "events replayed to the resumption that read")
	require.Greater(t, len(data[0]), size, "the replayed event was cut")
	// The 60 that did not read lost the stream to a newer resumption: their connections were
	// closed mid-event, so reading them now gets what the kernel's buffers held (less than the
	// event) and ends, where replays of their own would each deliver the whole event.
	for i, r := range resps {
		if r == nil || r.StatusCode != http.StatusOK {
			continue
		}
		done := make(chan []byte, 1)
		go func() { b, _ := io.ReadAll(r.Body); done <- b }()
		select {
		case b := <-done:
			for _, d := range sseData(b) { // a cut event's data line is in it, unfinished
				assert.Lessf(t, len(d), size, "resumption %d, taken over, still got the whole event", i)
			}
		case <-time.After(10 * time.Second):
			require.Failf(t, "a replay still runs", "resumption %d was not taken over", i)
		}
		r.Body.Close()
	}
	close(stop)
	sampled.Wait()
	t.Logf("peaks: session %d bytes, server %d, store %d, replays %d; %d of %d resumptions refused", peakHeld.Load(), peakServer.Load(), peakStore.Load(), peakN.Load(), refused, resumers)
	assert.LessOrEqual(t, peakHeld.Load(), int64(defaultSessionBudget), "the session's replays went over its budget")
	assert.LessOrEqual(t, peakHeld.Load(), int64(size+2*sseChunk), "replays held more than one event at a time")
	assert.LessOrEqual(t, peakStore.Load(), int64(16<<20), "the event store went over its bound")
	assert.LessOrEqual(t, peakN.Load(), int64(1), "replays of one stream at once")
	require.True(t, waitFor(5*time.Second, func() bool { return sess.held.Load() == base }), "the replays' bytes were not released: %d held", sess.held.Load()-base)
	tr.CloseIdleConnections()
	goleak.VerifyNone(t, leaks)
}

// smallWindowDialer dials connections whose receive buffer is 64 KiB, without the kernel's
// autotuning: a client that does not read then holds no more than that in its kernel, as
// across a network, where on loopback the kernel would read megabytes for it.
func smallWindowDialer() *net.Dialer {
	return &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 64<<10)
		}); err != nil {
			return err
		}
		return serr
	}}
}

// A resumption whose replay would take the session over its memory budget is refused with 429
// and a message that says what to do, before anything is written; the replay that holds the
// budget is not disturbed, and once it is read, resuming works again.
func TestHostileReplayRefused(t *testing.T) {
	const size = 6 << 20
	e := newHardenEnv(t, WithSSEResponses(), WithMaxBodyBytes(8<<20), WithSessionBudget(10<<20),
		WithEventStore(NewMemoryEventStore(32<<20)))
	first, second := e.bigAnswer(e.sid, size), e.bigAnswer(e.sid, size)
	tr := &http.Transport{DialContext: smallWindowDialer().DialContext}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	pinned, err := e.resumeUnread(e.ctx(), hc, e.sid, first) // not read: its replay holds 6 MiB
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, pinned.StatusCode)
	r, err := e.send(e.ctx(), http.MethodGet, e.sid, "", map[string]string{headerLastEventID: second})
	require.NoError(t, err)
	checkHostile(t, hostileCase{status: 429, code: CodeInvalidRequest, msg: "resumption refused: this session holds"}, r)
	require.Contains(t, string(r.body), "close the resumptions it no longer reads")
	require.Equal(t, "1", r.header.Get("Retry-After"))
	b, err := io.ReadAll(pinned.Body) // read at last: the replay ends and lets go
	pinned.Body.Close()
	require.NoError(t, err)
	require.Len(t, sseData(b), 1)
	r, err = e.send(e.ctx(), http.MethodGet, e.sid, "", map[string]string{headerLastEventID: second})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, r.status, "resuming once the budget has room")
	require.Len(t, r.events, 1)
}

// maxWriteRecorder records an HTTP response and the size of its largest write.
type maxWriteRecorder struct {
	*httptest.ResponseRecorder
	largest int
}

func (m *maxWriteRecorder) Write(p []byte) (int, error) {
	m.largest = max(m.largest, len(p))
	return m.ResponseRecorder.Write(p)
}

// A large event goes out sseChunk bytes at a time, straight from the caller's copy: the
// writer's buffer never holds it whole, and the bytes on the wire are those of event.
func TestSSEWriterChunksLargeEvents(t *testing.T) {
	data := bytes.Repeat([]byte("x"), 5*sseChunk+123)
	rec := &maxWriteRecorder{ResponseRecorder: httptest.NewRecorder()}
	sw := newSSEWriter(context.Background(), rec, time.Minute)
	sw.header()
	require.NoError(t, sw.eventChunked("7", 3, data))
	sw.event("7", 4, []byte("small"))
	require.NoError(t, sw.flush(true))
	require.LessOrEqual(t, rec.largest, sseChunk, "the largest write")
	require.LessOrEqual(t, cap(sw.buf), 4*sseChunk, "the writer's buffer")
	want := "event: message\nid: 7_3\ndata: " + string(data) + "\n\nevent: message\nid: 7_4\ndata: small\n\n"
	require.Equal(t, want, rec.Body.String())
}

// A handler that sends 4,000 log notifications of 64 KiB to a client that never reads: what
// the session holds stays within its budget (the sends past it fail), not a count of events,
// and once the connection dies the queue's bytes are released at once (the queue moves to the
// event store, within the store's bound, for a resumption, until the retention period ends).
// Memory is measured by the budget's and the store's own counters.
func TestHostileLogFloodToStuckClient(t *testing.T) {
	const n, size, budget = 4000, 64 << 10, 16 << 20
	store := NewMemoryEventStore(0)
	e := newHardenEnv(t, WithSessionBudget(budget), WithEventStore(store), WithEventRetention(time.Second))
	leaks := goleak.IgnoreCurrent()
	sess := e.session(e.sid)
	base := sess.held.Load()
	var (
		stop                 = make(chan struct{})
		sampled              sync.WaitGroup
		peakHeld, peakStored atomic.Int64
	)
	sampled.Add(1)
	go func() {
		defer sampled.Done()
		for {
			peakHeld.Store(max(peakHeld.Load(), sess.held.Load()-base))
			store.mu.Lock()
			peakStored.Store(max(peakStored.Load(), int64(store.total)))
			store.mu.Unlock()
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	conn, err := smallWindowDialer().Dial("tcp", e.hs.Listener.Addr().String())
	require.NoError(t, err)
	body := toolCall("1", "logflood", fmt.Sprintf(`{"n":%d,"size":%d,"tag":"flood"}`, n, size))
	_, err = fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n%s: %s\r\n%s: %s\r\nContent-Length: %d\r\n\r\n%s",
		e.hs.Listener.Addr(), headerSessionID, e.sid, headerProtocolVersion, LatestProtocolVersion, len(body), body)
	require.NoError(t, err)
	select { // the handler sent them all (most failed: the budget is spent)
	case <-e.ctl.started:
	case <-time.After(2 * time.Minute):
		require.Fail(t, "the flooding handler did not finish")
	}
	// Its response is queued too (what a handler sends after the connection died would wait
	// in the queue, within the budget, for a resumption).
	require.True(t, waitFor(10*time.Second, func() bool { return e.runningHandlers() == 0 }), "the handler never returned")
	held := sess.held.Load() - base
	require.NoError(t, conn.Close()) // the client goes away without reading
	require.Truef(t, waitFor(10*time.Second, func() bool { return sess.held.Load() == base }), "the queued bytes were not released when the connection died: %d held", sess.held.Load()-base)
	require.Truef(t, waitFor(10*time.Second, func() bool {
		store.mu.Lock()
		defer store.mu.Unlock()
		return store.total == 0
	}), "the stream's stored events were not forgotten after the retention period")
	close(stop)
	sampled.Wait()
	t.Logf("peaks: session %d KiB, event store %d KiB; %d KiB held when the handler returned", peakHeld.Load()>>10, peakStored.Load()>>10, held>>10)
	require.LessOrEqualf(t, peakHeld.Load(), int64(budget+size), "the session held %d bytes, over its budget", peakHeld.Load())
	require.LessOrEqualf(t, peakStored.Load(), int64(16<<20), "the event store held %d bytes, over its bound", peakStored.Load())
	e.mustWork(e.sid)
	goleak.VerifyNone(t, leaks)
}
