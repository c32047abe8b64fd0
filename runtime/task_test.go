package runtime_test

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
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
	"github.com/protomcp/protomcp/runtime"
)

// The tests of tasks drive a real loopback server with raw JSON-RPC, as any client that
// follows the spec would: 2025-11-25 task-augmented tools/call (spec 2025-11-25,
// basic/utilities "Tasks") and the 2026-07-28 extension io.modelcontextprotocol/tasks.

// taskTools registers the tools the task tests call on s:
//   - slow: runs until released (release closes) or cancelled, reporting progress;
//   - fail: a tool error; boom: a protocol error; direct: an ordinary tool;
//   - ask: elicits the user's name and greets them; must: a tool that runs only as a task.
type taskTools struct {
	release   chan struct{}
	cancelled atomic.Int32
	started   chan string
}

func addTaskTools(s *runtime.Server) *taskTools {
	tt := &taskTools{release: make(chan struct{}), started: make(chan string, 16)}
	spec := func(name string, ts runtime.TaskSupport) runtime.ToolSpec {
		return runtime.ToolSpec{Name: name, Description: name, TaskSupport: ts}
	}
	s.AddTool(spec("slow", runtime.TaskOptional), func(ctx context.Context, req *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		c := runtime.CallerFrom(ctx)
		tt.started <- c.TaskID()
		_ = c.NotifyProgress(ctx, 1, 2, "half way")
		_ = c.SetStatusMessage(ctx, "waiting to be released")
		select {
		case <-tt.release:
			return textResult("done"), nil
		case <-ctx.Done():
			tt.cancelled.Add(1)
			return nil, ctx.Err()
		}
	})
	s.AddTool(spec("fail", runtime.TaskOptional), func(context.Context, *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		return nil, errors.New("the job failed")
	})
	s.AddTool(spec("boom", runtime.TaskOptional), func(context.Context, *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		return nil, runtime.NewError(runtime.CodeInternalError, "protocol failure")
	})
	s.AddTool(spec("direct", runtime.TaskForbidden), func(context.Context, *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		return textResult("direct"), nil
	})
	s.AddTool(spec("must", runtime.TaskRequired), func(context.Context, *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		return textResult("must"), nil
	})
	s.AddTool(spec("ask", runtime.TaskOptional), func(ctx context.Context, _ *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		res, err := runtime.CallerFrom(ctx).Elicit(runtime.WithInputKey(ctx, "name"), &runtime.ElicitParams{Message: "your name?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)})
		if err != nil {
			return nil, err
		}
		return textResult("Hello, " + fmt.Sprint(res.Content["name"]) + "!"), nil
	})
	return tt
}

// newTaskServer starts a loopback server with the task tools, shut down at the test's end.
func newTaskServer(t *testing.T, opts ...runtime.ServerOption) (*httptest.Server, *taskTools) {
	t.Helper()
	s := runtime.NewServer(runtime.Implementation{Name: "tasks", Version: "1"}, append([]runtime.ServerOption{runtime.WithLogger(discardLogger())}, opts...)...)
	tt := addTaskTools(s)
	hs := httptest.NewServer(s)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
		hs.Close()
	})
	return hs, tt
}

// rpcReply is a JSON-RPC response as a test reads it.
type rpcReply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// rawClient speaks JSON-RPC over Streamable HTTP by hand: a 2025-11-25 session, or (modern)
// 2026-07-28 requests with their _meta and headers.
type rawClient struct {
	t      *testing.T
	url    string
	sid    string
	modern bool
	caps   map[string]any
	nextID atomic.Int64
	// answer answers a server's request met on a response stream (an elicitation).
	answer func(method string, params json.RawMessage) any
}

func newLegacyClient(t *testing.T, url string) *rawClient {
	c := &rawClient{t: t, url: url}
	body := c.body("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"elicitation": map[string]any{}}, "clientInfo": map[string]any{"name": "t", "version": "1"}})
	resp := c.send(body, nil)
	c.sid = resp.Header.Get("Mcp-Session-Id")
	init := c.read(resp)
	require.Nil(t, init.Error)
	var ir struct {
		Capabilities map[string]json.RawMessage `json:"capabilities"`
	}
	require.NoError(t, json.Unmarshal(init.Result, &ir))
	c.caps = map[string]any{"tasks": ir.Capabilities["tasks"]}
	n := c.send([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), nil)
	n.Body.Close()
	return c
}

func newModernClient(t *testing.T, url string, withExtension bool) *rawClient {
	caps := map[string]any{"elicitation": map[string]any{}}
	if withExtension {
		caps["extensions"] = map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}
	}
	return &rawClient{t: t, url: url, modern: true, caps: caps}
}

