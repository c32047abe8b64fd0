package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
)

// The tests in this file send JSON-RPC batches over loopback HTTP, as raw requests: batches
// are accepted on sessions that negotiated 2025-03-26 (Base Protocol, Batching) and refused on
// later ones.

// batchEnv is a server with the tools the batch tests call, and the channels they wait on.
type batchEnv struct {
	ts      *testServer
	gate    chan struct{} // closed by the "gate" tool
	release chan struct{} // closed by the test, for the "logger" tool
	once    sync.Once
}

func newBatchEnv(t *testing.T, opts ...ServerOption) *batchEnv {
	t.Helper()
	e := &batchEnv{ts: newTestServer(t, opts...), gate: make(chan struct{}), release: make(chan struct{})}
	srv := e.ts.srv
	text := func(s string) *CallToolResult { return &CallToolResult{Content: []Content{TextContent(s)}} }
	srv.AddTool(ToolSpec{Name: "gate", Description: "opens the gate the slow tool waits for"}, func(context.Context, *CallToolRequest) (*CallToolResult, error) {
		e.once.Do(func() { close(e.gate) })
		return text("gate"), nil
	})
	srv.AddTool(ToolSpec{Name: "slow", Description: "waits for the gate tool"}, func(ctx context.Context, _ *CallToolRequest) (*CallToolResult, error) {
		select {
		case <-e.gate:
			return text("slow"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	srv.AddTool(ToolSpec{Name: "logger", Description: "logs, then waits for the test"}, func(ctx context.Context, _ *CallToolRequest) (*CallToolResult, error) {
		if err := CallerFrom(ctx).Log(ctx, LevelInfo, "batch", "working"); err != nil {
			return nil, err
		}
		select {
		case <-e.release:
			return text("logged"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	srv.AddTool(ToolSpec{Name: "ask", Description: "asks the client for its roots"}, func(ctx context.Context, _ *CallToolRequest) (*CallToolResult, error) {
		res, err := CallerFrom(ctx).ListRoots(ctx)
		if err != nil {
			return nil, err
		}
		return text(fmt.Sprintf("%d roots", len(res.Roots))), nil
	})
	return e
}

// session starts a session that negotiates version, with the roots capability.
func (e *batchEnv) session(ctx context.Context, t *testing.T, version string) string {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"` + version +
		`","capabilities":{"roots":{}},"clientInfo":{"name":"batch-test","version":"0"}}}`
	resp := e.ts.do(ctx, t, rawReq{body: body})
	b := readBody(t, resp)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"protocolVersion":"`+version+`"`) {
		t.Fatalf("initialize %s: %s %s", version, resp.Status, b)
	}
	sid := resp.Header.Get("Mcp-Session-Id")
	resp = e.ts.do(ctx, t, e.post(sid, version, `{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	readBody(t, resp)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %s", resp.Status)
	}
	return sid
}

// post is a POST on session sid as a client of version sends it: 2025-03-26 had no
// MCP-Protocol-Version header.
func (e *batchEnv) post(sid, version, body string) rawReq {
	h := map[string]string{"MCP-Protocol-Version": version}
	if version == ProtocolVersion20250326 {
		h["MCP-Protocol-Version"] = ""
	}
	return rawReq{session: sid, body: body, header: h}
}

// byID indexes responses by their id's JSON text.
func byID(t *testing.T, msgs []rpcResponse) map[string]rpcResponse {
	t.Helper()
	out := make(map[string]rpcResponse, len(msgs))
	for _, m := range msgs {
		if _, dup := out[string(m.ID)]; dup {
			t.Fatalf("two responses with id %s", m.ID)
		}
		out[string(m.ID)] = m
	}
	return out
}

// decodeBatch decodes a JSON array of responses.
func decodeBatch(t *testing.T, b []byte) []rpcResponse {
	t.Helper()
	var msgs []rpcResponse
	if err := json.Unmarshal(b, &msgs); err != nil {
		t.Fatalf("the answer is not a JSON array of messages: %v: %s", err, truncate(string(b), 500))
	}
	for _, m := range msgs {
		if m.JSONRPC != "2.0" {
			t.Fatalf("a member without jsonrpc 2.0: %s", b)
		}
	}
	return msgs
}

func keys(m map[string]rpcResponse) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestBatchRequests sends a batch of three requests, the first of which waits for the third:
// run one after another, the batch could not finish. The answer is one JSON array holding the
// three responses.
func TestBatchRequests(t *testing.T) {
	e := newBatchEnv(t)
	ctx := testCtx(t)
	sid := e.session(ctx, t, ProtocolVersion20250326)
	body := `[` + wireToolCall("1", "slow", "") + `,` + req("2", "ping", "") + `,` + wireToolCall("3", "gate", "") + `]`
	resp := e.ts.do(ctx, t, e.post(sid, ProtocolVersion20250326, body))
	b := readBody(t, resp)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("batch: %s %s: %s", resp.Status, resp.Header.Get("Content-Type"), b)
	}
	got := byID(t, decodeBatch(t, b))
	if len(got) != 3 {
		t.Fatalf("responses for ids %v, want 1, 2 and 3: %s", keys(got), b)
	}
	for id, want := range map[string]string{"1": "slow", "3": "gate"} {
		r := got[id]
		if r.Error != nil || resultText(t, r.Result) != want {
			t.Fatalf("response %s: %s", id, b)
		}
	}
	if r := got["2"]; r.Error != nil || string(r.Result) != "{}" {
		t.Fatalf("ping's response: %s", b)
	}
	// The session serves single messages as before.
	resp = e.ts.do(ctx, t, e.post(sid, ProtocolVersion20250326, req("4", "ping", "")))
	if b := readBody(t, resp); resp.StatusCode != http.StatusOK || decodeRPC(t, b).Error != nil {
		t.Fatalf("ping after the batch: %s %s", resp.Status, b)
	}
}

// TestBatchStreams sends a batch whose first request logs and then waits: the answer becomes
// an SSE stream that carries the log message and the other request's response while the
// first still runs (the test releases it only after reading them), then the first's response.
func TestBatchStreams(t *testing.T) {
	e := newBatchEnv(t)
	ctx := testCtx(t)
	sid := e.session(ctx, t, ProtocolVersion20250326)
	body := `[` + wireToolCall("1", "logger", "") + `,` + wireToolCall("2", "echo", `{"x":1}`) + `]`
	resp := e.ts.do(ctx, t, e.post(sid, ProtocolVersion20250326, body))
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("batch: %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	r := newSSEReader(resp.Body)
	sawLog, sawEcho := false, false
	for !sawLog || !sawEcho {
		ev, m := r.nextMessage(t)
		switch {
		case m.Method == notifMessage:
			sawLog = true
		case string(m.ID) == "2":
			if m.Error != nil || resultText(t, m.Result) != `{"x":1}` {
				t.Fatalf("echo's response: %s", ev.data)
			}
			sawEcho = true
		default:
			t.Fatalf("unexpected message before the release: %s", ev.data)
		}
		if !ev.hasID {
			t.Fatalf("an event of a request's stream without an id: %+v", ev)
		}
	}
	close(e.release)
	ev, m := r.nextMessage(t)
	if string(m.ID) != "1" || m.Error != nil || resultText(t, m.Result) != "logged" {
		t.Fatalf("logger's response: %s", ev.data)
	}
	if _, err := r.next(); err == nil {
		t.Fatal("the stream goes on after the last response")
	}
}

// TestBatchMixed sends notifications, requests, a malformed member, an unknown method, an
// initialize and a client's response in batches; every request gets its response, the
// response reaches the request waiting for it, and a batch of notifications only gets 202.
func TestBatchMixed(t *testing.T) {
	e := newBatchEnv(t)
	ctx := testCtx(t)
	sid := e.session(ctx, t, ProtocolVersion20250326)
	v := ProtocolVersion20250326

	resp := e.ts.do(ctx, t, e.post(sid, v, `[{"jsonrpc":"2.0","method":"notifications/roots/list_changed"},{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}]`))
	if b := readBody(t, resp); resp.StatusCode != http.StatusAccepted || len(b) != 0 {
		t.Fatalf("notifications only: %s %q", resp.Status, b)
	}

	body := `[{"jsonrpc":"2.0","method":"notifications/roots/list_changed"},` + req("1", "tools/list", "") + `,{"jsonrpc":"2.0","id":2,"method":5},` +
		req("3", "tools/explode", "") + `,` + initBody(v) + `,{"jsonrpc":"2.0","id":424242,"result":{}},42]`
	resp = e.ts.do(ctx, t, e.post(sid, v, body))
	b := readBody(t, resp)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("mixed batch: %s %s", resp.Status, b)
	}
	msgs := decodeBatch(t, b)
	if len(msgs) != 5 {
		t.Fatalf("%d responses, want 5 (tools/list, the malformed member, the unknown method, initialize, the number): %s", len(msgs), b)
	}
	got := map[string]rpcResponse{}
	var nullIDs int
	for _, m := range msgs {
		if string(m.ID) == "null" || m.ID == nil {
			nullIDs++
			if m.Error == nil || m.Error.Code != CodeInvalidRequest {
				t.Fatalf("a member without an id that is no Invalid Request error: %s", b)
			}
			continue
		}
		got[string(m.ID)] = m
	}
	if nullIDs != 1 {
		t.Fatalf("%d error responses without an id, want 1 (the number): %s", nullIDs, b)
	}
	if r := got["1"]; r.Error != nil || !strings.Contains(string(r.Result), `"name":"slow"`) {
		t.Fatalf("tools/list: %s", b)
	}
	if r := got["2"]; r.Error == nil || r.Error.Code != CodeInvalidRequest {
		t.Fatalf("malformed member: %s", b)
	}
	if r := got["3"]; r.Error == nil || r.Error.Code != CodeMethodNotFound {
		t.Fatalf("unknown method: %s", b)
	}
	if r := got[`"init"`]; r.Error == nil || !strings.Contains(r.Error.Message, "initialize must not be part of a JSON-RPC batch") {
		t.Fatalf("initialize in a batch: %s", b)
	}

	// A response in a batch reaches the request that waits for it: "ask" sends roots/list on
	// its stream, the test answers it within a batch that also pings.
	resp = e.ts.do(ctx, t, e.post(sid, v, `[`+wireToolCall("10", "ask", "")+`]`))
	defer resp.Body.Close()
	if resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("ask: %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	r := newSSEReader(resp.Body)
	ev, m := r.nextMessage(t)
	if m.Method != methodListRoots {
		t.Fatalf("want roots/list, got %s", ev.data)
	}
	answer := `[{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"roots":[{"uri":"file:///a"},{"uri":"file:///b"}]}},` + req("11", "ping", "") + `]`
	resp2 := e.ts.do(ctx, t, e.post(sid, v, answer))
	b = readBody(t, resp2)
	if resp2.StatusCode != http.StatusOK {
		t.Fatalf("answer batch: %s %s", resp2.Status, b)
	}
	if msgs := decodeBatch(t, b); len(msgs) != 1 || string(msgs[0].ID) != "11" || msgs[0].Error != nil {
		t.Fatalf("answer batch: want ping's response alone: %s", b)
	}
	ev, m = r.nextMessage(t)
	if string(m.ID) != "10" || m.Error != nil || resultText(t, m.Result) != "2 roots" {
		t.Fatalf("ask's response: %s", ev.data)
	}
}

// TestBatchRefused checks the batches the server refuses whole, with the reason: on sessions
// of versions that removed batching, without a session, empty, too many members, too many
// bytes, not JSON. The session serves single messages afterwards.
func TestBatchRefused(t *testing.T) {
	e := newBatchEnv(t, WithMaxBatchSize(3), WithMaxBodyBytes(64<<10))
	ctx := testCtx(t)
	old := e.session(ctx, t, ProtocolVersion20250326)
	ping := req("1", "ping", "")
	cases := []struct {
		name   string
		sid    string
		ver    string
		body   string
		status int
		code   Code
		msg    string
	}{
		{"2025-11-25 session", "", ProtocolVersion20251125, `[` + ping + `]`, 400, CodeInvalidRequest, `batches are not supported on this session: it negotiated protocol version "2025-11-25"`},
		{"2025-06-18 session", "", ProtocolVersion20250618, `[` + ping + `]`, 400, CodeInvalidRequest, `batches are not supported on this session: it negotiated protocol version "2025-06-18"`},
		{"no session", "-", ProtocolVersion20250326, `[` + initBody(ProtocolVersion20250326) + `]`, 400, CodeInvalidRequest, "batches are not supported without a session"},
		{"empty", old, ProtocolVersion20250326, ` [ ] `, 400, CodeInvalidRequest, "an empty JSON-RPC batch"},
		{"too many members", old, ProtocolVersion20250326, `[` + strings.Repeat(ping+`,`, 3) + ping + `]`, 400, CodeInvalidRequest, "the JSON-RPC batch holds 4 messages; the limit is 3"},
		{"too many bytes", old, ProtocolVersion20250326, `[` + wireToolCall("1", "echo", `{"s":"`+strings.Repeat("a", 70<<10)+`"}`) + `]`, 413, CodeInvalidRequest, "request body exceeds the limit of 65536 bytes"},
		{"truncated", old, ProtocolVersion20250326, `[` + ping, 400, CodeParseError, "parse error"},
		{"invalid UTF-8", old, ProtocolVersion20250326, "[" + wireToolCall("1", "echo", "{\"s\":\"\xff\"}") + "]", 400, CodeParseError, "UTF-8"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sid := tc.sid
			switch sid {
			case "":
				sid = e.session(ctx, t, tc.ver)
			case "-":
				sid = ""
			}
			resp := e.ts.do(ctx, t, e.post(sid, tc.ver, tc.body))
			b := readBody(t, resp)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %s, want %d: %s", resp.Status, tc.status, b)
			}
			m := decodeRPC(t, b)
			if m.Error == nil || m.Error.Code != tc.code || !strings.Contains(m.Error.Message, tc.msg) {
				t.Fatalf("want error %d containing %q, got %s", tc.code, tc.msg, b)
			}
			if sid != "" {
				resp = e.ts.do(ctx, t, e.post(sid, tc.ver, req("2", "ping", "")))
				if b := readBody(t, resp); resp.StatusCode != http.StatusOK || decodeRPC(t, b).Error != nil {
					t.Fatalf("ping after the refused batch: %s %s", resp.Status, b)
				}
			}
		})
	}
}
