package runtime

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/protomcp/protomcp/internal/protojsonfast"
)

// The server's task runner: a tool call run as a task (spec 2025-11-25, basic/utilities
// "Tasks"; in 2026-07-28 the extension io.modelcontextprotocol/tasks) runs detached from the
// request that created it, on a context of its own that tasks/cancel, the task's TTL and the
// Server's Shutdown cancel. Its record lives in the TaskStore (task_store.go), which every
// answer about the task reads; the replica running it keeps, besides, what cannot be stored:
// the cancel function and the handler's pending input requests.

// The names tasks use on the wire, and the defaults of their options.
const (
	methodTasksGet      = "tasks/get"
	methodTasksResult   = "tasks/result"
	methodTasksList     = "tasks/list"
	methodTasksCancel   = "tasks/cancel"
	methodTasksUpdate   = "tasks/update"
	notifTasksStatus    = "notifications/tasks/status"
	metaRelatedTask     = "io.modelcontextprotocol/related-task"
	taskExtension       = "io.modelcontextprotocol/tasks"
	defaultTaskTTL      = time.Hour
	defaultMaxTaskTTL   = 24 * time.Hour
	defaultTaskPoll     = time.Second
	defaultMaxTasks     = 1000
	defaultTasksPerUser = 100
	defaultTaskBytes    = 64 << 20
	defaultTaskResult   = 4 << 20
)

// taskRunner is a Server's part that runs tasks.
type taskRunner struct {
	tools atomic.Int32 // registered tools that support tasks: the capability is declared while > 0

	storeOnce sync.Once
	store     TaskStore

	mu      sync.Mutex
	running map[string]*runningTask
}

// runningTask is what the replica running a task keeps besides its record.
type runningTask struct {
	id      string
	modern  bool     // created by a 2026-07-28 request: answers take that era's shape
	sess    *session // the 2025-11-25 session that created it, for notifications; nil in 2026-07-28
	cancel  context.CancelCauseFunc
	changed chan struct{} // closed, and replaced, whenever the record changes

	mu      sync.Mutex
	inputs  map[string]*taskInput    // the handler's pending input requests, by key
	used    map[string]bool          // every key the task's input requests had: none is reused
	seq     int                      // numbers the keys the runtime makes
	waiters map[*taskWaiter]struct{} // (2025-11-25) the tasks/result requests waiting on the task here
}

// taskInput is one request of a task's handler to the client, waiting for its answer.
type taskInput struct {
	method  string
	params  json.RawMessage
	answer  chan taskReply // buffered: one answer
	claimed bool           // (2025-11-25) being asked on a tasks/result stream
	// tried holds (2025-11-25) the tasks/result requests that asked it and had no answer
	// within the request's bound: the request goes to one that has not tried it first.
	tried map[*taskWaiter]bool
}

// taskReply is the client's answer to a task's input request: its result, or the JSON-RPC
// error it answered with.
type taskReply struct {
	result json.RawMessage
	err    error
}

// errTaskCancelled is the cause of a task context cancelled by tasks/cancel.
var errTaskCancelled = errors.New("mcp: the task was cancelled")

// errTaskSessionEnded is the cause of a task context cancelled because the session that owns
// the task ended: no client can reach the task any more.
var errTaskSessionEnded = errors.New("mcp: the session that owns the task ended")

// taskStore returns the server's TaskStore: WithTaskStore's, else an in-memory one.
func (s *Server) taskStore() TaskStore {
	t := &s.tasks
	t.storeOnce.Do(func() {
		t.store = s.cfg.taskStore
		if t.store == nil {
			t.store = NewMemoryTaskStore()
		}
	})
	return t.store
}

// taskLimits are the caps the server's options set.
func (s *Server) taskLimits() TaskLimits {
	return TaskLimits{PerOwner: s.cfg.maxTasksPerCaller, Total: s.cfg.maxTasks, Bytes: s.cfg.maxTaskBytes}
}

// taskCapable reports whether the server declares tasks: some registered tool supports them.
func (s *Server) taskCapable() bool { return s.tasks.tools.Load() > 0 }

// tasksCapability is what a 2025-11-25 server declares when it runs tasks.
func tasksCapability() *TasksCapability {
	req := &TaskRequestsCapability{Tools: &TaskToolsCapability{Call: &Supported{}}}
	return &TasksCapability{List: &Supported{}, Cancel: &Supported{}, Requests: req}
}

// discoverCapabilities returns the capabilities server/discover declares: the tasks
// extension under extensions, never the 2025-11-25 tasks member (spec 2026-07-28,
// extension io.modelcontextprotocol/tasks).
func (s *Server) discoverCapabilities() ServerCapabilities {
	c := s.capabilities()
	c.Tasks = nil
	if s.taskCapable() {
		c.Extensions = map[string]json.RawMessage{taskExtension: json.RawMessage(`{}`)}
	}
	return c
}