// body encodes a request; a modern one carries its _meta.
func (c *rawClient) body(method string, params map[string]any) []byte {
	if params == nil {
		params = map[string]any{}
	}
	if c.modern {
		meta, _ := params["_meta"].(map[string]any)
		if meta == nil {
			meta = map[string]any{}
		}
		meta["io.modelcontextprotocol/protocolVersion"] = "2026-07-28"
		if _, ok := meta["io.modelcontextprotocol/clientCapabilities"]; !ok {
			meta["io.modelcontextprotocol/clientCapabilities"] = c.caps
		}
		params["_meta"] = meta
	}
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.nextID.Add(1), "method": method, "params": params})
	require.NoError(c.t, err)
	return b
}

// send POSTs body with the headers its era needs (name: the Mcp-Name of a modern request).
func (c *rawClient) send(body []byte, hdr map[string]string) *http.Response {
	req, err := http.NewRequestWithContext(testCtx(c.t), http.MethodPost, c.url, bytes.NewReader(body))
	require.NoError(c.t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.sid != "" {
		req.Header.Set("Mcp-Session-Id", c.sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	if c.modern {
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(c.t, err)
	return resp
}

// read reads the response to a request: a JSON body, or the SSE stream until the response,
// answering the server's requests on it with c.answer.
func (c *rawClient) read(resp *http.Response) rpcReply {
	defer resp.Body.Close()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var r rpcReply
		b, err := io.ReadAll(resp.Body)
		require.NoError(c.t, err)
		require.NoErrorf(c.t, json.Unmarshal(b, &r), "body %s (HTTP %d)", b, resp.StatusCode)
		return r
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "" {
			continue
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			rpcReply
		}
		require.NoError(c.t, json.Unmarshal([]byte(data), &m))
		switch {
		case m.Method != "" && len(m.ID) > 0:
			require.NotNil(c.t, c.answer, "the server asked %s", m.Method)
			res, _ := json.Marshal(c.answer(m.Method, m.Params))
			out := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, m.ID, res)
			r := c.send([]byte(out), nil)
			r.Body.Close()
			assert.Equal(c.t, http.StatusAccepted, r.StatusCode)
		case m.Method == "":
			return m.rpcReply
		}
	}
	require.Fail(c.t, "the stream ended without a response", "%v", sc.Err())
	return rpcReply{}
}

// call sends a request and returns its response.
func (c *rawClient) call(method string, params map[string]any) rpcReply {
	hdr := map[string]string{}
	if c.modern {
		hdr["Mcp-Method"] = method
		if n, ok := params["name"].(string); ok {
			hdr["Mcp-Name"] = n
		}
	}
	return c.read(c.send(c.body(method, params), hdr))
}

// result calls and decodes the result, requiring success.
func (c *rawClient) result(method string, params map[string]any) map[string]any {
	c.t.Helper()
	r := c.call(method, params)
	require.Nilf(c.t, r.Error, "%s: %+v", method, r.Error)
	var m map[string]any
	require.NoError(c.t, json.Unmarshal(r.Result, &m))
	return m
}

// code calls and returns the JSON-RPC error code (0 for none).
func (c *rawClient) code(method string, params map[string]any) int {
	r := c.call(method, params)
	if r.Error == nil {
		return 0
	}
	return r.Error.Code
}

// waitStatus polls tasks/get until the task's status is want (or terminal), within the test.
func (c *rawClient) waitStatus(id string, want runtime.TaskStatus) map[string]any {
	c.t.Helper()
	var last map[string]any
	ok := waitFor(10*time.Second, func() bool {
		last = c.result("tasks/get", map[string]any{"taskId": id})
		st := runtime.TaskStatus(fmt.Sprint(last["status"]))
		return st == want || (st.Terminal() && !want.Terminal())
	})
	require.Truef(c.t, ok, "task %s never became %s: %v", id, want, last)
	require.Equal(c.t, string(want), last["status"])
	return last
}

// TestTasksLegacyLifecycle drives a task-augmented tools/call of 2025-11-25: the capability
// and execution.taskSupport are declared, the call answers a CreateTaskResult at once, the
// task is working (with the status message its handler set) until its handler returns,
// tasks/result blocks until then and answers the tool's result with the related-task _meta,
// and tasks/list lists the session's tasks (spec 2025-11-25, Tasks).
func TestTasksLegacyLifecycle(t *testing.T) {
	t.Parallel()
	hs, tt := newTaskServer(t)
	c := newLegacyClient(t, hs.URL)
	assert.JSONEq(t, `{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`, string(mustJSON(t, c.caps["tasks"])))

	tools := c.result("tools/list", nil)["tools"].([]any)
	support := map[string]any{}
	for _, x := range tools {
		m := x.(map[string]any)
		support[m["name"].(string)] = m["execution"]
	}
	assert.Equal(t, map[string]any{"taskSupport": "optional"}, support["slow"])
	assert.Equal(t, map[string]any{"taskSupport": "required"}, support["must"])
	assert.Nil(t, support["direct"])

	created := c.result("tools/call", map[string]any{"name": "slow", "task": map[string]any{"ttl": 60000}})
	task := created["task"].(map[string]any)
	id := task["taskId"].(string)
	assert.Equal(t, "working", task["status"])
	assert.EqualValues(t, 60000, task["ttl"])
	assert.EqualValues(t, 1000, task["pollInterval"])
	_, err := time.Parse(time.RFC3339, task["createdAt"].(string))
	assert.NoError(t, err)
	assert.Equal(t, id, <-tt.started, "the handler sees its task's ID")

	got := c.waitStatus(id, runtime.TaskWorking)
	assert.True(t, waitFor(5*time.Second, func() bool {
		return c.result("tasks/get", map[string]any{"taskId": id})["statusMessage"] == "waiting to be released"
	}), "the handler's status message reaches tasks/get")
	assert.Equal(t, id, got["taskId"])

	list := c.result("tasks/list", nil)["tasks"].([]any)
	require.Len(t, list, 1)
	assert.Equal(t, id, list[0].(map[string]any)["taskId"])

	done := make(chan rpcReply, 1)
	go func() { done <- c.call("tasks/result", map[string]any{"taskId": id}) }()
	select {
	case r := <-done:
		require.Failf(t, "tasks/result answered before the task ended", "%+v", r)
	case <-time.After(100 * time.Millisecond):
	}
	close(tt.release)
	var r rpcReply
	select {
	case r = <-done:
	case <-testCtx(t).Done():
		require.FailNow(t, "tasks/result never answered")
	}
	require.Nil(t, r.Error)
	var res struct {
		Content []struct{ Text string } `json:"content"`
		Meta    map[string]struct {
			TaskID string `json:"taskId"`
		} `json:"_meta"`
	}
	require.NoError(t, json.Unmarshal(r.Result, &res))
	require.Len(t, res.Content, 1)
	assert.Equal(t, "done", res.Content[0].Text)
	assert.Equal(t, id, res.Meta["io.modelcontextprotocol/related-task"].TaskID)
	assert.Equal(t, "completed", c.result("tasks/get", map[string]any{"taskId": id})["status"])

	// Terminal tasks cannot be cancelled (-32602); another session sees none of them.
	assert.Equal(t, int(runtime.CodeInvalidParams), c.code("tasks/cancel", map[string]any{"taskId": id}))
	other := newLegacyClient(t, hs.URL)
	assert.Equal(t, int(runtime.CodeInvalidParams), other.code("tasks/get", map[string]any{"taskId": id}))
	assert.Empty(t, other.result("tasks/list", nil)["tasks"])
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// TestTasksLegacyNegotiation checks the tool-level rules of 2025-11-25: a task on a
// forbidden tool and a direct call of a required one are refused with -32601; an optional
// tool called directly answers directly; a tool error fails the task, a protocol error too,
// and tasks/result answers what the call would have.
func TestTasksLegacyNegotiation(t *testing.T) {
	t.Parallel()
	hs, _ := newTaskServer(t)
	c := newLegacyClient(t, hs.URL)
	assert.Equal(t, int(runtime.CodeMethodNotFound), c.code("tools/call", map[string]any{"name": "direct", "task": map[string]any{}}))
	assert.Equal(t, int(runtime.CodeMethodNotFound), c.code("tools/call", map[string]any{"name": "must"}))
	assert.Equal(t, "direct", c.result("tools/call", map[string]any{"name": "direct"})["content"].([]any)[0].(map[string]any)["text"])

	id := c.result("tools/call", map[string]any{"name": "fail", "task": map[string]any{}})["task"].(map[string]any)["taskId"].(string)
	r := c.call("tasks/result", map[string]any{"taskId": id})
	require.Nil(t, r.Error)
	assert.Contains(t, string(r.Result), `"isError":true`)
	assert.Equal(t, "failed", c.result("tasks/get", map[string]any{"taskId": id})["status"])

	id = c.result("tools/call", map[string]any{"name": "boom", "task": map[string]any{}})["task"].(map[string]any)["taskId"].(string)
	r = c.call("tasks/result", map[string]any{"taskId": id})
	require.NotNil(t, r.Error)
	assert.Equal(t, int(runtime.CodeInternalError), r.Error.Code)
	assert.Equal(t, "protocol failure", r.Error.Message)

	id = c.result("tools/call", map[string]any{"name": "must", "task": map[string]any{}})["task"].(map[string]any)["taskId"].(string)
	assert.Contains(t, string(c.call("tasks/result", map[string]any{"taskId": id}).Result), `"must"`)
	assert.Equal(t, int(runtime.CodeInvalidParams), c.code("tasks/get", map[string]any{"taskId": "nope"}))
}

// TestTasksLegacyCancel cancels a working task: tasks/cancel answers it cancelled, its
// handler's context is cancelled, and it stays cancelled (spec 2025-11-25, Tasks,
// Cancellation).
func TestTasksLegacyCancel(t *testing.T) {
	t.Parallel()
	hs, tt := newTaskServer(t)
	c := newLegacyClient(t, hs.URL)
	id := c.result("tools/call", map[string]any{"name": "slow", "task": map[string]any{}})["task"].(map[string]any)["taskId"].(string)
	<-tt.started
	got := c.result("tasks/cancel", map[string]any{"taskId": id})
	assert.Equal(t, "cancelled", got["status"])
	assert.True(t, waitFor(5*time.Second, func() bool { return tt.cancelled.Load() == 1 }), "the handler's context is cancelled")
	assert.Equal(t, "cancelled", c.result("tasks/get", map[string]any{"taskId": id})["status"])
	r := c.call("tasks/result", map[string]any{"taskId": id})
	require.NotNil(t, r.Error)
}

// TestTasksLegacyInputRequired answers a task's elicitation: the task turns input_required,
// the client calls tasks/result, which carries the elicitation (with the related-task _meta),
// and the answer resumes the handler (spec 2025-11-25, Tasks, Input Required Status).
func TestTasksLegacyInputRequired(t *testing.T) {
	t.Parallel()
	hs, _ := newTaskServer(t)
	c := newLegacyClient(t, hs.URL)
	var asked atomic.Value
	c.answer = func(method string, params json.RawMessage) any {
		asked.Store(method + " " + string(params))
		return map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}
	}
	id := c.result("tools/call", map[string]any{"name": "ask", "task": map[string]any{}})["task"].(map[string]any)["taskId"].(string)
	c.waitStatus(id, runtime.TaskInputRequired)
	r := c.call("tasks/result", map[string]any{"taskId": id})
	require.Nil(t, r.Error)
	assert.Contains(t, string(r.Result), "Hello, Ada!")
	q, _ := asked.Load().(string)
	assert.Contains(t, q, "elicitation/create")
	assert.Contains(t, q, `"io.modelcontextprotocol/related-task":{"taskId":"`+id+`"}`)
	assert.Equal(t, "completed", c.result("tasks/get", map[string]any{"taskId": id})["status"])
}

// TestTasksLimits refuses a task past the caller's cap with a JSON-RPC error that says so,
// and forgets a task whose TTL ran out, cancelling its handler.
func TestTasksLimits(t *testing.T) {
	t.Parallel()
	hs, tt := newTaskServer(t, runtime.WithMaxTasksPerCaller(2))
	c := newLegacyClient(t, hs.URL)
	for range 2 {
		c.result("tools/call", map[string]any{"name": "slow", "task": map[string]any{}})
	}
	r := c.call("tools/call", map[string]any{"name": "slow", "task": map[string]any{}})
	require.NotNil(t, r.Error)
	assert.Equal(t, int(runtime.CodeInvalidRequest), r.Error.Code)
	assert.Contains(t, r.Error.Message, "too many tasks")
	// Another caller has room of its own.
	other := newLegacyClient(t, hs.URL)
	other.result("tools/call", map[string]any{"name": "slow", "task": map[string]any{}})
	close(tt.release)

	hs2, tt2 := newTaskServer(t)
	c2 := newLegacyClient(t, hs2.URL)
	id := c2.result("tools/call", map[string]any{"name": "slow", "task": map[string]any{"ttl": 200}})["task"].(map[string]any)["taskId"].(string)
	<-tt2.started
	assert.True(t, waitFor(5*time.Second, func() bool { return tt2.cancelled.Load() == 1 }), "the TTL cancels the handler")
	assert.True(t, waitFor(5*time.Second, func() bool {
		return c2.code("tasks/get", map[string]any{"taskId": id}) == int(runtime.CodeInvalidParams)
	}), "an expired task is forgotten")
}

// TestTasksModernLifecycle drives the 2026-07-28 extension: server/discover declares it
// under extensions, a task-supporting tool called by a client that declares it answers a
// flat CreateTaskResult (resultType "task", ttlMs, pollIntervalMs), tasks/get inlines the
// result once completed, a tool error completes with isError, a protocol error fails with
// the error inlined, tasks/cancel acknowledges with an empty result (on a terminal task
// too), and the removed methods are -32601.
func TestTasksModernLifecycle(t *testing.T) {
	t.Parallel()
	hs, tt := newTaskServer(t)
	c := newModernClient(t, hs.URL, true)
	disc := c.result("server/discover", nil)
	caps := disc["capabilities"].(map[string]any)
	assert.Nil(t, caps["tasks"])
	assert.Contains(t, caps["extensions"], "io.modelcontextprotocol/tasks")

	direct := c.result("tools/call", map[string]any{"name": "direct"})
	assert.Equal(t, "complete", direct["resultType"])

	created := c.result("tools/call", map[string]any{"name": "slow"})
	assert.Equal(t, "task", created["resultType"])
	assert.Nil(t, created["task"])
	id := created["taskId"].(string)
	assert.EqualValues(t, 3600000, created["ttlMs"])
	assert.EqualValues(t, 1000, created["pollIntervalMs"])
	<-tt.started
	got := c.result("tasks/get", map[string]any{"taskId": id})
	assert.Equal(t, "working", got["status"])
	assert.Nil(t, got["result"])
	close(tt.release)
	got = c.waitStatus(id, runtime.TaskCompleted)
	assert.Equal(t, "done", got["result"].(map[string]any)["content"].([]any)[0].(map[string]any)["text"])
	assert.NotContains(t, got["result"].(map[string]any), "_meta")

	id = c.result("tools/call", map[string]any{"name": "fail"})["taskId"].(string)
	got = c.waitStatus(id, runtime.TaskCompleted)
	assert.Equal(t, true, got["result"].(map[string]any)["isError"])

	id = c.result("tools/call", map[string]any{"name": "boom"})["taskId"].(string)
	got = c.waitStatus(id, runtime.TaskFailed)
	assert.EqualValues(t, runtime.CodeInternalError, got["error"].(map[string]any)["code"])
	assert.Nil(t, got["result"])

	ack := c.result("tasks/cancel", map[string]any{"taskId": id})
	assert.Equal(t, map[string]any{"resultType": "complete"}, ack)
	assert.Equal(t, int(runtime.CodeMethodNotFound), c.code("tasks/result", map[string]any{"taskId": id}))
	assert.Equal(t, int(runtime.CodeMethodNotFound), c.code("tasks/list", nil))
	assert.Equal(t, int(runtime.CodeInvalidParams), c.code("tasks/get", map[string]any{"taskId": "nope"}))
}

// TestTasksModernNegotiation checks the gating of the extension: without it the task methods
// are -32021, a task-optional tool answers directly and a task-required one is -32021; the
// extension declared in one request's _meta opts that request in.
func TestTasksModernNegotiation(t *testing.T) {
	t.Parallel()
	hs, tt := newTaskServer(t)
	close(tt.release)
	c := newModernClient(t, hs.URL, false)
	for _, m := range []string{"tasks/get", "tasks/cancel", "tasks/update"} {
		assert.Equal(t, int(runtime.CodeMissingClientCapability), c.code(m, map[string]any{"taskId": "x", "inputResponses": map[string]any{}}), m)
	}
	res := c.result("tools/call", map[string]any{"name": "slow"})
	assert.Equal(t, "complete", res["resultType"])
	assert.Nil(t, res["taskId"])
	assert.Equal(t, int(runtime.CodeMissingClientCapability), c.code("tools/call", map[string]any{"name": "must"}))

	optIn := c.result("tools/call", map[string]any{"name": "must", "_meta": map[string]any{
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}},
	}})
	assert.Equal(t, "task", optIn["resultType"])
}

