package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
)

// The client's side of tasks: a tools/call whose answer is a handle to poll rather than its
// result. In 2025-11-25 the client asks for one with params.task, where the server's
// capability and the tool's execution.taskSupport allow it, polls tasks/get and collects the
// result with tasks/result (spec 2025-11-25, Tasks). In 2026-07-28 the server decides, for a
// client that declares the extension io.modelcontextprotocol/tasks: its answer is a flat
// CreateTaskResult (resultType "task"), tasks/get carries the result when the task ends,
// input the task waits for goes back through tasks/update, and tasks/cancel ends it (the
// extension's specification, SEP-2663).

// The methods of tasks, and what identifies them on the wire.
const (
	taskMethodGet    = "tasks/get"
	taskMethodResult = "tasks/result"
	taskMethodList   = "tasks/list"
	taskMethodCancel = "tasks/cancel"
	taskMethodUpdate = "tasks/update"
	// clientTasksExtension is the identifier of the tasks extension (2026-07-28).
	clientTasksExtension = "io.modelcontextprotocol/tasks"
	// taskResultType is the resultType of a CreateTaskResult in 2026-07-28.
	taskResultType = "task"
)

// minTaskPoll bounds how often a task is polled, whatever interval the server suggests: a
// server that suggests a millisecond does not get a thousand tasks/get a second from each
// waiting client.
const minTaskPoll = 100 * time.Millisecond

// maxTaskPoll bounds how long the client waits between polls, whatever interval the server
// suggests: a server that suggests years (or sends garbage) does not keep Wait asleep long
// after the task ended.
const maxTaskPoll = time.Minute

// isTaskMethod reports whether method is one of the tasks/ methods that name a task, whose
// taskId the modern era mirrors into Mcp-Name (the tasks extension, Streamable HTTP: Routing
// Headers).
func isTaskMethod(method string) bool {
	switch method {
	case taskMethodGet, taskMethodUpdate, taskMethodCancel, taskMethodResult:
		return true
	}
	return false
}

// TaskInfo is a task's state as the server last reported it (spec 2025-11-25, Tasks, "Getting
// Tasks"; in 2026-07-28 the extension's Task).
type TaskInfo struct {
	// ID is the task's ID, made by the server.
	ID string
	// Status is where the task is in its lifecycle.
	Status TaskStatus
	// StatusMessage is the server's description of the status, if it gave one.
	StatusMessage string
	// CreatedAt and LastUpdatedAt are when the task was created and last changed (zero
	// when the server sent none, or a time that does not parse).
	CreatedAt, LastUpdatedAt time.Time
	// TTL is how long after its creation the server keeps the task: Unlimited when it keeps
	// it with no bound (a null ttl), zero when it did not say.
	TTL time.Duration
	// PollInterval is how often the server suggests polling; zero when it did not say.
	PollInterval time.Duration
	// Metadata is the metadata the task's handler last published (Caller.SetTaskMetadata),
	// as JSON: the Task's _meta under TaskMetadataMetaKey; nil when it published none.
	// TaskMetadataOf decodes it into an Operation rpc's metadata_type.
	Metadata json.RawMessage
}

// wireTask is a task as either era sends it: a Task of 2025-11-25 (ttl, pollInterval), or
// one of 2026-07-28 (ttlMs, pollIntervalMs, and in tasks/get the input requests, the result
// or the error).
type wireTask struct {
	ResultType     string                          `json:"resultType,omitempty"`
	TaskID         string                          `json:"taskId"`
	Status         TaskStatus                      `json:"status"`
	StatusMessage  string                          `json:"statusMessage,omitempty"`
	CreatedAt      string                          `json:"createdAt,omitempty"`
	LastUpdatedAt  string                          `json:"lastUpdatedAt,omitempty"`
	TTL            json.RawMessage                 `json:"ttl,omitempty"`
	TTLMs          json.RawMessage                 `json:"ttlMs,omitempty"`
	PollInterval   *float64                        `json:"pollInterval,omitempty"`
	PollIntervalMs *float64                        `json:"pollIntervalMs,omitempty"`
	InputRequests  map[string]receivedInputRequest `json:"inputRequests,omitempty"`
	Result         json.RawMessage                 `json:"result,omitempty"`
	Error          *Error                          `json:"error,omitempty"`
	Meta           struct {
		Metadata json.RawMessage `json:"com.github.protomcp/taskMetadata"`
	} `json:"_meta"`
}