// taskParams are the members of a task-augmented tools/call's params.task (2025-11-25).
type taskParams struct {
	TTL *int64 `json:"ttl"`
}

// callTaskParams returns a tools/call's params.task, nil when it has none.
func callTaskParams(params json.RawMessage) (*taskParams, error) {
	if !bytes.Contains(params, []byte(`"task"`)) {
		return nil, nil
	}
	var p struct {
		Task *taskParams `json:"task"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, paramsError(err)
	}
	return p.Task, nil
}

// clientDeclaresTasks reports whether a 2026-07-28 request's client capabilities name the
// tasks extension (in _meta, for this request: spec 2026-07-28, per-request capabilities).
func clientDeclaresTasks(sess *session) bool {
	_, ok := sess.caps().Extensions[taskExtension]
	return ok
}

// routeTask decides whether a tools/call of tool t runs as a task, and if so makes req's
// CallFunc the one that creates it. It returns an error for a call the tool's task support
// forbids; nil with req unchanged for an ordinary call.
func (s *Server) routeTask(req *Request, t *toolEntry) error {
	if req.rs == nil {
		return nil
	}
	wanted, ttl, err := taskWanted(req, t)
	switch {
	case err != nil:
		return err
	case t.deferTask:
		if wanted {
			req.serve = s.deferredTaskFunc(t, ttl)
		}
		return nil // without a task, a ContinueAsTask runs in the request (toolAnswer)
	case wanted:
		req.serve = s.createTaskFunc(t, ttl)
	}
	return nil
}

// taskWanted decides whether a tools/call of t is to be a task, with the TTL its client asked
// (0: the server's default), or refused. In 2026-07-28 the server decides
// (io.modelcontextprotocol/tasks): a tool that supports tasks runs as one whenever the
// request's client capabilities declare the extension, and a task-only tool is refused with
// -32021 otherwise. In 2025-11-25 the client asks with params.task, which a forbidden tool
// refuses and a task-only tool requires, with -32601 (spec 2025-11-25, Tasks, Tool-Level
// Negotiation).
func taskWanted(req *Request, t *toolEntry) (bool, time.Duration, error) {
	if req.rs.sess.stateless {
		switch {
		case t.taskSupport == TaskForbidden:
			return false, 0, nil
		case clientDeclaresTasks(req.rs.sess):
			return true, 0, nil
		case t.taskSupport == TaskRequired:
			data, _ := json.Marshal(map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{taskExtension: map[string]any{}}}})
			return false, 0, &Error{Code: CodeMissingClientCapability, Message: "tool " + strconv.Quote(t.tool.Name) + " runs only as a task: the request's clientCapabilities must declare the extension " + taskExtension, Data: data}
		}
		return false, 0, nil
	}
	tp, err := callTaskParams(req.Params)
	switch {
	case err != nil:
		return false, 0, err
	case tp == nil && t.taskSupport == TaskRequired:
		return false, 0, Errorf(CodeMethodNotFound, "tool %q must be called as a task: add params.task (spec 2025-11-25, Tasks, Tool-Level Negotiation)", t.tool.Name)
	case tp == nil:
		return false, 0, nil
	case t.taskSupport == TaskForbidden:
		return false, 0, Errorf(CodeMethodNotFound, "tool %q cannot be called as a task: its execution.taskSupport is forbidden", t.tool.Name)
	}
	var ttl time.Duration
	if tp.TTL != nil && *tp.TTL > 0 {
		// Clamped before the conversion, which would wrap around (taskTTL caps it anyway).
		ttl = time.Duration(min(*tp.TTL, int64(unlimitedDuration/time.Millisecond))) * time.Millisecond
	}
	return true, ttl, nil
}

// taskCreated is the answer of a tools/call that created a task: encoded as its era's
// CreateTaskResult.
type taskCreated struct {
	rec    *TaskRecord
	modern bool
}

// MarshalJSON encodes the CreateTaskResult: {"task": Task} in 2025-11-25, the flat task with
// resultType "task" in 2026-07-28.
func (c *taskCreated) MarshalJSON() ([]byte, error) {
	if c.modern {
		return modernTask(c.rec, "task", false), nil
	}
	b := append([]byte(`{"task":`), legacyTask(c.rec)...)
	return append(b, '}'), nil
}

// createTaskFunc returns the CallFunc of a tools/call of t that runs as a task with the TTL
// the client asked for (0: the server's default).
func (s *Server) createTaskFunc(t *toolEntry, ttl time.Duration) CallFunc {
	return func(ctx context.Context, req *Request) (*Response, error) {
		rec, err := s.startTask(ctx, req, t, ttl, t.call)
		if err != nil {
			return nil, err
		}
		resp := req.response()
		resp.Result = &taskCreated{rec: rec, modern: req.rs.sess.stateless}
		return resp, nil
	}
}

// newTaskID returns a random task ID with 128 bits of entropy, unguessable (spec 2025-11-25,
// Tasks, Security Considerations).
func newTaskID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// taskOwner is who a task belongs to: the authenticated identity of the request, else its
// 2025-11-25 session, else nobody (a 2026-07-28 request without authentication: the ID is
// the capability).
func taskOwner(rs *requestState) string {
	if id := rs.token.identity(); id.authenticated {
		b, _ := json.Marshal([]string{id.issuer, id.subject, id.clientID})
		return "i:" + string(b)
	}
	if !rs.sess.stateless {
		return "s:" + rs.sess.id
	}
	return ""
}

// replicaID names this replica in a task's record: "" outside a replica set.
func (s *Server) replicaID() string {
	if s.cluster != nil {
		return s.cluster.replica
	}
	return ""
}

// taskTTL returns the TTL of a new task: what the client asked (0 for nothing), within the
// server's maximum, else the server's default.
func (s *Server) taskTTL(asked time.Duration) time.Duration {
	ttl := s.cfg.taskTTL
	if asked > 0 {
		ttl = asked
	}
	if ttl > s.cfg.maxTaskTTL {
		ttl = s.cfg.maxTaskTTL
	}
	if ttl >= unlimitedDuration {
		return 0
	}
	return ttl
}

// startTask stores a new task's record and starts its handler, detached from the request.
func (s *Server) startTask(ctx context.Context, req *Request, t *toolEntry, asked time.Duration, run CallFunc) (*TaskRecord, error) {
	rs := req.rs
	now := time.Now().UTC().Truncate(time.Millisecond)
	rec := &TaskRecord{
		ID: newTaskID(), Owner: taskOwner(rs), Replica: s.replicaID(), Tool: t.tool.Name,
		Version: rs.sess.version(), Status: TaskWorking, CreatedAt: now, LastUpdatedAt: now,
		TTL: s.taskTTL(asked), PollInterval: s.cfg.taskPollInterval,
	}
	if !s.handlerStarted() {
		return nil, NewError(CodeInternalError, "server is shutting down")
	}
	rt := &runningTask{id: rec.ID, modern: rs.sess.stateless, changed: make(chan struct{}), inputs: make(map[string]*taskInput)}
	if !rt.modern {
		rt.sess = rs.sess
	}
	tctx, tcancel := context.WithCancelCause(s.baseCtx)
	if rec.TTL > 0 {
		var stop context.CancelFunc
		tctx, stop = context.WithDeadline(tctx, rec.CreatedAt.Add(rec.TTL))
		prev := tcancel
		tcancel = func(cause error) { prev(cause); stop() }
	}
	rt.cancel = tcancel
	if strings.HasPrefix(rec.Owner, "s:") {
		// A session's task is reachable through that session only: it ends with it. In a
		// replica set, where a replica's copy of a session may end while the session lives,
		// only a DELETE received by this replica ends it.
		sess := rs.sess
		stop := context.AfterFunc(sess.ctx, func() {
			sess.mu.Lock()
			gone := s.cluster == nil || sess.forget
			sess.mu.Unlock()
			if gone {
				tcancel(errTaskSessionEnded)
			}
		})
		rt.cancel = func(cause error) { stop(); tcancel(cause) }
	}
	// Running before it is stored: a record that is not terminal and has no handler here is
	// an orphan to every reader (checkOrphan), tasks/list's included.
	s.tasks.mu.Lock()
	if s.tasks.running == nil {
		s.tasks.running = make(map[string]*runningTask)
	}
	s.tasks.running[rec.ID] = rt
	s.tasks.mu.Unlock()
	limits := s.taskLimits()
	if rec.Owner == "" {
		// Anonymous 2026-07-28 callers are no one caller: only the total cap holds them.
		limits.PerOwner = 0
	}
	sctx, cancel := context.WithTimeout(ctx, storeTimeout)
	err := s.taskStore().Create(sctx, rec, limits)
	cancel()
	if err != nil {
		s.tasks.mu.Lock()
		delete(s.tasks.running, rec.ID)
		s.tasks.mu.Unlock()
		rt.cancel(nil)
		s.handlerDone()
		if errors.Is(err, ErrTaskLimit) {
			return nil, Errorf(CodeInvalidRequest, "too many tasks: %v; wait for some to finish or cancel them", err)
		}
		return nil, Errorf(CodeInternalError, "the task store is unavailable: %v", err)
	}
	trs := s.taskRequestState(tctx, rs, rt)
	go s.runTask(rt, trs, t, run)
	return rec, nil
}

// taskRequestState is the request state a task's handler sees: the creating request's
// caller, metadata and arguments, on the task's own context; what the handler sends the
// client goes through the task (taskNotify, taskAsk).
func (s *Server) taskRequestState(ctx context.Context, rs *requestState, rt *runningTask) *requestState {
	trs := &requestState{sess: rs.sess, st: rs.st, id: rs.id, meta: rs.meta, progressToken: rs.progressToken, header: rs.header, token: rs.token, task: rt}
	trs.caller.rs = trs
	trs.req = rs.req
	trs.req.rs = trs
	trs.req.serve = nil
	trs.ctx = handlerCtx{Context: ctx, values: rs.ctx.values, rs: trs}
	return trs
}

// runTask runs a task's handler and stores its outcome.
func (s *Server) runTask(rt *runningTask, trs *requestState, t *toolEntry, run CallFunc) {
	defer s.handlerDone()
	defer func() {
		s.tasks.mu.Lock()
		delete(s.tasks.running, rt.id)
		s.tasks.mu.Unlock()
		rt.cancel(nil)
		// Whoever waits on the task looks again: a handler that ends without storing an
		// outcome (its TTL ran out) changes the task too, which is now gone.
		rt.signal()
	}()
	ctx := &trs.ctx
	result, err := s.callTaskHandler(ctx, trs, t, run)
	s.finishTask(ctx, rt, result, err)
}

// callTaskHandler runs the tool's handler (inside its registration's interceptors) and
// returns its result as JSON, or the protocol error it ended with.
func (s *Server) callTaskHandler(ctx context.Context, trs *requestState, t *toolEntry, run CallFunc) (result json.RawMessage, err error) {
	req := &trs.req
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("mcp: task handler panicked", "tool", t.tool.Name, "task", trs.task.id, "panic", p, "stack", string(debug.Stack()))
			result, err = nil, Errorf(CodeInternalError, "internal error: the tool %q panicked", truncate(t.tool.Name, 64))
		}
	}()
	resp, err := run(ctx, req)
	ans, err := toolAnswer(ctx, req, resp, err)
	if err != nil {
		return nil, err
	}
	switch a := ans.(type) {
	case *encodedResult:
		b := bytes.Clone(a.buf[a.off:])
		a.pooled.release()
		return b, nil
	case json.RawMessage:
		return bytes.Clone(a), nil
	default:
		return json.Marshal(a)
	}
}

// finishTask stores a task's outcome: completed with the tool's result, or failed with the
// error; a task cancelled meanwhile stays cancelled, and one whose TTL ran out is gone.
func (s *Server) finishTask(ctx context.Context, rt *runningTask, result json.RawMessage, err error) {
	var status TaskStatus
	var msg string
	var errJSON json.RawMessage
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errTaskCancelled):
		return // tasks/cancel stored the status already
	case errors.Is(cause, errTaskSessionEnded):
		// Nobody can reach the task: it is forgotten, and its room freed.
		sctx, cancel := context.WithTimeout(s.baseCtxOrBackground(), storeTimeout)
		defer cancel()
		if err := s.taskStore().Delete(sctx, rt.id); err != nil {
			s.log.Warn("mcp: could not delete the task of an ended session", "task", rt.id, "error", err)
		}
		return
	case err == nil && len(result) > s.cfg.maxTaskResultBytes:
		status, msg = TaskFailed, fmt.Sprintf("the tool's result of %d bytes exceeds the server's limit of %d bytes for a task's result", len(result), s.cfg.maxTaskResultBytes)
		errJSON, _ = json.Marshal(NewError(CodeInternalError, msg))
		result = nil
	case err == nil:
		status = TaskCompleted
		if !rt.modern && isErrorResult(result) {
			// spec 2025-11-25, Tasks, Task Status Lifecycle: a tool result with isError
			// set fails the task (in 2026-07-28 it completes; the result says isError).
			status, msg = TaskFailed, "the tool reported an error: tasks/result returns it"
		}
	default:
		if errors.Is(cause, context.DeadlineExceeded) {
			return // the TTL ran out: the record is gone
		}
		if s.baseCtx.Err() != nil {
			err = NewError(CodeInternalError, "the task was cancelled: the server is shutting down")
		}
		e := toRPCError(err)
		status, msg = TaskFailed, e.Message
		errJSON, _ = json.Marshal(e)
	}
	outcome := func(status TaskStatus, msg string, result, errJSON json.RawMessage) func(*TaskRecord) error {
		return func(r *TaskRecord) error {
			if r.Status.Terminal() {
				return errTaskTerminal
			}
			r.Status, r.StatusMessage, r.Result, r.Error, r.InputRequests = status, msg, result, errJSON, nil
			return nil
		}
	}
	err = s.storeOutcome(rt, outcome(status, msg, result, errJSON))
	if errors.Is(err, ErrTaskLimit) {
		// The result does not fit in the store's budget: the task fails, saying so.
		msg = fmt.Sprintf("the tool's result of %d bytes does not fit in the server's budget for tasks: %v", len(result), err)
		errJSON, _ = json.Marshal(NewError(CodeInternalError, msg))
		_ = s.storeOutcome(rt, outcome(TaskFailed, msg, nil, errJSON))
	}
}

// outcomeAttempts is how many times a task's outcome is written before it is given up: a
// store that is briefly unreachable must not leave the task working, with nothing running
// it, until its TTL.
const outcomeAttempts = 4

// storeOutcome writes a task's outcome with fn, again (after 100 ms, 200 ms, 400 ms) while
// the store fails for another reason than the task's state or the store's budget.
func (s *Server) storeOutcome(rt *runningTask, fn func(*TaskRecord) error) error {
	var err error
	for i := range outcomeAttempts {
		if i > 0 {
			time.Sleep(100 * time.Millisecond << (i - 1))
		}
		_, err = s.updateTask(rt, fn)
		if err == nil || errors.Is(err, errTaskTerminal) || errors.Is(err, ErrTaskNotFound) || errors.Is(err, ErrTaskLimit) {
			return err
		}
	}
	s.log.Error("mcp: a task's outcome could not be stored: it stays as last stored until its TTL", "task", rt.id, "error", err)
	return err
}

// isErrorResult reports whether a CallToolResult's JSON has isError true.
func isErrorResult(result json.RawMessage) bool {
	var r struct {
		IsError bool `json:"isError"`
	}
	return json.Unmarshal(result, &r) == nil && r.IsError
}

// errTaskTerminal stops an update of a task that is terminal already.
var errTaskTerminal = errors.New("mcp: the task is terminal")

// updateTask applies fn to a running task's record, stamps it, and tells whoever waits on
// the task (and the client, by a status notification) of the change.
func (s *Server) updateTask(rt *runningTask, fn func(*TaskRecord) error) (*TaskRecord, error) {
	ctx, cancel := context.WithTimeout(s.baseCtxOrBackground(), storeTimeout)
	defer cancel()
	rec, err := s.taskStore().Update(ctx, rt.id, func(r *TaskRecord) error {
		if err := fn(r); err != nil {
			return err
		}
		r.LastUpdatedAt = time.Now().UTC().Truncate(time.Millisecond)
		return nil
	})
	if err != nil {
		if !errors.Is(err, errTaskTerminal) && !errors.Is(err, ErrTaskNotFound) {
			s.log.Warn("mcp: could not update a task's record", "task", rt.id, "error", err)
		}
		return nil, err
	}
	rt.signal()
	s.notifyTaskStatus(rt, rec)
	return rec, nil
}

// baseCtxOrBackground is the context of the store calls that record a task's outcome: they
// must happen even while the server shuts down.
func (s *Server) baseCtxOrBackground() context.Context {
	return context.WithoutCancel(s.baseCtx)
}

// signal wakes whoever waits for the task's record to change.
func (rt *runningTask) signal() {
	rt.mu.Lock()
	close(rt.changed)
	rt.changed = make(chan struct{})
	rt.mu.Unlock()
}

// changes returns the channel closed at the task's next change.
func (rt *runningTask) changes() <-chan struct{} {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.changed
}

// notifyTaskStatus sends notifications/tasks/status to a 2025-11-25 session's GET stream
// (optional: spec 2025-11-25, Tasks, Task Status Notification).
func (s *Server) notifyTaskStatus(rt *runningTask, rec *TaskRecord) {
	if rt.sess == nil || rt.sess.isEnded() {
		return
	}
	_ = rt.sess.notify(notifTasksStatus, json.RawMessage(legacyTask(rec)))
}

// runningTaskOf returns this replica's running task id, or nil.
func (s *Server) runningTaskOf(id string) *runningTask {
	s.tasks.mu.Lock()
	defer s.tasks.mu.Unlock()
	return s.tasks.running[id]
}

// taskNotify sends a notification of a task's handler: a progress message becomes the task's
// status message; in 2025-11-25 the notification goes to the session's GET stream with the
// related-task _meta, while 2026-07-28 has no stream that outlives the request.
func (rt *runningTask) notify(rs *requestState, method string, params any) error {
	if method == notifProgress {
		if p, ok := params.(*ProgressParams); ok && p.Message != "" {
			msg := p.Message
			_, _ = rs.sess.server.updateTask(rt, func(r *TaskRecord) error {
				if r.Status.Terminal() {
					return errTaskTerminal
				}
				r.StatusMessage = msg
				return nil
			})
		}
	}
	if rt.sess == nil {
		return nil
	}
	b, err := json.Marshal(params)
	if err != nil {
		return err
	}
	return rt.sess.notify(method, json.RawMessage(withRelatedTask(b, rt.id)))
}

// withRelatedTask adds the related-task _meta to a message's params or result (spec
// 2025-11-25, Tasks, Associating Task-Related Messages: all of a task's messages MUST carry
// it), beside the members of a _meta it has already.
func withRelatedTask(params []byte, id string) []byte {
	p := trimSpace(params)
	if len(p) < 2 || p[0] != '{' {
		return params
	}
	idJSON, _ := json.Marshal(id)
	if bytes.Contains(p, []byte(`"_meta"`)) {
		return mergeRelatedTask(params, idJSON)
	}
	out := make([]byte, 0, len(p)+80)
	out = append(out, `{"_meta":{"`+metaRelatedTask+`":{"taskId":`...)
	out = append(out, idJSON...)
	out = append(out, "}}"...)
	if rest := trimSpace(p[1:]); len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, p[1:]...)
}

// mergeRelatedTask is withRelatedTask for a message that may have a _meta of its own (or a
// "_meta" nested in its content): the related-task key joins the top-level _meta's members.
// A message that is not a JSON object, or whose _meta is not one, is returned as it is.
func mergeRelatedTask(msg, idJSON []byte) []byte {
	var top map[string]json.RawMessage
	if json.Unmarshal(msg, &top) != nil || top == nil {
		return msg
	}
	meta := map[string]json.RawMessage{}
	if m, ok := top["_meta"]; ok && string(trimSpace(m)) != "null" {
		if json.Unmarshal(m, &meta) != nil || meta == nil {
			return msg
		}
	}
	meta[metaRelatedTask] = json.RawMessage(`{"taskId":` + string(idJSON) + `}`)
	var err error
	if top["_meta"], err = json.Marshal(meta); err != nil {
		return msg
	}
	out, err := json.Marshal(top)
	if err != nil {
		return msg
	}
	return out
}

// ask is requestState.call for a task's handler: the request waits among the task's input
// requests, the task is input_required meanwhile, and the client's answer comes through
// tasks/update (2026-07-28) or on a tasks/result stream (2025-11-25).
func (rt *runningTask) ask(ctx context.Context, rs *requestState, method string, params, result any) error {
	if method == methodPing && rt.modern {
		return NewError(CodeMethodNotFound, "there is no ping in MCP "+ProtocolVersion20260728)
	}
	if params == nil {
		params = struct{}{}
	}
	pb, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("mcp: encode %s params: %w", method, err)
	}
	s := rs.sess.server
	key, _ := ctx.Value(inputKeyCtx{}).(string)
	in := &taskInput{method: method, params: pb, answer: make(chan taskReply, 1)}
	rt.mu.Lock()
	// A key names one request for the task's life: a client answers each key once, and
	// would take a second request under an answered key for the first.
	for key == "" || rt.used[key] {
		rt.seq++
		key = "input-" + strconv.Itoa(rt.seq)
	}
	if rt.used == nil {
		rt.used = make(map[string]bool)
	}
	rt.used[key] = true
	rt.inputs[key] = in
	rt.mu.Unlock()
	s.publishInputs(rt)
	defer func() {
		rt.mu.Lock()
		delete(rt.inputs, key)
		rt.mu.Unlock()
		s.publishInputs(rt)
	}()
	wctx, cancel := s.callerTimeout(ctx)
	defer cancel()
	select {
	case ans := <-in.answer:
		if ans.err != nil {
			return fmt.Errorf("mcp: %s of task %s: %w", method, rt.id, ans.err)
		}
		if err := json.Unmarshal(ans.result, result); err != nil {
			return fmt.Errorf("mcp: decode %s result: %w", method, err)
		}
		return nil
	case <-wctx.Done():
		return fmt.Errorf("mcp: %s of task %s not answered: %w", method, rt.id, wctx.Err())
	}
}

// publishInputs stores a task's pending input requests: input_required while there are some,
// working again once there are none.
func (s *Server) publishInputs(rt *runningTask) {
	rt.mu.Lock()
	var inputs json.RawMessage
	if len(rt.inputs) > 0 {
		m := make(map[string]json.RawMessage, len(rt.inputs))
		for k, in := range rt.inputs {
			b, _ := json.Marshal(struct {
				Method string          `json:"method"`
				Params json.RawMessage `json:"params"`
			}{in.method, in.params})
			m[k] = b
		}
		inputs, _ = json.Marshal(m)
	}
	rt.mu.Unlock()
	_, _ = s.updateTask(rt, func(r *TaskRecord) error {
		if r.Status.Terminal() {
			return errTaskTerminal
		}
		r.InputRequests = inputs
		if inputs != nil {
			r.Status = TaskInputRequired
		} else {
			r.Status = TaskWorking
		}
		return nil
	})
}

// answerInput delivers the client's answer to input request key of a task this replica
// runs; it reports whether the task had such a request.
func (rt *runningTask) answerInput(key string, answer json.RawMessage) bool {
	return rt.replyInput(key, taskReply{result: answer})
}

// replyInput delivers the client's reply (an answer or an error) to input request key of a
// task this replica runs; it reports whether the task had such a request.
func (rt *runningTask) replyInput(key string, answer taskReply) bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	in := rt.inputs[key]
	if in == nil {
		return false
	}
	select {
	case in.answer <- answer:
		return true
	default:
		return false // answered already
	}
}

// Bus messages of tasks, to the replica that runs the task (cluster_server.go).
const (
	busTaskCancel = "tc" // tasks/cancel: Data is the task ID, as a JSON string
	busTaskInput  = "ti" // tasks/update: Data is a taskAnswer
)

// onBusTaskCancel cancels the handler of a task this replica runs, cancelled through another.
func (s *Server) onBusTaskCancel(m *busMessage) {
	var id string
	if json.Unmarshal(m.Data, &id) != nil {
		return
	}
	if rt := s.runningTaskOf(id); rt != nil {
		rt.cancel(errTaskCancelled)
		rt.signal()
	}
}

// onBusTaskInput delivers to a task this replica runs an answer sent through another.
func (s *Server) onBusTaskInput(m *busMessage) {
	var a taskAnswer
	if json.Unmarshal(m.Data, &a) != nil {
		return
	}
	if rt := s.runningTaskOf(a.Task); rt != nil {
		rt.answerInput(a.Key, a.Answer)
	}
}

// TaskID returns the ID of the task whose handler the caller's request runs, or "" when the
// handler does not run as a task.
func (c *Caller) TaskID() string {
	if rs := c.state(); rs != nil && rs.task != nil {
		return rs.task.id
	}
	return ""
}

// SetStatusMessage sets the statusMessage of the task whose handler runs (what tasks/get
// shows the client: "fetching page 3 of 10", say). It does nothing when the handler does not
// run as a task. The message of a progress notification (NotifyProgress) sets it too.
func (c *Caller) SetStatusMessage(ctx context.Context, message string) error {
	rs := c.state()
	if rs == nil {
		return errNoRequest
	}
	if rs.task == nil {
		return nil
	}
	_, err := rs.sess.server.updateTask(rs.task, func(r *TaskRecord) error {
		if r.Status.Terminal() {
			return errTaskTerminal
		}
		r.StatusMessage = message
		return nil
	})
	if err != nil && !errors.Is(err, errTaskTerminal) && !errors.Is(err, ErrTaskNotFound) {
		return fmt.Errorf("mcp: set the task's status message: %w", err)
	}
	return nil
}

// MaxTaskMetadata is the most bytes a task's metadata may take, as JSON
// (Caller.SetTaskMetadata): metadata says where a long job is (rows imported, a phase), and
// it goes out with every answer about the task, each tasks/get of a client that polls.
const MaxTaskMetadata = 64 << 10

// ErrTaskMetadataTooLarge is the error (wrapped) of a SetTaskMetadata whose value encodes to
// more than MaxTaskMetadata bytes.
var ErrTaskMetadataTooLarge = errors.New("mcp: task metadata larger than MaxTaskMetadata (64 KiB)")

// SetTaskMetadata replaces the metadata of the task whose handler runs: what tasks/get,
// tasks/list and the task's status notifications show the client in the Task's _meta, under
// TaskMetadataMetaKey (a typed client reads it with TaskMetadataOf). v is a proto.Message,
// encoded in the proto3 JSON mapping as typed results are (an *anypb.Any is unpacked first,
// its type resolved among the linked-in files: the metadata is the message it holds), or any
// value encoding/json encodes; nil clears the metadata. A value of more than MaxTaskMetadata
// bytes is refused with ErrTaskMetadataTooLarge, and one the task store's byte budget cannot
// hold with ErrTaskLimit; the metadata counts toward that budget as the rest of the task's
// record does. As SetStatusMessage, it does nothing when the handler does not run as a task,
// or once the task is terminal (cancelled, say: the handler may not have stopped yet).
func (c *Caller) SetTaskMetadata(ctx context.Context, v any) error {
	rs := c.state()
	if rs == nil {
		return errNoRequest
	}
	if rs.task == nil {
		return nil
	}
	b, err := encodeTaskMetadata(v)
	if err != nil {
		return fmt.Errorf("mcp: set the task's metadata: %w", err)
	}
	_, err = rs.sess.server.updateTask(rs.task, func(r *TaskRecord) error {
		if r.Status.Terminal() {
			return errTaskTerminal
		}
		r.Metadata = b
		return nil
	})
	if err != nil && !errors.Is(err, errTaskTerminal) && !errors.Is(err, ErrTaskNotFound) {
		return fmt.Errorf("mcp: set the task's metadata: %w", err)
	}
	return nil
}

// encodeTaskMetadata encodes a task's metadata (SetTaskMetadata): nil (no metadata) for nil
// or a value that encodes to null.
func encodeTaskMetadata(v any) (json.RawMessage, error) {
	var b []byte
	var err error
	switch m := v.(type) {
	case nil:
		return nil, nil
	case *anypb.Any:
		if m == nil {
			return nil, nil
		}
		inner, uerr := anypb.UnmarshalNew(m, proto.UnmarshalOptions{Resolver: protoregistry.GlobalTypes})
		if uerr != nil {
			return nil, fmt.Errorf("unpack the Any of type %q: %w", m.GetTypeUrl(), uerr)
		}
		b, err = protojsonfast.Append(nil, inner)
	case proto.Message:
		if !m.ProtoReflect().IsValid() {
			return nil, nil // a typed nil
		}
		b, err = protojsonfast.Append(nil, m)
	default:
		b, err = json.Marshal(v)
	}
	if err != nil {
		return nil, err
	}
	if len(b) > MaxTaskMetadata {
		return nil, fmt.Errorf("%w: it encodes to %d bytes", ErrTaskMetadataTooLarge, len(b))
	}
	if string(b) == "null" {
		return nil, nil
	}
	return b, nil
}

// DeferTask is a HandlerOption of a tool that may run as a task (ToolSpec.TaskSupport): the
// runtime does not make its calls tasks before its handler runs; the handler runs in the
// request, may ask the client for input there (in 2026-07-28 by multi round-trip requests),
// and becomes a task by returning ContinueAsTask. A handler that answers directly answers the
// call, or, when the client asked for a task (2025-11-25 params.task), a task completed at
// once. This is how a tool gathers input first and then goes on asynchronously
// (io.modelcontextprotocol/tasks, composition with multi round-trip requests).
func DeferTask() HandlerOption { return deferTaskOption{} }

type deferTaskOption struct{}

func (deferTaskOption) applyHandler(c *handlerConfig) { c.deferTask = true }

// ContinueAsTask returns the error with which a handler goes on as a task: the call answers
// with a CreateTaskResult, and fn runs detached, as the task's handler, on the task's context
// (its Caller reports the task's ID, and its input requests go through the task). Where the
// call cannot be a task (its client does not support tasks, or its tool was not registered
// with DeferTask and does not run as one already), fn runs at once, in the request.
func ContinueAsTask(fn func(ctx context.Context) (*CallToolResult, error)) error {
	return &taskContinuation{fn: fn}
}

// taskContinuation is what ContinueAsTask returns.
type taskContinuation struct {
	fn func(ctx context.Context) (*CallToolResult, error)
}

// Error says what the value is, should it be seen as an error.
func (*taskContinuation) Error() string { return "mcp: the handler continues as a task" }

// continueInline runs a ContinueAsTask where no task can be made: at once, in the request.
func continueInline(ctx context.Context, req *Request, resp *Response, err error) (*Response, error) {
	if err == nil {
		return resp, nil // without the errors.As target below, which is on the heap
	}
	var cont *taskContinuation
	if !errors.As(err, &cont) {
		return resp, err
	}
	res, err := cont.fn(ctx)
	if err != nil {
		return nil, err
	}
	out := req.response()
	*out = Response{Result: res}
	return out, nil
}

// deferredTaskFunc returns the CallFunc of a call of a DeferTask tool whose client can have
// a task: the handler runs in the request, and its ContinueAsTask starts the task.
func (s *Server) deferredTaskFunc(t *toolEntry, ttl time.Duration) CallFunc {
	return func(ctx context.Context, req *Request) (*Response, error) {
		resp, err := t.call(ctx, req)
		var cont *taskContinuation
		var run CallFunc
		switch {
		case err != nil && errors.As(err, &cont):
			run = func(ctx context.Context, req *Request) (*Response, error) {
				return continueInline(ctx, req, nil, cont) // fn, on the task's context
			}
		case req.rs.sess.stateless || (req.rs.mrtr != nil && req.rs.mrtr.inputRequired() != nil):
			return resp, err // answered directly (2026-07-28 allows it), or asking for input
		default:
			// 2025-11-25 asked for a task: one that ends at once with this answer.
			var kept Response
			if resp != nil {
				kept = *resp
			}
			run = func(_ context.Context, req *Request) (*Response, error) {
				if err != nil {
					return nil, err
				}
				out := req.response()
				*out = kept
				return out, nil
			}
		}
		rec, err := s.startTask(ctx, req, t, ttl, run)
		if err != nil {
			return nil, err
		}
		out := req.response()
		*out = Response{Result: &taskCreated{rec: rec, modern: req.rs.sess.stateless}}
		return out, nil
	}
}
