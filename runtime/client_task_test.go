package runtime_test

// Tests of the client's task handle against loopback servers scripted here with raw JSON-RPC
// answers, one per era: the wire of 2025-11-25 tasks (params.task, tasks/get, tasks/result,
// tasks/cancel; spec 2025-11-25, Tasks) and of the 2026-07-28 extension
// io.modelcontextprotocol/tasks (a flat CreateTaskResult, tasks/get with the result inlined,
// tasks/update, tasks/cancel).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
	"github.com/protomcp/protomcp/runtime"
)

// scriptedTask is one task of a taskServer.
type scriptedTask struct {
	id     string
	tool   string
	arg    string
	gets   int    // tasks/get answered so far
	status string // set by cancel, input and the script
	// answer is what the elicitation was answered with.
	answer string
}

// taskServer is a task server of either era, scripted: a tool "slow" that requires a task
// (2025-11-25) or becomes one (2026-07-28), "opt" that may, "plain" that may not; "ask"
// waits for an elicitation; "boom" fails; "oops" completes with a tool error. A task is
// working for two polls, then ends.
type taskServer struct {
	t      *testing.T
	modern bool
	hs     *httptest.Server

	mu       sync.Mutex
	tasks    map[string]*scriptedTask
	calls    []json.RawMessage // params of every tools/call
	methods  []string          // every request's method, in order
	names    map[string]string // Mcp-Name of the last request of each tasks/ method
	metaCaps []json.RawMessage // clientCapabilities of each modern request
	replies  chan json.RawMessage
}

func newScriptedTaskServer(t *testing.T, modern bool) *taskServer {
	s := &taskServer{t: t, modern: modern, tasks: map[string]*scriptedTask{}, names: map[string]string{}, replies: make(chan json.RawMessage, 4)}
	s.hs = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.hs.Close)
	return s
}

type rpcMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
}

func (s *taskServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	var m rpcMsg
	if !assert.NoError(s.t, json.NewDecoder(r.Body).Decode(&m)) {
		return
	}
	if m.Method == "" { // the client's answer to a request of ours
		s.replies <- m.Result
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if len(m.ID) == 0 { // a notification
		w.WriteHeader(http.StatusAccepted)
		return
	}
	var p struct {
		Name      string          `json:"name"`
		TaskID    string          `json:"taskId"`
		Arguments json.RawMessage `json:"arguments"`
		Task      json.RawMessage `json:"task"`
		Inputs    json.RawMessage `json:"inputResponses"`
	}
	_ = json.Unmarshal(m.Params, &p)
	var meta struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	_ = json.Unmarshal(m.Params, &meta)
	s.mu.Lock()
	s.methods = append(s.methods, m.Method)
	if strings.HasPrefix(m.Method, "tasks/") {
		s.names[m.Method] = r.Header.Get("Mcp-Name")
	}
	if s.modern {
		s.metaCaps = append(s.metaCaps, meta.Meta["io.modelcontextprotocol/clientCapabilities"])
	}
	s.mu.Unlock()
	result, rpcErr := s.answer(w, m.ID, m.Method, p.Name, p.TaskID, p.Arguments, p.Task, p.Inputs, m.Params)
	if result == "" && rpcErr == "" {
		return // answered on a stream already
	}
	w.Header().Set("Content-Type", "application/json")
	if s.modern {
		w.Header().Set("Mcp-Session-Id", "") // none
	} else {
		w.Header().Set("Mcp-Session-Id", "s1")
	}
	if rpcErr != "" {
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":%s}`, m.ID, rpcErr)
		return
	}
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, m.ID, result)
}

const (
	taskCreated = "2026-12-01T10:00:00Z"
	taskPollMs  = 20
)

// taskJSON is the task k as the era sends it (without its result).
func (s *taskServer) taskJSON(k *scriptedTask, status string) string {
	if s.modern {
		return fmt.Sprintf(`"taskId":%q,"status":%q,"statusMessage":"step %d","createdAt":%q,"lastUpdatedAt":%q,"ttlMs":60000,"pollIntervalMs":%d`, k.id, status, k.gets, taskCreated, taskCreated, taskPollMs)
	}
	return fmt.Sprintf(`"taskId":%q,"status":%q,"statusMessage":"step %d","createdAt":%q,"lastUpdatedAt":%q,"ttl":60000,"pollInterval":%d`, k.id, status, k.gets, taskCreated, taskCreated, taskPollMs)
}