// info is the TaskInfo of t.
func (t *wireTask) info() *TaskInfo {
	ti := &TaskInfo{ID: t.TaskID, Status: t.Status, StatusMessage: t.StatusMessage}
	if m := t.Meta.Metadata; len(m) > 0 && string(bytes.TrimSpace(m)) != "null" {
		ti.Metadata = m
	}
	ti.CreatedAt, _ = time.Parse(time.RFC3339Nano, t.CreatedAt)
	ti.LastUpdatedAt, _ = time.Parse(time.RFC3339Nano, t.LastUpdatedAt)
	ttl := t.TTLMs
	if ttl == nil {
		ttl = t.TTL
	}
	if ttl != nil {
		if string(bytes.TrimSpace(ttl)) == "null" {
			ti.TTL = Unlimited
		} else if ms, err := strconv.ParseFloat(string(bytes.TrimSpace(ttl)), 64); err == nil && ms > 0 {
			ti.TTL = millis(ms)
		}
	}
	poll := t.PollIntervalMs
	if poll == nil {
		poll = t.PollInterval
	}
	if poll != nil && *poll > 0 {
		ti.PollInterval = millis(*poll)
	}
	return ti
}

// millis is ms milliseconds as a Duration, bounded so that a huge value does not overflow.
func millis(ms float64) time.Duration {
	const maxMs = float64(math.MaxInt64 / int64(time.Millisecond) / 2)
	return time.Duration(min(ms, maxMs) * float64(time.Millisecond))
}

// pollEvery is how long to wait before polling t again.
func (t *wireTask) pollEvery() time.Duration {
	d := t.info().PollInterval
	if d == 0 {
		return defaultTaskPoll
	}
	return min(max(d, minTaskPoll), maxTaskPoll)
}