// TestTasksModernInput answers a task's elicitation through tasks/update: tasks/get shows
// the task input_required with the request under its key, tasks/update acknowledges, and
// the task completes with the answer.
func TestTasksModernInput(t *testing.T) {
	t.Parallel()
	hs, _ := newTaskServer(t)
	c := newModernClient(t, hs.URL, true)
	id := c.result("tools/call", map[string]any{"name": "ask"})["taskId"].(string)
	got := c.waitStatus(id, runtime.TaskInputRequired)
	reqs := got["inputRequests"].(map[string]any)
	require.Contains(t, reqs, "name")
	assert.Equal(t, "elicitation/create", reqs["name"].(map[string]any)["method"])
	ack := c.result("tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{"name": map[string]any{"action": "accept", "content": map[string]any{"name": "Grace"}}}})
	assert.Equal(t, map[string]any{"resultType": "complete"}, ack)
	got = c.waitStatus(id, runtime.TaskCompleted)
	assert.Contains(t, string(mustJSON(t, got["result"])), "Hello, Grace!")
}

// TestTasksShutdownCancels ends a working task when the server shuts down: its handler's
// context is cancelled and Shutdown returns.
func TestTasksShutdownCancels(t *testing.T) {
	s := runtime.NewServer(runtime.Implementation{Name: "tasks"}, runtime.WithLogger(discardLogger()))
	tt := addTaskTools(s)
	hs := httptest.NewServer(s)
	defer hs.Close()
	c := newLegacyClient(t, hs.URL)
	c.result("tools/call", map[string]any{"name": "slow", "task": map[string]any{}})
	<-tt.started
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, s.Shutdown(ctx), context.DeadlineExceeded, "a working task holds a graceful shutdown until its bound")
	assert.EqualValues(t, 1, tt.cancelled.Load())
}

