package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"time"
)

// The task methods: tasks/get, tasks/result, tasks/list and tasks/cancel in 2025-11-25 (spec
// 2025-11-25, basic/utilities "Tasks"), tasks/get, tasks/update and tasks/cancel in
// 2026-07-28 (extension io.modelcontextprotocol/tasks, where tasks/result and tasks/list are
// removed and a client that did not declare the extension is refused with -32021).

// addTaskMethods registers the task methods' handlers.
func (s *Server) addTaskMethods() {
	s.methods[methodTasksGet] = s.handleTasksGet
	s.methods[methodTasksResult] = s.handleTasksResult
	s.methods[methodTasksList] = s.handleTasksList
	s.methods[methodTasksCancel] = s.handleTasksCancel
	s.methods[methodTasksUpdate] = s.handleTasksUpdate
}

// taskIDParams are the params of tasks/get, tasks/result, tasks/cancel and tasks/update.
type taskIDParams struct {
	TaskID         string                     `json:"taskId"`
	InputResponses map[string]json.RawMessage `json:"inputResponses"`
	Cursor         string                     `json:"cursor"`
}

// checkModernTasks refuses a 2026-07-28 task method of a client that did not declare the
// extension (-32021), and the methods the extension removed (-32601).
func checkModernTasks(rs *requestState, method string) error {
	if !rs.sess.stateless {
		if method == methodTasksUpdate {
			return Errorf(CodeMethodNotFound, "method not found: %s is a method of MCP %s's tasks extension", method, ProtocolVersion20260728)
		}
		return nil
	}
	switch method {
	case methodTasksResult, methodTasksList:
		return Errorf(CodeMethodNotFound, "method not found: %s is not a method of the %s extension (tasks/get inlines the result)", method, taskExtension)
	}
	if !clientDeclaresTasks(rs.sess) {
		data, _ := json.Marshal(map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{taskExtension: map[string]any{}}}})
		return &Error{Code: CodeMissingClientCapability, Message: method + " needs the extension " + taskExtension + " in the request's clientCapabilities", Data: data}
	}
	return nil
}

// lookupTask decodes a task method's params and finds the task they name among the
// caller's, failing with -32602 for an unknown one (another caller's tasks are unknown to
// this one: spec 2025-11-25, Tasks, Security Considerations).
func (s *Server) lookupTask(ctx context.Context, rs *requestState, method string, params json.RawMessage) (*TaskRecord, *taskIDParams, error) {
	if err := checkModernTasks(rs, method); err != nil {
		return nil, nil, err
	}
	var p taskIDParams
	if err := unmarshalParams(params, &p); err != nil {
		return nil, nil, err
	}
	if p.TaskID == "" {
		return nil, nil, Errorf(CodeInvalidParams, "%s needs params.taskId", method)
	}
	sctx, cancel := context.WithTimeout(ctx, storeTimeout)
	rec, err := s.taskStore().Get(sctx, p.TaskID)
	cancel()
	switch {
	case errors.Is(err, ErrTaskNotFound):
		return nil, nil, Errorf(CodeInvalidParams, "no task %q: it never existed, or it expired", truncate(p.TaskID, 64))
	case err != nil:
		return nil, nil, Errorf(CodeInternalError, "the task store is unavailable: %v", err)
	case rec.Owner != "" && rec.Owner != taskOwner(rs):
		return nil, nil, Errorf(CodeInvalidParams, "no task %q: it never existed, or it expired", truncate(p.TaskID, 64))
	}
	return s.checkOrphan(ctx, rec), &p, nil
}

// checkOrphan ends a task whose handler no longer runs anywhere in a replica set: its
// replica's lease on the Bus lapsed, or on its own replica no handler runs it, as after a
// restart under the same WithReplicaID. It is reported failed rather than working forever.
// Outside a replica set nothing is known of who runs a task: every server writes the same
// empty Replica, and a store shared by servers that are not a replica set holds tasks that
// others run; the TTL ends those of a server that died.
func (s *Server) checkOrphan(ctx context.Context, rec *TaskRecord) *TaskRecord {
	if rec.Status.Terminal() || s.cluster == nil {
		return rec
	}
	var why string
	switch {
	case rec.Replica == s.replicaID():
		if s.runningTaskOf(rec.ID) != nil {
			return rec
		}
		why = "the task's handler is no longer running: its server restarted"
	case s.cluster.bus != nil:
		actx, cancel := context.WithTimeout(ctx, storeTimeout)
		alive, err := s.cluster.bus.Alive(actx, rec.Replica)
		cancel()
		if err != nil || alive {
			return rec
		}
		why = "the replica running the task (" + rec.Replica + ") stopped: its lease lapsed"
	default:
		return rec
	}
	sctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	failed, err := s.taskStore().Update(sctx, rec.ID, func(r *TaskRecord) error {
		if r.Status.Terminal() {
			return errTaskTerminal
		}
		e, _ := json.Marshal(NewError(CodeInternalError, why))
		r.Status, r.StatusMessage, r.Error, r.InputRequests = TaskFailed, why, e, nil
		r.LastUpdatedAt = time.Now().UTC().Truncate(time.Millisecond)
		return nil
	})
	if err != nil {
		if got, gerr := s.taskStore().Get(sctx, rec.ID); gerr == nil {
			return got
		}
		return rec
	}
	return failed
}