// toolResult is the result of the task k's tool.
func toolResult(k *scriptedTask) string {
	if k.tool == "oops" {
		return `{"content":[{"type":"text","text":"no such city"}],"isError":true}`
	}
	text := "report on " + k.arg
	if k.answer != "" {
		text += " for " + k.answer
	}
	return fmt.Sprintf(`{"content":[{"type":"text","text":%q}],"structuredContent":{"text":%q}}`, text, text)
}

func (s *taskServer) answer(w http.ResponseWriter, id json.RawMessage, method, name, taskID string, args, task, inputs, params json.RawMessage) (result, rpcErr string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch method {
	case "initialize":
		return `{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}},"serverInfo":{"name":"tasks","version":"1"}}`, ""
	case "server/discover":
		if !s.modern {
			return "", `{"code":-32601,"message":"Method not found"}`
		}
		return `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{},"extensions":{"io.modelcontextprotocol/tasks":{}}},"serverInfo":{"name":"tasks","version":"1"}}`, ""
	case "tools/list":
		return `{"tools":[` +
			`{"name":"slow","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}},` +
			`{"name":"ask","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}},` +
			`{"name":"opt","inputSchema":{"type":"object"},"execution":{"taskSupport":"optional"}},` +
			`{"name":"plain","inputSchema":{"type":"object"}}]}`, ""
	case "tools/call":
		s.calls = append(s.calls, params)
		var a struct {
			Text string `json:"text"`
		}
		_ = json.Unmarshal(args, &a)
		if name == "plain" || (s.modern && name == "opt") {
			return fmt.Sprintf(`{"content":[{"type":"text","text":%q}],"structuredContent":{"text":%q}}`, "now "+a.Text, "now "+a.Text), ""
		}
		if !s.modern && len(task) == 0 {
			if name == "opt" {
				return `{"content":[{"type":"text","text":"direct"}],"structuredContent":{"text":"direct"}}`, ""
			}
			return "", `{"code":-32601,"message":"Method not found: this tool must be called as a task"}`
		}
		k := &scriptedTask{id: fmt.Sprintf("task-%d", len(s.tasks)+1), tool: name, arg: a.Text, status: "working"}
		s.tasks[k.id] = k
		if s.modern {
			return `{"resultType":"task",` + s.taskJSON(k, "working") + `}`, ""
		}
		return `{"task":{` + s.taskJSON(k, "working") + `}}`, ""
	case "tasks/get":
		k := s.tasks[taskID]
		if k == nil {
			return "", `{"code":-32602,"message":"no such task"}`
		}
		k.gets++
		if k.status == "working" && k.gets >= 2 {
			switch k.tool {
			case "ask":
				if k.answer == "" {
					k.status = "input_required"
				}
			case "boom":
				k.status = "failed"
			default:
				k.status = "completed"
			}
			if k.tool == "ask" && k.answer != "" {
				k.status = "completed"
			}
		}
		body := s.taskJSON(k, k.status)
		if s.modern {
			switch k.status {
			case "completed":
				body += `,"result":` + toolResult(k)
			case "failed":
				body += `,"error":{"code":-32603,"message":"the backend crashed"}`
			case "input_required":
				body += `,"inputRequests":{"city":{"method":"elicitation/create","params":{"message":"Which city?","requestedSchema":{"type":"object","properties":{"city":{"type":"string"}}}}}}`
			}
		}
		return `{` + body + `}`, ""
	case "tasks/update":
		k := s.tasks[taskID]
		var in map[string]struct {
			Action  string            `json:"action"`
			Content map[string]string `json:"content"`
		}
		if k == nil || json.Unmarshal(inputs, &in) != nil || in["city"].Action != "accept" {
			return "", `{"code":-32602,"message":"bad inputResponses"}`
		}
		k.answer = in["city"].Content["city"]
		k.status = "working"
		return `{"resultType":"complete"}`, ""
	case "tasks/result":
		k := s.tasks[taskID]
		if k == nil {
			return "", `{"code":-32602,"message":"no such task"}`
		}
		if k.status == "input_required" {
			s.mu.Unlock()
			s.elicitOnStream(w, id, k)
			s.mu.Lock()
			return "", ""
		}
		switch k.status {
		case "failed":
			return "", `{"code":-32603,"message":"the backend crashed"}`
		case "completed":
			return toolResult(k), ""
		}
		return "", `{"code":-32603,"message":"the script does not block in tasks/result"}`
	case "tasks/cancel":
		k := s.tasks[taskID]
		if k == nil || k.status == "completed" || k.status == "failed" || k.status == "cancelled" {
			return "", `{"code":-32602,"message":"the task has ended"}`
		}
		k.status = "cancelled"
		if s.modern {
			return `{"resultType":"complete"}`, ""
		}
		return `{` + s.taskJSON(k, "cancelled") + `}`, ""
	case "tasks/list":
		var out []string
		for _, k := range s.tasks {
			out = append(out, `{`+s.taskJSON(k, k.status)+`}`)
		}
		return `{"tasks":[` + strings.Join(out, ",") + `]}`, ""
	}
	return "", `{"code":-32601,"message":"Method not found"}`
}