// TestTasksModernNameHeader checks the Mcp-Name header of the task methods: it must repeat
// params.taskId (-32020 otherwise).
func TestTasksModernNameHeader(t *testing.T) {
	t.Parallel()
	hs, tt := newTaskServer(t)
	close(tt.release)
	c := newModernClient(t, hs.URL, true)
	id := c.result("tools/call", map[string]any{"name": "slow"})["taskId"].(string)
	r := c.read(c.send(c.body("tasks/get", map[string]any{"taskId": id}), map[string]string{"Mcp-Method": "tasks/get", "Mcp-Name": id}))
	assert.Nil(t, r.Error)
	r = c.read(c.send(c.body("tasks/get", map[string]any{"taskId": id}), map[string]string{"Mcp-Method": "tasks/get", "Mcp-Name": "another"}))
	require.NotNil(t, r.Error)
	assert.Equal(t, -32020, r.Error.Code)
}

// addDeferredTool adds "later": it asks for a name in the request, then goes on as a task
// (DeferTask, ContinueAsTask) whose result greets the name.
func addDeferredTool(s *runtime.Server) {
	s.AddTool(runtime.ToolSpec{Name: "later", TaskSupport: runtime.TaskOptional}, func(ctx context.Context, _ *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		res, err := runtime.CallerFrom(ctx).Elicit(runtime.WithInputKey(ctx, "user_name"), &runtime.ElicitParams{Message: "your name?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)})
		if err != nil {
			return nil, err
		}
		name := fmt.Sprint(res.Content["name"])
		return nil, runtime.ContinueAsTask(func(ctx context.Context) (*runtime.CallToolResult, error) {
			return textResult("Hello, " + name + ", from task " + runtime.CallerFrom(ctx).TaskID()), nil
		})
	}, runtime.DeferTask())
}

// TestTasksDeferred composes input and tasks: a DeferTask tool asks for input in the request
// (2026-07-28: an InputRequiredResult, with no taskId; 2025-11-25: an elicitation on the
// call's stream) and then goes on as a task, whose result carries the answer; a client that
// cannot have tasks gets the continuation's result directly.
func TestTasksDeferred(t *testing.T) {
	t.Parallel()
	s := runtime.NewServer(runtime.Implementation{Name: "tasks"}, runtime.WithLogger(discardLogger()))
	addDeferredTool(s)
	hs := httptest.NewServer(s)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
		hs.Close()
	})

	c := newModernClient(t, hs.URL, true)
	round1 := c.result("tools/call", map[string]any{"name": "later"})
	assert.Equal(t, "input_required", round1["resultType"])
	assert.NotContains(t, round1, "taskId")
	require.Contains(t, round1["inputRequests"], "user_name")
	round2 := c.result("tools/call", map[string]any{"name": "later", "requestState": round1["requestState"],
		"inputResponses": map[string]any{"user_name": map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}}})
	assert.Equal(t, "task", round2["resultType"])
	assert.NotContains(t, round2, "requestState")
	id := round2["taskId"].(string)
	got := c.waitStatus(id, runtime.TaskCompleted)
	assert.Contains(t, string(mustJSON(t, got["result"])), "Hello, Ada, from task "+id)

	l := newLegacyClient(t, hs.URL)
	l.answer = func(string, json.RawMessage) any {
		return map[string]any{"action": "accept", "content": map[string]any{"name": "Grace"}}
	}
	id = l.result("tools/call", map[string]any{"name": "later", "task": map[string]any{}})["task"].(map[string]any)["taskId"].(string)
	r := l.call("tasks/result", map[string]any{"taskId": id})
	require.Nil(t, r.Error)
	assert.Contains(t, string(r.Result), "Hello, Grace, from task "+id)

	direct := l.result("tools/call", map[string]any{"name": "later"})
	assert.Contains(t, string(mustJSON(t, direct)), `Hello, Grace, from task "`)
}