// handleTasksGet answers tasks/get: the task (2025-11-25), or the DetailedTask with its
// result, error or input requests inlined (2026-07-28).
func (s *Server) handleTasksGet(ctx context.Context, rs *requestState, params json.RawMessage) (any, error) {
	rec, _, err := s.lookupTask(ctx, rs, methodTasksGet, params)
	if err != nil {
		return nil, err
	}
	if rs.sess.stateless {
		return json.RawMessage(modernTask(rec, "", true)), nil
	}
	return json.RawMessage(legacyTask(rec)), nil
}

// handleTasksCancel answers tasks/cancel: the task turns cancelled and its handler's context
// is cancelled. 2025-11-25 refuses a terminal task with -32602 and answers with the task;
// 2026-07-28 acknowledges with an empty result, for a terminal task too.
func (s *Server) handleTasksCancel(ctx context.Context, rs *requestState, params json.RawMessage) (any, error) {
	rec, _, err := s.lookupTask(ctx, rs, methodTasksCancel, params)
	if err != nil {
		return nil, err
	}
	if rec.Status.Terminal() {
		if rs.sess.stateless {
			return json.RawMessage("{}"), nil
		}
		return nil, Errorf(CodeInvalidParams, "task %q is %s already: it cannot be cancelled", truncate(rec.ID, 64), rec.Status)
	}
	cancelled, err := s.cancelTask(ctx, rec.ID)
	if err != nil {
		return nil, err
	}
	if rs.sess.stateless {
		return json.RawMessage("{}"), nil
	}
	if cancelled.Status != TaskCancelled {
		return nil, Errorf(CodeInvalidParams, "task %q is %s already: it cannot be cancelled", truncate(rec.ID, 64), cancelled.Status)
	}
	return json.RawMessage(legacyTask(cancelled)), nil
}

// cancelTask stores a task as cancelled, before its handler stops (spec 2025-11-25, Tasks,
// Cancellation: the status changes before the response), then cancels the handler, here or
// on the replica that runs it. It returns the record as it now is (terminal).
func (s *Server) cancelTask(ctx context.Context, id string) (*TaskRecord, error) {
	sctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	rec, err := s.taskStore().Update(sctx, id, func(r *TaskRecord) error {
		if r.Status.Terminal() {
			return errTaskTerminal
		}
		r.Status, r.StatusMessage, r.InputRequests = TaskCancelled, "cancelled by the client", nil
		r.LastUpdatedAt = time.Now().UTC().Truncate(time.Millisecond)
		return nil
	})
	if errors.Is(err, errTaskTerminal) {
		return s.taskStore().Get(sctx, id)
	}
	if err != nil {
		return nil, Errorf(CodeInternalError, "the task store is unavailable: %v", err)
	}
	if rt := s.runningTaskOf(id); rt != nil {
		rt.cancel(errTaskCancelled)
		rt.signal()
		s.notifyTaskStatus(rt, rec)
	} else if s.cluster != nil && rec.Replica != "" {
		s.publish(rec.Replica, &busMessage{Kind: busTaskCancel, Data: json.RawMessage(strconv.Quote(id))})
	}
	return rec, nil
}

// handleTasksUpdate answers tasks/update (2026-07-28): the client's answers to the task's
// input requests, by key, go to its handler; the answer is an empty acknowledgement.
func (s *Server) handleTasksUpdate(ctx context.Context, rs *requestState, params json.RawMessage) (any, error) {
	rec, p, err := s.lookupTask(ctx, rs, methodTasksUpdate, params)
	if err != nil {
		return nil, err
	}
	if p.InputResponses == nil {
		return nil, Errorf(CodeInvalidParams, "tasks/update needs params.inputResponses: an object of the answers to the task's inputRequests, by key")
	}
	if rec.Status.Terminal() {
		return json.RawMessage("{}"), nil
	}
	rt := s.runningTaskOf(rec.ID)
	for key, ans := range p.InputResponses {
		switch {
		case rt != nil:
			rt.answerInput(key, ans)
		case s.cluster != nil && rec.Replica != "":
			b, _ := json.Marshal(taskAnswer{Task: rec.ID, Key: key, Answer: ans})
			s.publish(rec.Replica, &busMessage{Kind: busTaskInput, Data: b})
		}
	}
	return json.RawMessage("{}"), nil
}