// elicitOnStream answers tasks/result for a task waiting for input as a 2025-11-25 server
// does: an SSE stream carrying the elicitation (with the related-task _meta), then, once the
// client has answered it on a POST of its own, the task's result (spec 2025-11-25, Tasks,
// Input Required Status).
func (s *taskServer) elicitOnStream(w http.ResponseWriter, id json.RawMessage, k *scriptedTask) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Mcp-Session-Id", "s1")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, "data: %s\n\n", `{"jsonrpc":"2.0","id":"e1","method":"elicitation/create","params":{"message":"Which city?","requestedSchema":{"type":"object","properties":{"city":{"type":"string"}}},"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"`+k.id+`"}}}}`)
	w.(http.Flusher).Flush()
	var reply json.RawMessage
	select {
	case reply = <-s.replies:
	case <-time.After(5 * time.Second):
		assert.Fail(s.t, "the client did not answer the elicitation")
		return
	}
	var ans struct {
		Content map[string]string `json:"content"`
	}
	_ = json.Unmarshal(reply, &ans)
	s.mu.Lock()
	k.answer, k.status = ans.Content["city"], "completed"
	res := toolResult(k)
	s.mu.Unlock()
	fmt.Fprintf(w, "data: %s\n\n", `{"jsonrpc":"2.0","id":`+string(id)+`,"result":`+res+`}`)
}

func (s *taskServer) client(t *testing.T, opts ...runtime.ClientOption) *runtime.Client {
	era := runtime.EraLegacy
	if s.modern {
		era = runtime.EraModern
	}
	c := runtime.NewClient(s.hs.URL, append([]runtime.ClientOption{runtime.WithEra(era), runtime.WithLogger(discardLogger())}, opts...)...)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

func (s *taskServer) count(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, m := range s.methods {
		if m == method {
			n++
		}
	}
	return n
}

func (s *taskServer) lastCall() json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.calls) == 0 {
		return nil
	}
	return s.calls[len(s.calls)-1]
}

func text(s string) *mcpv1.TextContent { return &mcpv1.TextContent{Text: s} }

// answerCity is an elicitation handler that answers every question with a city.
func answerCity(_ context.Context, p *runtime.ElicitParams) (*runtime.ElicitResult, error) {
	if p.Message != "Which city?" {
		return nil, fmt.Errorf("unexpected elicitation %q", p.Message)
	}
	return &runtime.ElicitResult{Action: "accept", Content: map[string]any{"city": "Oslo"}}, nil
}

// TestTaskStartWaitLegacy: StartTypedTask on a tool that requires a task sends params.task
// (with the ttl asked for) once tools/list said so, and the handle reports the task's state
// as the server sent it, then waits for it and collects its typed result with tasks/result
// (spec 2025-11-25, Tasks).
func TestTaskStartWaitLegacy(t *testing.T) {
	t.Parallel()
	s := newScriptedTaskServer(t, false)
	ctx := testCtx(t)
	c := s.client(t)
	h, err := runtime.StartTypedTask[mcpv1.TextContent](ctx, c, "slow", text("rain"), runtime.WithTaskTTL(90*time.Second))
	require.NoError(t, err)
	assert.Equal(t, "task-1", h.ID())
	assert.Equal(t, 1, s.count("tools/list"), "the tool's taskSupport is learned from tools/list")
	assert.JSONEq(t, `{"ttl":90000}`, taskParam(t, s.lastCall()))

	info, err := h.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, runtime.TaskWorking, info.Status)
	assert.Equal(t, "step 1", info.StatusMessage)
	assert.Equal(t, taskPollMs*time.Millisecond, info.PollInterval)
	assert.Equal(t, time.Minute, info.TTL)
	assert.Equal(t, time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), info.CreatedAt.UTC())

	out, err := h.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, "report on rain", out.GetText())
	assert.Equal(t, 1, s.count("tasks/result"))

	tasks, next, err := c.ListTasks(ctx, "")
	require.NoError(t, err)
	assert.Empty(t, next)
	require.Len(t, tasks, 1)
	assert.Equal(t, runtime.TaskCompleted, tasks[0].Status)
}

// taskParam returns params.task of a tools/call's params.
func taskParam(t *testing.T, params json.RawMessage) string {
	t.Helper()
	var p struct {
		Task json.RawMessage `json:"task"`
	}
	require.NoError(t, json.Unmarshal(params, &p))
	return string(p.Task)
}

// TestTaskPlainCallOfRequiredToolLegacy: a plain CallTypedTool of a tool that requires a task
// is refused with Method not found by a 2025-11-25 server; the client learns from tools/list
// that the tool requires a task, calls it as one and waits for its result (spec 2025-11-25,
// Tasks, Tool-Level Negotiation).
func TestTaskPlainCallOfRequiredToolLegacy(t *testing.T) {
	t.Parallel()
	s := newScriptedTaskServer(t, false)
	ctx := testCtx(t)
	c := s.client(t)
	out, err := runtime.CallTypedTool[mcpv1.TextContent](ctx, c, "slow", text("snow"))
	require.NoError(t, err)
	assert.Equal(t, "report on snow", out.GetText())
	assert.Equal(t, 2, s.count("tools/call"), "refused plainly, then sent as a task")
	assert.JSONEq(t, `{}`, taskParam(t, s.lastCall()))

	// Now that the tool is known, the next call is a task from the start.
	_, err = runtime.CallTypedTool[mcpv1.TextContent](ctx, c, "slow", text("hail"))
	require.NoError(t, err)
	assert.Equal(t, 3, s.count("tools/call"))
	assert.Equal(t, 1, s.count("tools/list"))
}

// TestTaskOptionalAndForbiddenLegacy: StartTypedTask asks for a task only where the tool
// allows one; a tool that forbids it answers at once, and the handle holds that result.
func TestTaskOptionalAndForbiddenLegacy(t *testing.T) {
	t.Parallel()
	s := newScriptedTaskServer(t, false)
	ctx := testCtx(t)
	c := s.client(t)
	h, err := runtime.StartTypedTask[mcpv1.TextContent](ctx, c, "opt", text("fog"))
	require.NoError(t, err)
	assert.NotEmpty(t, h.ID(), "an optional tool is started as a task")
	assert.JSONEq(t, `{}`, taskParam(t, s.lastCall()))

	h, err = runtime.StartTypedTask[mcpv1.TextContent](ctx, c, "plain", text("sun"))
	require.NoError(t, err)
	assert.Empty(t, h.ID(), "no task for a tool that forbids one")
	assert.Empty(t, taskParam(t, s.lastCall()), "params.task is never sent to a tool that forbids it")
	out, err := h.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, "now sun", out.GetText())
	assert.Equal(t, runtime.CodeInvalidParams, runtime.CodeOf(h.Cancel(ctx)))

	// A plain call of an optional tool stays plain.
	out, err = runtime.CallTypedTool[mcpv1.TextContent](ctx, c, "opt", text("sleet"))
	require.NoError(t, err)
	assert.Equal(t, "direct", out.GetText())
}

// TestTaskInputRequiredLegacy: a task waiting for input is collected with tasks/result, whose
// stream carries the server's elicitation; the client's elicitation handler answers it and
// the task's result follows (spec 2025-11-25, Tasks, Input Required Status).
func TestTaskInputRequiredLegacy(t *testing.T) {
	t.Parallel()
	s := newScriptedTaskServer(t, false)
	ctx := testCtx(t)
	c := s.client(t, runtime.WithElicitationHandler(answerCity))
	h, err := runtime.StartTypedTask[mcpv1.TextContent](ctx, c, "ask", text("wind"))
	require.NoError(t, err)
	out, err := h.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, "report on wind for Oslo", out.GetText())
}

// TestTaskCancelLegacy: Cancel sends tasks/cancel; Wait then ends with an error whose code
// says the task was cancelled, and a second Cancel is refused as the task has ended.
func TestTaskCancelLegacy(t *testing.T) {
	t.Parallel()
	s := newScriptedTaskServer(t, false)
	ctx := testCtx(t)
	c := s.client(t)
	h, err := runtime.StartTypedTask[mcpv1.TextContent](ctx, c, "slow", text("storm"))
	require.NoError(t, err)
	require.NoError(t, h.Cancel(ctx))
	_, err = h.Wait(ctx)
	require.Error(t, err)
	assert.Equal(t, runtime.CodeRequestCancelled, runtime.CodeOf(err), "%v", err)
	assert.Equal(t, runtime.CodeInvalidParams, runtime.CodeOf(h.Cancel(ctx)))
}

// TestTaskFailedAndToolErrorLegacy: a failed task's Wait returns the JSON-RPC error
// tasks/result carries; a tool error is a completed task whose result is a *ToolError.
func TestTaskFailedAndToolErrorLegacy(t *testing.T) {
	t.Parallel()
	for _, modern := range []bool{false, true} {
		s := newScriptedTaskServer(t, modern)
		ctx := testCtx(t)
		c := s.client(t)
		_, err := s.client(t).ListTools(ctx, "") // boom and oops are unlisted: list the rest
		require.NoError(t, err)
		_, err = runtime.StartTypedTask[mcpv1.TextContent](ctx, c, "boom", text("x"))
		if !modern {
			// Unlisted, so not known to take a task: called plainly and refused.
			assert.Equal(t, runtime.CodeMethodNotFound, runtime.CodeOf(err), "%v", err)
			continue
		}
		require.NoError(t, err)
		h := runtime.ResumeTypedTask[mcpv1.TextContent](c, "boom", "task-1")
		_, err = h.Wait(ctx)
		require.Error(t, err)
		assert.Equal(t, runtime.CodeInternalError, runtime.CodeOf(err), "%v", err)
		assert.Contains(t, err.Error(), "the backend crashed")

		_, err = runtime.CallTypedTool[mcpv1.TextContent](ctx, c, "oops", text("x"))
		var te *runtime.ToolError
		require.ErrorAs(t, err, &te)
		assert.Equal(t, "no such city", te.Result.Text())
	}
}

// TestTaskServerDirectedModern: in 2026-07-28 a server may answer a tools/call with a flat
// CreateTaskResult where it decides; a plain CallTypedTool (which declares no tasks
// extension, so a server that follows the extension answers it directly) still waits for one, answering the task's input requests with its
// elicitation handler through tasks/update, and reads the result tasks/get inlines. Every
// tasks/ request names its task in Mcp-Name (the tasks extension).
func TestTaskServerDirectedModern(t *testing.T) {
	t.Parallel()
	s := newScriptedTaskServer(t, true)
	ctx := testCtx(t)
	c := s.client(t, runtime.WithElicitationHandler(answerCity))
	out, err := runtime.CallTypedTool[mcpv1.TextContent](ctx, c, "ask", text("frost"))
	require.NoError(t, err)
	assert.Equal(t, "report on frost for Oslo", out.GetText())
	assert.Equal(t, 1, s.count("tasks/update"))
	assert.Zero(t, s.count("tasks/result"), "the modern era has no tasks/result")
	assert.Empty(t, taskParam(t, s.lastCall()), "the modern era sends no params.task")
	s.mu.Lock()
	assert.Equal(t, "task-1", s.names["tasks/get"])
	assert.Equal(t, "task-1", s.names["tasks/update"])
	require.Len(t, s.metaCaps, len(s.methods))
	for i, caps := range s.metaCaps {
		if strings.HasPrefix(s.methods[i], "tasks/") {
			assert.JSONEq(t, `{"io.modelcontextprotocol/tasks":{}}`, extensionsOf(t, caps), "%s declares the extension", s.methods[i])
		} else {
			assert.NotContains(t, string(caps), "io.modelcontextprotocol/tasks", "a plain %s declares no tasks extension: the server answers it directly if it can", s.methods[i])
		}
	}
	s.mu.Unlock()

	// A result the server gives at once is the handle's result. Start declares the extension.
	h, err := runtime.StartTypedTask[mcpv1.TextContent](ctx, c, "opt", text("dew"))
	require.NoError(t, err)
	s.mu.Lock()
	assert.JSONEq(t, `{"io.modelcontextprotocol/tasks":{}}`, extensionsOf(t, s.metaCaps[len(s.metaCaps)-1]), "Start's tools/call")
	s.mu.Unlock()
	assert.Empty(t, h.ID())
	out, err = h.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, "now dew", out.GetText())
}

// extensionsOf returns the extensions member of clientCapabilities, and checks that the
// capabilities carry no 2025-11-25 tasks member.
func extensionsOf(t *testing.T, caps json.RawMessage) string {
	t.Helper()
	var c struct {
		Tasks      json.RawMessage `json:"tasks"`
		Extensions json.RawMessage `json:"extensions"`
	}
	require.NoError(t, json.Unmarshal(caps, &c))
	assert.Nil(t, c.Tasks, "no tasks member in the modern era")
	return string(c.Extensions)
}

// TestTaskCancelAndResumeModern: a handle resumed by ID in another client polls the same
// task; Cancel acks, and Wait then reports the cancellation by its code.
func TestTaskCancelAndResumeModern(t *testing.T) {
	t.Parallel()
	s := newScriptedTaskServer(t, true)
	ctx := testCtx(t)
	h, err := runtime.StartTypedTask[mcpv1.TextContent](ctx, s.client(t), "slow", text("mist"))
	require.NoError(t, err)
	require.Equal(t, "task-1", h.ID())
	assert.Equal(t, 1, s.count("tools/call"))
	assert.Zero(t, s.count("tools/list"), "nothing to learn in the modern era")

	other := runtime.ResumeTypedTask[mcpv1.TextContent](s.client(t), "slow", h.ID())
	info, err := other.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, runtime.TaskWorking, info.Status)
	assert.Equal(t, time.Minute, info.TTL)
	assert.Equal(t, taskPollMs*time.Millisecond, info.PollInterval)
	require.NoError(t, other.Cancel(ctx))
	_, err = h.Wait(ctx)
	assert.Equal(t, runtime.CodeRequestCancelled, runtime.CodeOf(err), "%v", err)
	s.mu.Lock()
	assert.Equal(t, "task-1", s.names["tasks/cancel"])
	s.mu.Unlock()
}

// TestTaskWaitBoundedByContext: Wait on a task that never ends returns when its context does,
// with CodeDeadlineExceeded.
func TestTaskWaitBoundedByContext(t *testing.T) {
	t.Parallel()
	s := newScriptedTaskServer(t, true)
	ctx := testCtx(t)
	h, err := runtime.StartTypedTask[mcpv1.TextContent](ctx, s.client(t), "slow", text("ice"))
	require.NoError(t, err)
	s.mu.Lock()
	s.tasks[h.ID()].gets = -1 << 30 // working for ever
	s.mu.Unlock()
	wctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, err = h.Wait(wctx)
	require.Error(t, err)
	assert.True(t, errors.Is(err, context.DeadlineExceeded) || runtime.CodeOf(err) == runtime.CodeDeadlineExceeded, "%v", err)
}

// TestRunTypedTask: RunTypedTask, what a generated client's plain method of a tool that
// requires a task calls, starts the task and waits for its result in either era.
func TestRunTypedTask(t *testing.T) {
	t.Parallel()
	for _, modern := range []bool{false, true} {
		s := newScriptedTaskServer(t, modern)
		ctx := testCtx(t)
		out, err := runtime.RunTypedTask[mcpv1.TextContent](ctx, s.client(t), "slow", text("gale"))
		require.NoError(t, err, "modern=%v", modern)
		assert.Equal(t, "report on gale", out.GetText(), "modern=%v", modern)
		assert.Equal(t, 1, s.count("tools/call"), "modern=%v: one call, as a task from the start", modern)
		assert.GreaterOrEqual(t, s.count("tasks/get"), 2, "modern=%v: polled until it ended", modern)
	}
}