// openGET opens the session's GET stream and returns the messages read from it; the stream
// closes with the test.
func (c *rawClient) openGET(t *testing.T) <-chan map[string]any {
	ctx, cancel := context.WithCancel(testCtx(t))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", c.sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	out := make(chan map[string]any, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && data != "" {
				var m map[string]any
				if json.Unmarshal([]byte(data), &m) == nil {
					select {
					case out <- m:
					default:
					}
				}
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return out
}

// TestTasksLegacyNotifications follows a task on the session's GET stream (spec 2025-11-25,
// Tasks: notifications/tasks/status is optional; progress goes on with the creating
// request's progressToken, with the related-task _meta): the handler's progress arrives
// there, and the status notifications show working, then completed.
func TestTasksLegacyNotifications(t *testing.T) {
	t.Parallel()
	hs, tt := newTaskServer(t)
	c := newLegacyClient(t, hs.URL)
	notes := c.openGET(t)
	id := c.result("tools/call", map[string]any{"name": "slow", "task": map[string]any{}, "_meta": map[string]any{"progressToken": "p1"}})["task"].(map[string]any)["taskId"].(string)
	<-tt.started
	var progress map[string]any
	statuses := []string{}
	next := func() map[string]any {
		select {
		case m := <-notes:
			return m
		case <-testCtx(t).Done():
			require.FailNow(t, "no notification", "statuses so far %v", statuses)
			return nil
		}
	}
	for progress == nil {
		m := next()
		p, _ := m["params"].(map[string]any)
		switch m["method"] {
		case "notifications/progress":
			progress = p
		case "notifications/tasks/status":
			statuses = append(statuses, fmt.Sprint(p["status"]))
		}
	}
	assert.Equal(t, "p1", progress["progressToken"])
	assert.EqualValues(t, 1, progress["progress"])
	assert.Equal(t, "half way", progress["message"])
	assert.Equal(t, map[string]any{"taskId": id}, progress["_meta"].(map[string]any)["io.modelcontextprotocol/related-task"])
	close(tt.release)
	for len(statuses) == 0 || statuses[len(statuses)-1] != "completed" {
		m := next()
		if m["method"] == "notifications/tasks/status" {
			p := m["params"].(map[string]any)
			assert.Equal(t, id, p["taskId"])
			statuses = append(statuses, fmt.Sprint(p["status"]))
		}
	}
	for _, s := range statuses[:len(statuses)-1] {
		assert.Equal(t, "working", s, "every status before the last: %v", statuses)
	}
}