// taskAnswer is an input answer sent over the Bus to the replica running the task.
type taskAnswer struct {
	Task   string          `json:"t"`
	Key    string          `json:"k"`
	Answer json.RawMessage `json:"a"`
}

// handleTasksList answers tasks/list (2025-11-25): the caller's own tasks, a page at a time.
func (s *Server) handleTasksList(ctx context.Context, rs *requestState, params json.RawMessage) (any, error) {
	if err := checkModernTasks(rs, methodTasksList); err != nil {
		return nil, err
	}
	var p taskIDParams
	if err := unmarshalParams(params, &p); err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, storeTimeout)
	recs, more, err := s.taskStore().List(sctx, taskOwner(rs), p.Cursor, s.cfg.pageSize)
	cancel()
	if err != nil {
		return nil, Errorf(CodeInternalError, "the task store is unavailable: %v", err)
	}
	buf := []byte(`{"tasks":[`)
	for i, r := range recs {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, legacyTask(s.checkOrphan(ctx, r))...)
	}
	buf = append(buf, ']')
	if more && len(recs) > 0 {
		c, _ := json.Marshal(recs[len(recs)-1].ID)
		buf = append(buf, `,"nextCursor":`...)
		buf = append(buf, c...)
	}
	return json.RawMessage(append(buf, '}')), nil
}

// handleTasksResult answers tasks/result (2025-11-25): it blocks until the task is terminal,
// asking the client meanwhile, on this request's stream, what the task's handler waits for;
// then it answers what the tools/call would have, with the related-task _meta.
func (s *Server) handleTasksResult(ctx context.Context, rs *requestState, params json.RawMessage) (any, error) {
	rec, p, err := s.lookupTask(ctx, rs, methodTasksResult, params)
	if err != nil {
		return nil, err
	}
	w := &taskWaiter{}
	defer w.leave() // last: once nothing asks on this request's stream any more
	var asking sync.WaitGroup
	defer asking.Wait()
	askCtx, stopAsking := context.WithCancel(ctx)
	defer stopAsking()
	for !rec.Status.Terminal() {
		if err := s.awaitTaskChange(ctx, askCtx, rs, w, rec, &asking); err != nil {
			return nil, err
		}
		if rec, _, err = s.lookupTask(ctx, rs, methodTasksResult, params); err != nil {
			return nil, err
		}
	}
	stopAsking()
	return legacyOutcome(rec, p.TaskID)
}