// parseTaskAnswer returns the task a tools/call answer created, or nil when the answer is the
// call's result: a flat CreateTaskResult with resultType "task" (2026-07-28), or a
// CreateTaskResult whose task member holds the task (spec 2025-11-25, Tasks, "Creating
// Tasks"). A plain tool result has neither, so both forms are recognised in both eras.
func parseTaskAnswer(raw json.RawMessage) (*wireTask, error) {
	if !bytes.Contains(raw, []byte(`"task`)) {
		return nil, nil // neither "task" nor "taskId" anywhere: the common case, one scan
	}
	var a struct {
		ResultType string          `json:"resultType"`
		TaskID     string          `json:"taskId"`
		Task       json.RawMessage `json:"task"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, fmt.Errorf("decode result: %w", err)
	}
	var body json.RawMessage
	switch {
	case a.ResultType == taskResultType:
		body = raw
	case a.ResultType == "" && len(a.Task) > 0 && a.Task[0] == '{':
		body = a.Task
	default:
		return nil, nil
	}
	var t wireTask
	if err := json.Unmarshal(body, &t); err != nil {
		return nil, fmt.Errorf("decode CreateTaskResult: %w", err)
	}
	if t.TaskID == "" {
		return nil, errors.New("the server answered with a task that has no taskId")
	}
	if t.Status == "" {
		t.Status = TaskWorking
	}
	return &t, nil
}

// WithTaskTTL asks the server to keep the task a call creates for d after its creation (spec
// 2025-11-25, Tasks, "Creating Tasks": params.task.ttl); the server may keep it for less. It
// applies to StartTypedTask and to a call the client makes a task because its tool requires
// one; in 2026-07-28 the server alone decides, and the option has no effect.
func WithTaskTTL(d time.Duration) CallOption {
	return callOptionFunc(func(o *callOptions) { o.taskTTL = d })
}

// startTask marks a call whose answer is to be returned as it is when it is a task, for a
// handle to poll, rather than waited for.
var startTask = callOptionFunc(func(o *callOptions) { o.startTask = true })

// withTaskParam returns the params of a tools/call with params.task set (spec 2025-11-25,
// Tasks, "Creating Tasks"): {} or {"ttl": ms}.
func withTaskParam(params json.RawMessage, ttl time.Duration) json.RawMessage {
	p := bytes.TrimSpace(params)
	if len(p) < 2 || p[len(p)-1] != '}' {
		return params
	}
	out := make([]byte, 0, len(p)+32)
	out = append(out, p[:len(p)-1]...)
	if len(bytes.TrimSpace(p[1:len(p)-1])) > 0 {
		out = append(out, ',')
	}
	out = append(out, `"task":{`...)
	if ttl > 0 {
		out = append(out, `"ttl":`...)
		out = strconv.AppendInt(out, ttl.Milliseconds(), 10)
	}
	return append(out, "}}"...)
}

// clientTasksCapability is the tasks capability the client declares in 2025-11-25: present,
// as a requestor of tasks. It neither lists nor runs tasks of its own, so list, cancel and
// requests stay out (spec 2025-11-25, Tasks, Capabilities: the set of requests is
// exhaustive).
func clientTasksCapability() *TasksCapability { return &TasksCapability{} }

// modernCapabilities are the client's capabilities as the modern era's _meta carries them,
// with the tasks extension declared when tasks is set, in place of 2025-11-25's tasks member.
// A request declares the extension only where it wants a task, or asks about one (Start...,
// RunTypedTask, the tasks/ methods): the server decides per request whether a tool call
// becomes a task (the tasks extension, Task Creation), and a plain call of a tool that may run
// either way is then answered directly, with its progress on its own stream.
func (c *Client) modernCapabilities(tasks bool) ClientCapabilities {
	caps := c.capabilities()
	caps.Tasks = nil
	if tasks {
		caps.Extensions = map[string]json.RawMessage{clientTasksExtension: json.RawMessage(`{}`)}
	}
	return caps
}

// withTasksDeclared returns meta (not changed) with the client's capabilities replaced by
// those that declare the tasks extension, for a modern request that wants or asks about a
// task.
func (st *clientSession) withTasksDeclared(meta *RequestMeta) *RequestMeta {
	out := &RequestMeta{Other: make(map[string]json.RawMessage, 1)}
	if meta != nil {
		out.ProgressToken = meta.ProgressToken
		for k, v := range meta.Other {
			out.Other[k] = v
		}
	}
	out.Other[metaClientCaps] = st.tasksCaps
	return out
}

// recordToolTasks keeps, for the current session, each listed tool's execution.taskSupport,
// so that calls ask for a task where the tool requires one (spec 2025-11-25, Tasks,
// Tool-Level Negotiation).
func (c *Client) recordToolTasks(res *ListToolsResult) {
	c.mu.Lock()
	st := c.state
	c.mu.Unlock()
	if st == nil {
		return
	}
	for _, t := range res.Tools {
		st.toolTasks.Store(t.Name, parseTaskSupport(t.Execution))
	}
}

// parseTaskSupport is the TaskSupport an execution member says.
func parseTaskSupport(e *ToolExecution) TaskSupport {
	if e == nil {
		return TaskForbidden
	}
	switch e.TaskSupport {
	case "optional":
		return TaskOptional
	case "required":
		return TaskRequired
	}
	return TaskForbidden
}

// toolTaskSupport returns the task support of the tool name on st, as tools/list said it;
// when list is set and the tools were not listed on st yet, it lists them first.
func (c *Client) toolTaskSupport(ctx context.Context, st *clientSession, name string, list bool) TaskSupport {
	if v, ok := st.toolTasks.Load(name); ok {
		return v.(TaskSupport)
	}
	if !list || st.toolTasksListed.Swap(true) {
		return TaskForbidden
	}
	for _, err := range c.Tools(ctx) {
		if err != nil {
			st.toolTasksListed.Store(false)
			return TaskForbidden
		}
	}
	if v, ok := st.toolTasks.Load(name); ok {
		return v.(TaskSupport)
	}
	return TaskForbidden
}

// prepareTaskCall readies the tools/call r for st: in 2025-11-25 it sets params.task when the
// server's capability and the tool allow a task and the call wants one (StartTypedTask) or
// the tool requires one. It reports whether the answer may be a task.
func (c *Client) prepareTaskCall(ctx context.Context, st *clientSession, r *Request, co *callOptions) bool {
	if r.Method != methodToolsCall {
		return false
	}
	if st.modern {
		if co.startTask {
			r.Meta = st.withTasksDeclared(r.Meta)
		}
		return true // the server decides (the tasks extension, Task Creation)
	}
	if !st.capabilities.toolsCallTasks() {
		return false // no task may be asked for (spec 2025-11-25, Tasks, Tool-Level Negotiation)
	}
	support := c.toolTaskSupport(ctx, st, r.Name, co.startTask)
	if support == TaskRequired || (co.startTask && support == TaskOptional) {
		r.Params = withTaskParam(r.Params, co.taskTTL)
		return true
	}
	return false
}

// retryAsTask reports whether a tools/call that failed with err on st is to be sent again as
// a task: a 2025-11-25 server refuses a plain call of a tool that requires one with Method
// not found (spec 2025-11-25, Tasks, Tool-Level Negotiation), and tools/list says which; a
// 2026-07-28 server refuses it with -32021 naming the tasks extension, which r then declares
// (the tasks extension, Task Creation).
func (c *Client) retryAsTask(ctx context.Context, st *clientSession, r *Request, err error) bool {
	if r.Method != methodToolsCall {
		return false
	}
	if st.modern {
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeMissingClientCapability || !bytes.Contains(e.Data, []byte(`"`+clientTasksExtension+`"`)) {
			return false
		}
		r.Meta = st.withTasksDeclared(r.Meta)
		return true
	}
	if CodeOf(err) != CodeMethodNotFound || !st.capabilities.toolsCallTasks() {
		return false
	}
	if _, known := st.toolTasks.Load(r.Name); known {
		return false // what tools/list said was applied already
	}
	return c.toolTaskSupport(ctx, st, r.Name, true) == TaskRequired
}

// settleTask turns the answer to a tools/call that may be a task into the call's result: a
// task is waited for, unless the call started it for a handle (StartTypedTask).
func (c *Client) settleTask(ctx context.Context, r *Request, co *callOptions, raw json.RawMessage) (json.RawMessage, error) {
	t, err := parseTaskAnswer(raw)
	if err != nil {
		return nil, fmt.Errorf("mcp tools/call %s: %w", r.Name, err)
	}
	if t == nil || co.startTask {
		return raw, nil
	}
	return c.awaitTask(ctx, r.Name, t)
}

// taskRequest sends the tasks/ method for the task id with params (taskId added) and returns
// its raw result. Name is the task ID, so that the modern era mirrors it into Mcp-Name.
func (c *Client) taskRequest(ctx context.Context, method, id string, extra map[string]any) (json.RawMessage, error) {
	p := make(map[string]any, len(extra)+1)
	for k, v := range extra {
		p[k] = v
	}
	p["taskId"] = id
	params, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("mcp %s: encode params: %w", method, err)
	}
	resp, err := c.invoke(ctx, &Request{Method: method, Name: id, Params: params, IsClient: true}, noCallOptions)
	if err != nil {
		return nil, err
	}
	return rawResult(resp), nil
}

// getTask polls the task id with tasks/get.
func (c *Client) getTask(ctx context.Context, id string) (*wireTask, error) {
	raw, err := c.taskRequest(ctx, taskMethodGet, id, nil)
	if err != nil {
		return nil, err
	}
	var t wireTask
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, fmt.Errorf("mcp %s: decode result: %w", taskMethodGet, err)
	}
	switch t.TaskID {
	case "":
		t.TaskID = id
	case id:
	default:
		// Following it would poll, and return the result of, a task the caller never asked
		// about.
		return nil, fmt.Errorf("mcp %s: the server answered about task %q, not %q", taskMethodGet, truncate(t.TaskID, 64), truncate(id, 64))
	}
	return &t, nil
}

// awaitTask polls the task t of the tool until it ends, answering the input it asks for on
// the way, and returns the tool's result; a task that failed returns its error, one that was
// cancelled an error whose code is CodeRequestCancelled.
func (c *Client) awaitTask(ctx context.Context, tool string, t *wireTask) (json.RawMessage, error) {
	answered := map[string]bool{}
	for {
		st, err := c.session(ctx)
		if err != nil {
			return nil, err
		}
		switch t.Status {
		case TaskCompleted:
			if t.Result != nil {
				return t.Result, nil // the modern era inlines it
			}
			return c.taskResult(ctx, tool, t.TaskID)
		case TaskFailed:
			return c.taskFailed(ctx, st, tool, t)
		case TaskCancelled:
			return nil, taskCancelled(tool, t)
		case TaskInputRequired:
			if raw, done, err := c.taskInput(ctx, st, tool, t, answered); done {
				return raw, err
			}
		case TaskWorking:
		default:
			// Not a status of the spec's lifecycle (spec 2025-11-25, Tasks, Task Status):
			// polling on would wait for a change that may never come.
			return nil, fmt.Errorf("mcp tools/call %s: task %s: the server reported the status %q, which is none of the spec's", tool, t.TaskID, truncate(string(t.Status), 64))
		}
		if !sleep(ctx, t.pollEvery()) {
			return nil, fmt.Errorf("mcp tools/call %s: waiting for task %s: %w", tool, t.TaskID, ctxErr(ctx))
		}
		if t, err = c.getTask(ctx, t.TaskID); err != nil {
			return nil, err
		}
	}
}

// taskInput answers the input the task t of the tool asks for, and reports done when the
// call's outcome is known (its result, or an error). In 2026-07-28 the client's handlers
// answer t's input requests through tasks/update; in 2025-11-25 the server's requests arrive
// on the tasks/result stream, which the client's handlers answer, and tasks/result ends with
// the task (spec 2025-11-25, Tasks, Input Required Status), unless the call's bound ends first.
func (c *Client) taskInput(ctx context.Context, st *clientSession, tool string, t *wireTask, answered map[string]bool) (json.RawMessage, bool, error) {
	if st.modern {
		if err := c.updateTask(ctx, t, answered); err != nil {
			return nil, true, fmt.Errorf("mcp tools/call %s: task %s: %w", tool, t.TaskID, err)
		}
		return nil, false, nil
	}
	raw, err := c.taskResult(ctx, tool, t.TaskID)
	if err == nil || ctx.Err() != nil || CodeOf(err) != CodeDeadlineExceeded {
		return raw, true, err
	}
	return nil, false, nil // the call's bound ended before the task did: poll on
}

// ctxErr is ctx's error as a JSON-RPC coded one: a deadline is CodeDeadlineExceeded.
func ctxErr(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &Error{Code: CodeDeadlineExceeded, Message: ctx.Err().Error()}
	}
	return ctx.Err()
}

// taskResult collects the result of the task id with tasks/result (2025-11-25): the tool's
// result, or the JSON-RPC error its call would have returned.
func (c *Client) taskResult(ctx context.Context, tool, id string) (json.RawMessage, error) {
	raw, err := c.taskRequest(ctx, taskMethodResult, id, nil)
	if err != nil {
		return nil, fmt.Errorf("mcp tools/call %s: task %s: %w", tool, id, err)
	}
	return raw, nil
}

// taskFailed is the outcome of the task t that failed: its inlined error (2026-07-28), else
// what tasks/result returns (2025-11-25): the JSON-RPC error of the call, or the tool's
// result with isError set, which fails a task in that era (spec 2025-11-25, Tasks, Task
// Status Lifecycle) and is returned as the call's result, for the caller to see the tool's
// error; else an error made of its status message.
func (c *Client) taskFailed(ctx context.Context, st *clientSession, tool string, t *wireTask) (json.RawMessage, error) {
	if t.Error != nil {
		return nil, fmt.Errorf("mcp tools/call %s: task %s failed: %w", tool, t.TaskID, t.Error)
	}
	if !st.modern {
		raw, err := c.taskResult(ctx, tool, t.TaskID)
		if err != nil {
			return nil, err
		}
		if isErrorResult(raw) {
			return raw, nil
		}
	}
	msg := t.StatusMessage
	if msg == "" {
		msg = "no reason given"
	}
	return nil, fmt.Errorf("mcp tools/call %s: task %s failed: %w", tool, t.TaskID, NewError(CodeInternalError, msg))
}

// taskCancelled is the error of the task t that was cancelled.
func taskCancelled(tool string, t *wireTask) error {
	msg := "the task was cancelled"
	if t.StatusMessage != "" {
		msg += ": " + t.StatusMessage
	}
	return fmt.Errorf("mcp tools/call %s: task %s: %w", tool, t.TaskID, NewError(CodeRequestCancelled, msg))
}

// updateTask answers the input requests of the task t that answered does not hold yet, with
// the client's handlers, and sends the answers with tasks/update (the tasks extension, Input
// Required; the answers are those of SEP-2322's inputResponses).
func (c *Client) updateTask(ctx context.Context, t *wireTask, answered map[string]bool) error {
	pending := make(map[string]receivedInputRequest, len(t.InputRequests))
	for k, in := range t.InputRequests {
		if !answered[k] {
			pending[k] = in
		}
	}
	if len(pending) == 0 {
		return nil
	}
	answers, err := c.answerInputs(ctx, pending)
	if err != nil {
		return err
	}
	if _, err := c.taskRequest(ctx, taskMethodUpdate, t.TaskID, map[string]any{"inputResponses": answers}); err != nil {
		return err
	}
	for k := range pending {
		answered[k] = true
	}
	return nil
}

// TaskHandle is a tool call running as a task on the server: its ID, its status, its result
// once it ends. StartTypedTask starts one; ResumeTypedTask makes one from a task ID, after
// the process that started the task restarted, say. A TaskHandle is safe for concurrent use.
type TaskHandle[Res any] struct {
	c      *Client
	tool   string
	id     string
	decode func(string, json.RawMessage) (*Res, error)

	mu     sync.Mutex
	last   *wireTask       // the task as last seen; nil for a resumed handle never polled
	direct json.RawMessage // the result, when the server answered without making a task
}

// StartTypedTask calls the tool with a protobuf request as a task and returns a handle to it,
// without waiting for the task to end. In 2025-11-25 the call carries params.task when the
// server declares task-augmented tools/call and the tool's execution.taskSupport is optional
// or required (learned from tools/list, listed once per session when not known yet); in
// 2026-07-28 the server decides. When the server answers with the result itself, the handle
// holds it: its ID is "" and Wait returns the result at once.
func StartTypedTask[Res any, PRes interface {
	*Res
	proto.Message
}](ctx context.Context, c *Client, tool string, req proto.Message, opts ...CallOption) (*TaskHandle[Res], error) {
	r, err := newTypedToolRequest(tool, req)
	if err != nil {
		return nil, fmt.Errorf("mcp tools/call %s: encode arguments: %w", tool, err)
	}
	resp, err := c.invoke(ctx, r, newCallOptions(append(slices.Clip(opts), startTask)))
	if err != nil {
		return nil, err
	}
	raw := rawResult(resp)
	h := newTaskHandle[Res, PRes](c, tool, "")
	t, err := parseTaskAnswer(raw)
	if err != nil {
		return nil, fmt.Errorf("mcp tools/call %s: %w", tool, err)
	}
	if t == nil {
		h.direct = raw
		return h, nil
	}
	h.id, h.last = t.TaskID, t
	return h, nil
}

// ResumeTypedTask returns a handle to the task taskID of the tool, started earlier (by
// StartTypedTask, perhaps in another process). It sends nothing: Status, Wait and Cancel ask
// the server.
func ResumeTypedTask[Res any, PRes interface {
	*Res
	proto.Message
}](c *Client, tool, taskID string) *TaskHandle[Res] {
	return newTaskHandle[Res, PRes](c, tool, taskID)
}

// RunTypedTask calls the tool as StartTypedTask does and waits for the task's result.
func RunTypedTask[Res any, PRes interface {
	*Res
	proto.Message
}](ctx context.Context, c *Client, tool string, req proto.Message, opts ...CallOption) (*Res, error) {
	h, err := StartTypedTask[Res, PRes](ctx, c, tool, req, opts...)
	if err != nil {
		return nil, err
	}
	return h.Wait(ctx)
}

// newTaskHandle returns a handle to the task id of the tool, whose results decode into Res.
func newTaskHandle[Res any, PRes interface {
	*Res
	proto.Message
}](c *Client, tool, id string) *TaskHandle[Res] {
	return &TaskHandle[Res]{c: c, tool: tool, id: id, decode: func(name string, raw json.RawMessage) (*Res, error) {
		out, err := decodeToolResult[Res, PRes](name, raw)
		return (*Res)(out), err
	}}
}

// ID returns the task's ID: "" when the server answered the call without making a task.
func (h *TaskHandle[Res]) ID() string { return h.id }

// Status asks the server for the task's state (tasks/get). A call answered without a task is
// completed.
func (h *TaskHandle[Res]) Status(ctx context.Context) (*TaskInfo, error) {
	if h.direct != nil {
		return &TaskInfo{Status: TaskCompleted}, nil
	}
	if h.id == "" {
		return nil, fmt.Errorf("mcp tools/call %s: %w", h.tool, NewError(CodeInvalidParams, "the handle names no task: it was resumed from an empty task ID"))
	}
	t, err := h.c.getTask(ctx, h.id)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.last = t
	h.mu.Unlock()
	return t.info(), nil
}

// TaskMetadataOf asks the server for the state of the task of h (tasks/get) and decodes the
// metadata its handler last published (Caller.SetTaskMetadata) into a new M, as protojson
// decodes it, ignoring members M does not know (a newer server's): nil, nil when the handler
// published none. The generated handle of an rpc that returns google.longrunning.Operation
// with a metadata_type calls it from its Metadata method.
func TaskMetadataOf[M any, PM interface {
	*M
	proto.Message
}, Res any](ctx context.Context, h *TaskHandle[Res]) (*M, error) {
	info, err := h.Status(ctx)
	if err != nil {
		return nil, err
	}
	if info.Metadata == nil {
		return nil, nil
	}
	out := PM(new(M))
	if err := resultUnmarshal.Unmarshal(info.Metadata, out); err != nil {
		return nil, fmt.Errorf("mcp %s: task %s: decode its metadata as %s: %w", taskMethodGet, h.id, out.ProtoReflect().Descriptor().FullName(), err)
	}
	return (*M)(out), nil
}

// Wait polls the task, at the interval the server suggests, until it ends or ctx does, and
// returns its typed result. Input the task asks for is answered by the client's handlers
// (elicitation, sampling, roots): in 2025-11-25 through tasks/result, in 2026-07-28 through
// tasks/update. A tool error is a *ToolError, as CallTypedTool returns it; a task that
// failed returns its JSON-RPC error; one that was cancelled, an error whose code is
// CodeRequestCancelled.
func (h *TaskHandle[Res]) Wait(ctx context.Context) (*Res, error) {
	if h.direct != nil {
		return h.decode(h.tool, h.direct)
	}
	h.mu.Lock()
	t := h.last
	h.mu.Unlock()
	if t == nil {
		var err error
		if t, err = h.c.getTask(ctx, h.id); err != nil {
			return nil, err
		}
	}
	raw, err := h.c.awaitTask(ctx, h.tool, t)
	if err != nil {
		return nil, err
	}
	return h.decode(h.tool, raw)
}

// Cancel asks the server to cancel the task (tasks/cancel). The task's status becomes
// cancelled, and Wait returns an error whose code is CodeRequestCancelled; a task that had
// already ended is refused by a 2025-11-25 server with CodeInvalidParams.
func (h *TaskHandle[Res]) Cancel(ctx context.Context) error {
	if h.id == "" {
		return fmt.Errorf("mcp tools/call %s: %w", h.tool, NewError(CodeInvalidParams, "the call completed without a task: there is nothing to cancel"))
	}
	_, err := h.c.taskRequest(ctx, taskMethodCancel, h.id, nil)
	return err
}

// ListTasks returns one page of the tasks the server keeps for this client (tasks/list, spec
// 2025-11-25, Tasks, "Listing Tasks"); pass the previous page's cursor for the next ("" for
// the first). The 2026-07-28 extension has no tasks/list.
func (c *Client) ListTasks(ctx context.Context, cursor string) ([]TaskInfo, string, error) {
	raw, err := c.Call(ctx, taskMethodList, cursorParams(cursor))
	if err != nil {
		return nil, "", err
	}
	var page struct {
		Tasks      []wireTask `json:"tasks"`
		NextCursor string     `json:"nextCursor"`
	}
	if err := json.Unmarshal(raw, &page); err != nil {
		return nil, "", fmt.Errorf("mcp %s: decode result: %w", taskMethodList, err)
	}
	out := make([]TaskInfo, len(page.Tasks))
	for i := range page.Tasks {
		out[i] = *page.Tasks[i].info()
	}
	return out, page.NextCursor, nil
}