// TestTasksResultBudget fails a task whose result does not fit: over the per-result limit,
// or over the store's byte budget, with a message that says so.
func TestTasksResultBudget(t *testing.T) {
	t.Parallel()
	for _, opt := range []runtime.ServerOption{runtime.WithMaxTaskResultBytes(1000), runtime.WithMaxTaskBytes(4000)} {
		s := runtime.NewServer(runtime.Implementation{Name: "tasks"}, runtime.WithLogger(discardLogger()), opt)
		s.AddTool(runtime.ToolSpec{Name: "big", TaskSupport: runtime.TaskOptional}, func(context.Context, *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
			return textResult(strings.Repeat("x", 5000)), nil
		})
		hs := httptest.NewServer(s)
		c := newModernClient(t, hs.URL, true)
		id := c.result("tools/call", map[string]any{"name": "big"})["taskId"].(string)
		got := c.waitStatus(id, runtime.TaskFailed)
		assert.Contains(t, got["statusMessage"], "bytes")
		assert.Nil(t, got["result"])
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		require.NoError(t, s.Shutdown(ctx))
		cancel()
		hs.Close()
	}
}

// TestTasksTypedTool runs a typed tool (what generated code registers) as a task in both
// eras: its decoded request reaches the handler, and its typed response is the task's result
// (structuredContent and the text mirror).
func TestTasksTypedTool(t *testing.T) {
	t.Parallel()
	s := runtime.NewServer(runtime.Implementation{Name: "tasks"}, runtime.WithLogger(discardLogger()))
	runtime.AddTypedTool(s, runtime.ToolSpec{Name: "echo", OutputSchema: `{"type":"object"}`, TaskSupport: runtime.TaskRequired},
		func(_ context.Context, in *mcpv1.TextContent) (*mcpv1.TextContent, error) {
			return &mcpv1.TextContent{Text: "echo: " + in.GetText()}, nil
		})
	hs := httptest.NewServer(s)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
		hs.Close()
	})
	l := newLegacyClient(t, hs.URL)
	id := l.result("tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"}, "task": map[string]any{}})["task"].(map[string]any)["taskId"].(string)
	r := l.call("tasks/result", map[string]any{"taskId": id})
	require.Nil(t, r.Error)
	var res struct {
		StructuredContent map[string]any `json:"structuredContent"`
	}
	require.NoError(t, json.Unmarshal(r.Result, &res))
	assert.Equal(t, "echo: hi", res.StructuredContent["text"])

	m := newModernClient(t, hs.URL, true)
	id = m.result("tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "ho"}})["taskId"].(string)
	got := m.waitStatus(id, runtime.TaskCompleted)
	assert.Equal(t, "echo: ho", got["result"].(map[string]any)["structuredContent"].(map[string]any)["text"])
}

