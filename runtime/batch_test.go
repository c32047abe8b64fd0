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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	require.Equal(t, http.StatusOK, resp.StatusCode, "initialize %s: %s", version, b)
	require.Contains(t, string(b), `"protocolVersion":"`+version+`"`, "initialize")
	sid := resp.Header.Get("Mcp-Session-Id")
	resp = e.ts.do(ctx, t, e.post(sid, version, `{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	readBody(t, resp)
	require.Equal(t, http.StatusAccepted, resp.StatusCode, "notifications/initialized")
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
		_, dup := out[string(m.ID)]
		require.False(t, dup, "two responses with id %s", m.ID)
		out[string(m.ID)] = m
	}
	return out
}

// decodeBatch decodes a JSON array of responses.
func decodeBatch(t *testing.T, b []byte) []rpcResponse {
	t.Helper()
	var msgs []rpcResponse
	require.NoError(t, json.Unmarshal(b, &msgs), "the answer is not a JSON array of messages: %s", truncate(string(b), 500))
	for _, m := range msgs {
		require.Equal(t, "2.0", m.JSONRPC, "a member's jsonrpc: %s", b)
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
	t.Parallel()
	e := newBatchEnv(t)
	ctx := testCtx(t)
	sid := e.session(ctx, t, ProtocolVersion20250326)
	body := `[` + wireToolCall("1", "slow", "") + `,` + req("2", "ping", "") + `,` + wireToolCall("3", "gate", "") + `]`
	resp := e.ts.do(ctx, t, e.post(sid, ProtocolVersion20250326, body))
	b := readBody(t, resp)
	require.Equal(t, http.StatusOK, resp.StatusCode, "batch: %s", b)
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"), "batch")
	got := byID(t, decodeBatch(t, b))
	require.Equal(t, []string{"1", "2", "3"}, keys(got), "ids of the responses: %s", b)
	for id, want := range map[string]string{"1": "slow", "3": "gate"} {
		require.Nil(t, got[id].Error, "response %s: %s", id, b)
		assert.Equal(t, want, resultText(t, got[id].Result), "response %s", id)
	}
	require.Nil(t, got["2"].Error, "ping's response: %s", b)
	assert.JSONEq(t, "{}", string(got["2"].Result), "ping's result")
	// The session serves single messages as before.
	resp = e.ts.do(ctx, t, e.post(sid, ProtocolVersion20250326, req("4", "ping", "")))
	b = readBody(t, resp)
	require.Equal(t, http.StatusOK, resp.StatusCode, "ping after the batch: %s", b)
	assert.Nil(t, decodeRPC(t, b).Error, "ping after the batch")
}

// TestBatchStreams sends a batch whose first request logs and then waits: the answer becomes
// an SSE stream that carries the log message and the other request's response while the
// first still runs (the test releases it only after reading them), then the first's response.
func TestBatchStreams(t *testing.T) {
	t.Parallel()
	e := newBatchEnv(t)
	ctx := testCtx(t)
	sid := e.session(ctx, t, ProtocolVersion20250326)
	body := `[` + wireToolCall("1", "logger", "") + `,` + wireToolCall("2", "echo", `{"x":1}`) + `]`
	resp := e.ts.do(ctx, t, e.post(sid, ProtocolVersion20250326, body))
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "batch")
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"), "batch")
	r := newSSEReader(resp.Body)
	sawLog, sawEcho := false, false
	for !sawLog || !sawEcho {
		ev, m := r.nextMessage(t)
		switch {
		case m.Method == notifMessage:
			sawLog = true
		case string(m.ID) == "2":
			require.Nil(t, m.Error, "echo's response: %s", ev.data)
			assert.Equal(t, `{"x":1}`, resultText(t, m.Result), "echo's response")
			sawEcho = true
		default:
			require.Fail(t, "unexpected message before the release", ev.data)
		}
		assert.True(t, ev.hasID, "an event of a request's stream has an id: %+v", ev)
	}
	close(e.release)
	ev, m := r.nextMessage(t)
	require.Equal(t, "1", string(m.ID), "the last response: %s", ev.data)
	require.Nil(t, m.Error, "logger's response: %s", ev.data)
	assert.Equal(t, "logged", resultText(t, m.Result), "logger's response")
	_, err := r.next()
	assert.Error(t, err, "the stream goes on after the last response")
}

// TestBatchMixed sends notifications, requests, a malformed member, an unknown method, an
// initialize and a client's response in batches; every request gets its response, the
// response reaches the request waiting for it, and a batch of notifications only gets 202.
func TestBatchMixed(t *testing.T) {
	t.Parallel()
	e := newBatchEnv(t)
	ctx := testCtx(t)
	sid := e.session(ctx, t, ProtocolVersion20250326)
	v := ProtocolVersion20250326

	resp := e.ts.do(ctx, t, e.post(sid, v, `[{"jsonrpc":"2.0","method":"notifications/roots/list_changed"},{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}]`))
	b := readBody(t, resp)
	require.Equal(t, http.StatusAccepted, resp.StatusCode, "notifications only: %s", b)
	assert.Empty(t, b, "the body of 202")

	body := `[{"jsonrpc":"2.0","method":"notifications/roots/list_changed"},` + req("1", "tools/list", "") + `,{"jsonrpc":"2.0","id":2,"method":5},` +
		req("3", "tools/explode", "") + `,` + initBody(v) + `,{"jsonrpc":"2.0","id":424242,"result":{}},42]`
	resp = e.ts.do(ctx, t, e.post(sid, v, body))
	b = readBody(t, resp)
	require.Equal(t, http.StatusOK, resp.StatusCode, "mixed batch: %s", b)
	msgs := decodeBatch(t, b)
	require.Len(t, msgs, 5, "responses: tools/list, the malformed member, the unknown method, initialize, the number: %s", b)
	got := map[string]rpcResponse{}
	var nullIDs int
	for _, m := range msgs {
		if string(m.ID) == "null" || m.ID == nil {
			nullIDs++
			require.NotNil(t, m.Error, "a member without an id: %s", b)
			assert.Equal(t, CodeInvalidRequest, m.Error.Code, "a member without an id: %s", b)
			continue
		}
		got[string(m.ID)] = m
	}
	assert.Equal(t, 1, nullIDs, "error responses without an id (the number): %s", b)
	require.Equal(t, []string{`"init"`, "1", "2", "3"}, keys(got), "ids of the responses: %s", b)
	assert.Nil(t, got["1"].Error, "tools/list")
	assert.Contains(t, string(got["1"].Result), `"name":"slow"`, "tools/list")
	for id, code := range map[string]Code{"2": CodeInvalidRequest, "3": CodeMethodNotFound} {
		if assert.NotNil(t, got[id].Error, "response %s: %s", id, b) {
			assert.Equal(t, code, got[id].Error.Code, "response %s", id)
		}
	}
	if assert.NotNil(t, got[`"init"`].Error, "initialize in a batch") {
		assert.Contains(t, got[`"init"`].Error.Message, "initialize must not be part of a JSON-RPC batch")
	}

	// A response in a batch reaches the request that waits for it: "ask" sends roots/list on
	// its stream, the test answers it within a batch that also pings.
	resp = e.ts.do(ctx, t, e.post(sid, v, `[`+wireToolCall("10", "ask", "")+`]`))
	defer resp.Body.Close()
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"), "ask: %s", resp.Status)
	r := newSSEReader(resp.Body)
	ev, m := r.nextMessage(t)
	require.Equal(t, methodListRoots, m.Method, "the server's request: %s", ev.data)
	answer := `[{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"roots":[{"uri":"file:///a"},{"uri":"file:///b"}]}},` + req("11", "ping", "") + `]`
	resp2 := e.ts.do(ctx, t, e.post(sid, v, answer))
	b = readBody(t, resp2)
	require.Equal(t, http.StatusOK, resp2.StatusCode, "answer batch: %s", b)
	msgs = decodeBatch(t, b)
	require.Len(t, msgs, 1, "answer batch: ping's response alone: %s", b)
	assert.Equal(t, "11", string(msgs[0].ID), "answer batch")
	assert.Nil(t, msgs[0].Error, "answer batch")
	ev, m = r.nextMessage(t)
	require.Equal(t, "10", string(m.ID), "ask's response: %s", ev.data)
	require.Nil(t, m.Error, "ask's response: %s", ev.data)
	assert.Equal(t, "2 roots", resultText(t, m.Result), "ask's response")
}

// TestBatchRefused checks the batches the server refuses whole, with the reason: on sessions
// of versions that removed batching, without a session, empty, too many members, too many
// bytes, not JSON. The session serves single messages afterwards.
func TestBatchRefused(t *testing.T) {
	t.Parallel()
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
			require.Equal(t, tc.status, resp.StatusCode, "status: %s", b)
			m := decodeRPC(t, b)
			require.NotNil(t, m.Error, "want an error: %s", b)
			assert.Equal(t, tc.code, m.Error.Code, "code: %s", b)
			assert.Contains(t, m.Error.Message, tc.msg)
			if sid != "" {
				resp = e.ts.do(ctx, t, e.post(sid, tc.ver, req("2", "ping", "")))
				b := readBody(t, resp)
				require.Equal(t, http.StatusOK, resp.StatusCode, "ping after the refused batch: %s", b)
				assert.Nil(t, decodeRPC(t, b).Error, "ping after the refused batch")
			}
		})
	}
}