// awaitTaskChange waits until the task of rec may have changed: its handler's signal when it
// runs here (asking the client, on rs's stream, for what it waits on, as waiter w), else its
// poll interval, within a second, when another replica runs it.
func (s *Server) awaitTaskChange(ctx, askCtx context.Context, rs *requestState, w *taskWaiter, rec *TaskRecord, asking *sync.WaitGroup) error {
	var wake <-chan struct{}
	var tick, expiry <-chan time.Time
	if rt := s.runningTaskOf(rec.ID); rt != nil {
		wake = rt.changes()
		s.askForTask(askCtx, rs, rt, w, asking)
	} else {
		t := time.NewTimer(min(max(rec.PollInterval, 50*time.Millisecond), time.Second))
		defer t.Stop()
		tick = t.C
	}
	if rec.TTL > 0 {
		// The record is forgotten when its TTL runs out, whether or not its handler
		// returns then: look again at that moment (no sooner than 50 ms from now, lest a
		// store that keeps an expired record a while make this loop spin).
		t := time.NewTimer(max(time.Until(rec.CreatedAt.Add(rec.TTL))+time.Millisecond, 50*time.Millisecond))
		defer t.Stop()
		expiry = t.C
	}
	select {
	case <-wake:
	case <-tick:
	case <-expiry:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// legacyOutcome is what tasks/result answers for a terminal task: the tool's result with the
// related-task _meta, or the JSON-RPC error of the call.
func legacyOutcome(rec *TaskRecord, id string) (any, error) {
	switch {
	case len(rec.Result) > 0:
		return json.RawMessage(withRelatedTask(rec.Result, id)), nil
	case len(rec.Error) > 0:
		var e Error
		if json.Unmarshal(rec.Error, &e) == nil && e.Code != 0 {
			return nil, &e
		}
		return nil, NewError(CodeInternalError, rec.StatusMessage)
	case rec.Status == TaskCancelled:
		return nil, Errorf(CodeRequestCancelled, "task %q was cancelled", truncate(id, 64))
	}
	return nil, NewError(CodeInternalError, "task "+strconv.Quote(truncate(id, 64))+" ended without a result")
}

// taskWaiter is one tasks/result request waiting on a task that runs here (2025-11-25). Its
// stream outlives its connection, so that the client can resume it (spec 2025-11-25,
// Transports, Resumability and Redelivery): the request goes on waiting after its client
// went away, and an input request it asked there goes unanswered until the request's bound
// (WithCallerRequestTimeout) ends. Then the input request goes to another waiter that has
// not asked it yet, rather than back to the stream that did not answer it: woken at the
// same moment as the others, that request would win the race for it again and again, and
// keep the input request from a client that waits on another stream, as long as the task's
// TTL.
type taskWaiter struct {
	rt *runningTask // the task it waits on, once it asked for it
}

// leave ends w's wait: it no longer counts among the task's waiters, and, when an input
// request waits unasked (the others that tried it let it go to w), the other waiters look
// again.
func (w *taskWaiter) leave() {
	rt := w.rt
	if rt == nil {
		return
	}
	rt.mu.Lock()
	delete(rt.waiters, w)
	unasked := false
	for _, in := range rt.inputs {
		delete(in.tried, w)
		unasked = unasked || !in.claimed
	}
	rt.mu.Unlock()
	if unasked {
		rt.signal()
	}
}

// mayAskLocked reports whether waiter w may ask input request in: when w has not tried it,
// or when every waiter has (then a new round begins: the client may have come back to any of
// their streams). rt.mu is held.
func (rt *runningTask) mayAskLocked(in *taskInput, w *taskWaiter) bool {
	if !in.tried[w] {
		return true
	}
	if rt.untriedLocked(in) {
		return false
	}
	clear(in.tried)
	return true
}

// untriedLocked reports whether some waiter on the task has not tried input request in.
// rt.mu is held.
func (rt *runningTask) untriedLocked(in *taskInput) bool {
	for o := range rt.waiters {
		if !in.tried[o] {
			return true
		}
	}
	return false
}

// askForTask sends the client, on the stream of the tasks/result request rs (waiter w), each
// input request of the task that no other tasks/result stream is asking yet and that w may
// ask (mayAskLocked), with the related-task _meta (spec 2025-11-25, Tasks, Input Required
// Status), and hands the answers to the task.
func (s *Server) askForTask(ctx context.Context, rs *requestState, rt *runningTask, w *taskWaiter, asking *sync.WaitGroup) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if w.rt == nil {
		w.rt = rt
		if rt.waiters == nil {
			rt.waiters = make(map[*taskWaiter]struct{})
		}
		rt.waiters[w] = struct{}{}
	}
	for key, in := range rt.inputs {
		if in.claimed || !rt.mayAskLocked(in, w) {
			continue
		}
		in.claimed = true
		asking.Add(1)
		go func() {
			defer asking.Done()
			raw, err := rs.sess.request(ctx, rs.st, in.method, json.RawMessage(withRelatedTask(in.params, rt.id)))
			var refused *Error
			if errors.As(err, &refused) {
				// The client answered with an error (it declines to elicit, say): the
				// handler gets it, as it would outside a task, rather than waiting on.
				rt.replyInput(key, taskReply{err: refused})
				return
			}
			if err != nil {
				gone := ctx.Err() != nil // this tasks/result ended: w leaves
				rt.mu.Lock()
				in.claimed = false
				if !gone {
					if in.tried == nil {
						in.tried = make(map[*taskWaiter]bool)
					}
					in.tried[w] = true
				}
				others := rt.untriedLocked(in)
				rt.mu.Unlock()
				// Another tasks/result waiting on the task asks it instead (this one ended,
				// or its client did not answer in time): wake them. Not after a send that
				// failed at once while every waiter has tried it, which waking would
				// repeat in a loop; each waiter tries it once a round.
				if gone || others || errors.Is(err, context.DeadlineExceeded) {
					rt.signal()
				}
				return
			}
			rt.answerInput(key, raw)
		}()
	}
}

// TaskMetadataMetaKey is the key, in a Task's _meta, of the metadata its handler published
// with Caller.SetTaskMetadata (the _meta of the Task itself, or of the result or notification
// params that are a Task: tasks/get, tasks/list, tasks/cancel and notifications/tasks/status
// in 2025-11-25, tasks/get in 2026-07-28). _meta is where the spec lets an implementation add
// to a protocol object (spec 2025-11-25, Basic, "_meta"); the key's prefix is protomcp's.
const TaskMetadataMetaKey = "com.github.protomcp/taskMetadata"

// Timestamps are ISO 8601 in UTC with milliseconds.
const taskTimeFormat = "2006-01-02T15:04:05.000Z"

// legacyTask encodes a Task as 2025-11-25 has it: ttl and pollInterval in milliseconds.
func legacyTask(r *TaskRecord) []byte {
	b := taskHead(r)
	b = append(b, `,"ttl":`...)
	b = appendTTL(b, r.TTL)
	b = append(b, `,"pollInterval":`...)
	b = strconv.AppendInt(b, r.PollInterval.Milliseconds(), 10)
	return append(b, '}')
}

// modernTask encodes a task as the 2026-07-28 extension has it: ttlMs and pollIntervalMs, a
// leading resultType when one is given, and (detailed, for tasks/get) the result, error or
// input requests inlined.
func modernTask(r *TaskRecord, resultType string, detailed bool) []byte {
	var b []byte
	if resultType != "" {
		b = append(b, `{"resultType":"`+resultType+`",`...)
		b = append(b, taskHead(r)[1:]...)
	} else {
		b = taskHead(r)
	}
	b = append(b, `,"ttlMs":`...)
	b = appendTTL(b, r.TTL)
	b = append(b, `,"pollIntervalMs":`...)
	b = strconv.AppendInt(b, max(r.PollInterval.Milliseconds(), 1), 10)
	if detailed {
		switch {
		case len(r.Result) > 0 && r.Status == TaskCompleted:
			b = append(b, `,"result":`...)
			b = append(b, r.Result...)
		case len(r.Error) > 0 && r.Status == TaskFailed:
			b = append(b, `,"error":`...)
			b = append(b, r.Error...)
		case len(r.InputRequests) > 0 && r.Status == TaskInputRequired:
			b = append(b, `,"inputRequests":`...)
			b = append(b, r.InputRequests...)
		}
	}
	return append(b, '}')
}

// taskHead encodes the members every Task has, without the closing brace.
func taskHead(r *TaskRecord) []byte {
	b := make([]byte, 0, 256+len(r.StatusMessage)+len(r.Metadata))
	b = append(b, `{"taskId":`...)
	b = strconv.AppendQuote(b, r.ID)
	b = append(b, `,"status":"`...)
	b = append(b, r.Status...)
	b = append(b, '"')
	if r.StatusMessage != "" {
		m, _ := json.Marshal(r.StatusMessage)
		b = append(b, `,"statusMessage":`...)
		b = append(b, m...)
	}
	b = append(b, `,"createdAt":"`...)
	b = r.CreatedAt.UTC().AppendFormat(b, taskTimeFormat)
	b = append(b, `","lastUpdatedAt":"`...)
	b = r.LastUpdatedAt.UTC().AppendFormat(b, taskTimeFormat)
	b = append(b, '"')
	if len(r.Metadata) > 0 {
		b = append(b, `,"_meta":{"`+TaskMetadataMetaKey+`":`...)
		b = append(b, r.Metadata...)
		b = append(b, '}')
	}
	return b
}

// appendTTL appends a TTL in milliseconds, null for none; a TTL under a millisecond is 1,
// for the wire's TTL is null or a positive integer (extension io.modelcontextprotocol/tasks,
// ttlMs).
func appendTTL(b []byte, ttl time.Duration) []byte {
	if ttl <= 0 {
		return append(b, "null"...)
	}
	return strconv.AppendInt(b, max(ttl.Milliseconds(), 1), 10)
}

// checkTaskNameHeader checks the Mcp-Name header of a tasks/get, tasks/update or
// tasks/cancel against params.taskId, which it must repeat when present (extension
// io.modelcontextprotocol/tasks, Streamable HTTP: Routing Headers).
func checkTaskNameHeader(hv []string, msg *wireMessage) *modernError {
	switch msg.Method {
	case methodTasksGet, methodTasksUpdate, methodTasksCancel:
	default:
		return nil
	}
	if len(hv) == 0 {
		return nil
	}
	var p struct {
		TaskID *string `json:"taskId"`
	}
	_ = json.Unmarshal(msg.Params, &p)
	return checkNameHeader(hv, msg.Method, "taskId", p.TaskID)
}