// TestTasksModernLimits checks, in 2026-07-28: tasks/cancel of a working task cancels its
// handler and leaves it cancelled; the server's TTL (WithDefaultTaskTTL) ends a task, cancelling its
// handler, and the task is forgotten; the total cap refuses one task too many.
func TestTasksModernLimits(t *testing.T) {
	t.Parallel()
	hs, tt := newTaskServer(t, runtime.WithDefaultTaskTTL(time.Second), runtime.WithMaxTasks(2))
	c := newModernClient(t, hs.URL, true)
	created := c.result("tools/call", map[string]any{"name": "slow"})
	assert.EqualValues(t, 1000, created["ttlMs"])
	id := created["taskId"].(string)
	<-tt.started
	assert.Equal(t, map[string]any{"resultType": "complete"}, c.result("tasks/cancel", map[string]any{"taskId": id}))
	assert.True(t, waitFor(5*time.Second, func() bool { return tt.cancelled.Load() == 1 }), "tasks/cancel cancels the handler")
	assert.Equal(t, "cancelled", c.result("tasks/get", map[string]any{"taskId": id})["status"])

	id = c.result("tools/call", map[string]any{"name": "slow"})["taskId"].(string)
	<-tt.started
	r := c.call("tools/call", map[string]any{"name": "slow"})
	require.NotNil(t, r.Error, "a third live task passes WithMaxTasks(2)")
	assert.Contains(t, r.Error.Message, "too many tasks")
	assert.True(t, waitFor(5*time.Second, func() bool { return tt.cancelled.Load() == 2 }), "the TTL cancels the handler")
	assert.True(t, waitFor(5*time.Second, func() bool {
		return c.code("tasks/get", map[string]any{"taskId": id}) == int(runtime.CodeInvalidParams)
	}), "an expired task is forgotten")
	// Expired tasks leave room.
	assert.Equal(t, "task", c.result("tools/call", map[string]any{"name": "slow"})["resultType"])
	<-tt.started
	close(tt.release)
}

// TestTasksEndWithTheirSession ends a session that owns a working task (no authentication):
// nobody can reach the task any more, so its handler is cancelled and its room freed.
func TestTasksEndWithTheirSession(t *testing.T) {
	t.Parallel()
	hs, tt := newTaskServer(t, runtime.WithMaxTasks(1))
	a := newLegacyClient(t, hs.URL)
	a.result("tools/call", map[string]any{"name": "slow", "task": map[string]any{}})
	<-tt.started
	b := newLegacyClient(t, hs.URL)
	assert.Equal(t, int(runtime.CodeInvalidRequest), b.code("tools/call", map[string]any{"name": "slow", "task": map[string]any{}}), "the one task the server may hold is a's")
	req, err := http.NewRequestWithContext(testCtx(t), http.MethodDelete, hs.URL, nil)
	require.NoError(t, err)
	req.Header.Set("Mcp-Session-Id", a.sid)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.True(t, waitFor(5*time.Second, func() bool { return tt.cancelled.Load() == 1 }), "the session's end cancels its task's handler")
	assert.True(t, waitFor(5*time.Second, func() bool {
		return b.code("tools/call", map[string]any{"name": "slow", "task": map[string]any{}}) == 0
	}), "the ended session's task no longer holds the server's room")
	<-tt.started
	close(tt.release)
}

// TestTasksOverStdio runs tasks over stdio (a session of 2025-11-25 on a message stream),
// with the runtime's client's untyped calls: a task's result through tasks/result, and a
// working task cancelled when the client goes away (the session ends with the connection).
func TestTasksOverStdio(t *testing.T) {
	t.Parallel()
	srv := runtime.NewServer(runtime.Implementation{Name: "tasks"}, runtime.WithLogger(discardLogger()))
	tt := addTaskTools(srv)
	c, done := stdioPair(t, srv)
	ctx := testCtx(t)
	require.NoError(t, c.Connect(ctx))
	call := func(method string, params map[string]any) map[string]any {
		raw, err := c.Call(ctx, method, params)
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(raw, &m))
		return m
	}
	id := call("tools/call", map[string]any{"name": "fail", "task": map[string]any{}})["task"].(map[string]any)["taskId"].(string)
	res := call("tasks/result", map[string]any{"taskId": id})
	assert.Equal(t, true, res["isError"])
	assert.Equal(t, map[string]any{"taskId": id}, res["_meta"].(map[string]any)["io.modelcontextprotocol/related-task"])

	call("tools/call", map[string]any{"name": "slow", "task": map[string]any{}})
	<-tt.started
	require.NoError(t, c.Close(ctx))
	waitServer(t, done)
	assert.EqualValues(t, 1, tt.cancelled.Load(), "the connection's end cancels its session's task")
}
