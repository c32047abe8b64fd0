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
	"go.uber.org/goleak"

	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
	"github.com/protomcp/protomcp/runtime"
)

// TestTasksResultEndsWithTTL proves that a tasks/result waiting on a task whose TTL runs out
// answers (the task is gone: -32602) rather than blocking until the client gives up, both
// when the handler returns on its context's end and when it ignores it (spec 2025-11-25,
// Tasks, Task Results: a task past its TTL may be deleted).
func TestTasksResultEndsWithTTL(t *testing.T) {
	t.Parallel()
	hs, tt := newTaskServer(t)
	c := newLegacyClient(t, hs.URL)
	for _, tool := range []string{"slow", "stubborn"} {
		t.Run(tool, func(t *testing.T) {
			if tool == "stubborn" {
				stubborn := make(chan struct{})
				hs, tt = newTaskServerWith(t, func(s *runtime.Server) {
					s.AddTool(runtime.ToolSpec{Name: "stubborn", Description: "ignores its context", TaskSupport: runtime.TaskOptional}, func(context.Context, *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
						<-stubborn
						return textResult("late"), nil
					})
				})
				t.Cleanup(func() { close(stubborn) }) // before the server's Shutdown waits for it
				c = newLegacyClient(t, hs.URL)
			}
			id := c.result("tools/call", map[string]any{"name": tool, "task": map[string]any{"ttl": 300}})["task"].(map[string]any)["taskId"].(string)
			if tool == "slow" {
				<-tt.started
			}
			done := make(chan rpcReply, 1)
			go func() { done <- c.call("tasks/result", map[string]any{"taskId": id}) }()
			select {
			case r := <-done:
				require.NotNil(t, r.Error, "tasks/result of an expired task is an error")
				require.Equal(t, int(runtime.CodeInvalidParams), r.Error.Code)
			case <-time.After(5 * time.Second):
				require.FailNow(t, "tasks/result still blocks 5 s after the task's TTL of 300 ms ran out")
			}
		})
	}
}

// newTaskServerWith starts a loopback task server with the tools add registers besides the
// task tools.
func newTaskServerWith(t *testing.T, add func(*runtime.Server), opts ...runtime.ServerOption) (*httptest.Server, *taskTools) {
	t.Helper()
	s := runtime.NewServer(runtime.Implementation{Name: "tasks", Version: "1"}, append([]runtime.ServerOption{runtime.WithLogger(discardLogger())}, opts...)...)
	tt := addTaskTools(s)
	add(s)
	hs := httptest.NewServer(s)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
		hs.Close()
	})
	return hs, tt
}

// readRefusing reads the SSE response of a request, answering each request the server sends
// on it with a JSON-RPC error, and returns the response.
func (c *rawClient) readRefusing(resp *http.Response) rpcReply {
	defer resp.Body.Close()
	require.Equal(c.t, "text/event-stream", resp.Header.Get("Content-Type"))
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
			rpcReply
		}
		require.NoError(c.t, json.Unmarshal([]byte(data), &m))
		switch {
		case m.Method != "" && len(m.ID) > 0:
			out := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32600,"message":"the user is away"}}`, m.ID)
			r := c.send([]byte(out), nil)
			r.Body.Close()
		case m.Method == "":
			return m.rpcReply
		}
	}
	require.Fail(c.t, "the stream ended without a response", "%v", sc.Err())
	return rpcReply{}
}

// TestTasksLegacyInputRefused proves that a client's error answer to a task's elicitation,
// asked on the tasks/result stream, reaches the handler as it would outside a task, and the
// task ends, rather than the handler and tasks/result waiting on an answer that never comes
// (spec 2025-11-25, Tasks, Input Required Status).
func TestTasksLegacyInputRefused(t *testing.T) {
	t.Parallel()
	hs, _ := newTaskServer(t)
	c := newLegacyClient(t, hs.URL)
	id := c.result("tools/call", map[string]any{"name": "ask", "task": map[string]any{}})["task"].(map[string]any)["taskId"].(string)
	c.waitStatus(id, runtime.TaskInputRequired)
	done := make(chan rpcReply, 1)
	go func() {
		done <- c.readRefusing(c.send(c.body("tasks/result", map[string]any{"taskId": id}), nil))
	}()
	select {
	case r := <-done:
		require.NotNil(t, r.Error, "the handler's Elicit failed, and so did the task")
		assert.Contains(t, r.Error.Message, "the user is away")
	case <-time.After(5 * time.Second):
		require.FailNow(t, "tasks/result still blocks 5 s after the client refused the task's elicitation")
	}
	assert.Equal(t, "failed", c.result("tasks/get", map[string]any{"taskId": id})["status"])
}

// TestTaskToolErrorBothEras proves that a typed task tool's tool error reaches the typed
// client as a *ToolError with the tool's content in both eras, against the real server: in
// 2025-11-25 such a task is failed and tasks/result carries the CallToolResult with isError
// (spec 2025-11-25, Tasks, Task Status Lifecycle), in 2026-07-28 it completes with it.
func TestTaskToolErrorBothEras(t *testing.T) {
	t.Parallel()
	s := runtime.NewServer(runtime.Implementation{Name: "tasks"}, runtime.WithLogger(discardLogger()))
	runtime.AddTypedTool(s, runtime.ToolSpec{Name: "oops", TaskSupport: runtime.TaskRequired},
		func(context.Context, *mcpv1.TextContent) (*mcpv1.TextContent, error) {
			return nil, errors.New("no such city")
		})
	hs := httptest.NewServer(s)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
		hs.Close()
	})
	for _, era := range []runtime.Era{runtime.EraLegacy, runtime.EraModern} {
		c := runtime.NewClient(hs.URL, runtime.WithEra(era), runtime.WithLogger(discardLogger()))
		t.Cleanup(func() { _ = c.Close(context.Background()) })
		_, err := runtime.RunTypedTask[mcpv1.TextContent](testCtx(t), c, "oops", &mcpv1.TextContent{Text: "x"})
		var te *runtime.ToolError
		require.ErrorAsf(t, err, &te, "era %v", era)
		assert.Contains(t, te.Result.Text(), "no such city")
	}
}

// rewriteTasksGet wraps h so that the bodies of its answers to tasks/get are rewritten by
// edit, counting those requests in n: a server that sends what the test wants.
func rewriteTasksGet(h http.Handler, n *atomic.Int32, edit func(string) string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Method") != "tasks/get" {
			h.ServeHTTP(w, r)
			return
		}
		n.Add(1)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Del("Content-Length")
		w.WriteHeader(rec.Code)
		_, _ = io.WriteString(w, edit(rec.Body.String()))
	})
}

// TestTaskWaitGarbageServer proves that Wait neither polls forever a task whose status the
// server reports as something the spec does not define, nor polls faster than the client's
// floor when the server suggests an absurdly short interval.
func TestTaskWaitGarbageServer(t *testing.T) {
	t.Parallel()
	s := runtime.NewServer(runtime.Implementation{Name: "tasks", Version: "1"}, runtime.WithLogger(discardLogger()))
	tt := addTaskTools(s)
	var gets atomic.Int32
	var bogus atomic.Bool
	hs := httptest.NewServer(rewriteTasksGet(s, &gets, func(b string) string {
		b = strings.Replace(b, `"pollIntervalMs":1000`, `"pollIntervalMs":1`, 1)
		if bogus.Load() {
			b = strings.Replace(b, `"status":"working"`, `"status":"sleeping"`, 1)
		}
		return b
	}))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
		hs.Close()
	})
	t.Cleanup(func() { close(tt.release) }) // before Shutdown waits for the handler
	c := runtime.NewClient(hs.URL, runtime.WithEra(runtime.EraModern), runtime.WithLogger(discardLogger()))
	t.Cleanup(func() { _ = c.Close(context.Background()) })

	h, err := runtime.StartTypedTask[mcpv1.TextContent](testCtx(t), c, "slow", &mcpv1.TextContent{})
	require.NoError(t, err)
	require.NotEmpty(t, h.ID())
	info, err := h.Status(testCtx(t)) // the handle now holds the 1 ms interval
	require.NoError(t, err)
	require.Equal(t, time.Millisecond, info.PollInterval)
	gets.Store(0)
	ctx, cancel := context.WithTimeout(testCtx(t), time.Second)
	defer cancel()
	_, err = h.Wait(ctx)
	require.Equal(t, runtime.CodeDeadlineExceeded, runtime.CodeOf(err), "%v", err)
	assert.LessOrEqual(t, gets.Load(), int32(15), "a second of Wait polls at most ~10 times, whatever the server suggests")

	bogus.Store(true)
	ctx, cancel = context.WithTimeout(testCtx(t), 5*time.Second)
	defer cancel()
	_, err = h.Wait(ctx)
	require.Error(t, err)
	assert.NotEqual(t, runtime.CodeDeadlineExceeded, runtime.CodeOf(err), "a status outside the spec ends Wait at once: %v", err)
	assert.Contains(t, err.Error(), "sleeping")
}

// TestTasksSharedStoreWithoutReplicaSet proves that two servers sharing a TaskStore without
// being a replica set (no Bus) do not fail each other's running tasks: a task started through
// A and polled through B stays working, and completes.
func TestTasksSharedStoreWithoutReplicaSet(t *testing.T) {
	t.Parallel()
	store := runtime.NewMemoryTaskStore()
	a, tt := newTaskServer(t, runtime.WithTaskStore(store))
	b, _ := newTaskServer(t, runtime.WithTaskStore(store))
	id := newModernClient(t, a.URL, true).result("tools/call", map[string]any{"name": "slow"})["taskId"].(string)
	<-tt.started
	cb := newModernClient(t, b.URL, true)
	got := cb.result("tasks/get", map[string]any{"taskId": id})
	assert.Equal(t, "working", got["status"], "B sees A's task as A runs it: %v", got)
	close(tt.release)
	cb.waitStatus(id, runtime.TaskCompleted)
}

// TestTasksRelatedTaskMetaMerged proves that tasks/result's answer carries the related-task
// _meta (spec 2025-11-25, Tasks, Associating Task-Related Messages: all responses related
// to a task MUST include it) also when the tool's result has a _meta of its own, kept
// beside it, or a nested "_meta" somewhere in its content.
func TestTasksRelatedTaskMetaMerged(t *testing.T) {
	t.Parallel()
	hs, _ := newTaskServerWith(t, func(s *runtime.Server) {
		s.AddTool(runtime.ToolSpec{Name: "meta", Description: "a result with _meta", TaskSupport: runtime.TaskOptional}, func(context.Context, *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
			r := textResult("top")
			r.Meta = map[string]any{"app/trace": "t-1"}
			return r, nil
		})
		s.AddTool(runtime.ToolSpec{Name: "nested", Description: "a nested _meta", TaskSupport: runtime.TaskOptional}, func(context.Context, *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
			r := textResult("nested")
			r.StructuredContent = json.RawMessage(`{"_meta":{"x":1}}`)
			return r, nil
		})
	})
	c := newLegacyClient(t, hs.URL)
	for _, tool := range []string{"meta", "nested"} {
		id := c.result("tools/call", map[string]any{"name": tool, "task": map[string]any{}})["task"].(map[string]any)["taskId"].(string)
		r := c.call("tasks/result", map[string]any{"taskId": id})
		require.Nil(t, r.Error)
		var res struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		}
		require.NoError(t, json.Unmarshal(r.Result, &res))
		assert.JSONEqf(t, `{"taskId":"`+id+`"}`, string(res.Meta["io.modelcontextprotocol/related-task"]), "%s: %s", tool, r.Result)
		if tool == "meta" {
			assert.JSONEq(t, `"t-1"`, string(res.Meta["app/trace"]), "the tool's own _meta is kept")
		}
	}
}

// TestTasksModernInputKeyReused proves that a task whose handler asks twice under the same
// input key (WithInputKey, asking again after an answer it did not like) gets both answers
// through tasks/update, in 2026-07-28: each request has a key of its own, so the client,
// which answers each key once, does not take the second for the first.
func TestTasksModernInputKeyReused(t *testing.T) {
	t.Parallel()
	s := runtime.NewServer(runtime.Implementation{Name: "tasks"}, runtime.WithLogger(discardLogger()))
	runtime.AddTypedTool(s, runtime.ToolSpec{Name: "twice", TaskSupport: runtime.TaskRequired},
		func(ctx context.Context, _ *mcpv1.TextContent) (*mcpv1.TextContent, error) {
			var names []string
			for range 2 {
				res, err := runtime.CallerFrom(ctx).Elicit(runtime.WithInputKey(ctx, "name"), &runtime.ElicitParams{Message: "your name?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)})
				if err != nil {
					return nil, err
				}
				names = append(names, fmt.Sprint(res.Content["name"]))
			}
			return &mcpv1.TextContent{Text: strings.Join(names, ",")}, nil
		})
	hs := httptest.NewServer(s)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
		hs.Close()
	})
	var n atomic.Int32
	c := runtime.NewClient(hs.URL, runtime.WithEra(runtime.EraModern), runtime.WithLogger(discardLogger()),
		runtime.WithElicitationHandler(func(context.Context, *runtime.ElicitParams) (*runtime.ElicitResult, error) {
			return &runtime.ElicitResult{Action: "accept", Content: map[string]any{"name": fmt.Sprint("n", n.Add(1))}}, nil
		}))
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	ctx, cancel := context.WithTimeout(testCtx(t), 10*time.Second)
	defer cancel()
	got, err := runtime.RunTypedTask[mcpv1.TextContent](ctx, c, "twice", &mcpv1.TextContent{})
	require.NoError(t, err)
	assert.Equal(t, "n1,n2", got.GetText())
}

// TestTasksHugeTTLClamped proves that a ttl too large for a time.Duration is clamped to the
// server's maximum rather than wrapped around (18446744073710 ms wraps to under a
// millisecond: the task would expire at once).
func TestTasksHugeTTLClamped(t *testing.T) {
	t.Parallel()
	hs, tt := newTaskServer(t)
	defer close(tt.release)
	c := newLegacyClient(t, hs.URL)
	for _, ttl := range []int64{18446744073710, 9223372036854775807} {
		task := c.result("tools/call", map[string]any{"name": "slow", "task": map[string]any{"ttl": ttl}})["task"].(map[string]any)
		assert.EqualValues(t, (24 * time.Hour).Milliseconds(), task["ttl"], "ttl %d: the server's maximum", ttl)
	}
}

// flakyTaskStore is a MemoryTaskStore whose backend fails the first failures writes of a
// terminal status, as a shared store does while it is briefly unreachable.
type flakyTaskStore struct {
	*runtime.MemoryTaskStore
	failures atomic.Int32
}

var errStoreDown = errors.New("the store is briefly unreachable")

func (f *flakyTaskStore) Update(ctx context.Context, id string, fn func(*runtime.TaskRecord) error) (*runtime.TaskRecord, error) {
	return f.MemoryTaskStore.Update(ctx, id, func(r *runtime.TaskRecord) error {
		if err := fn(r); err != nil {
			return err
		}
		if r.Status.Terminal() && f.failures.Add(-1) >= 0 {
			return errStoreDown
		}
		return nil
	})
}

// TestTasksOutcomeStoredDespiteStoreHiccup proves that a task's outcome is stored although
// the store failed the first write of it: the task completes, rather than staying working
// (with nothing running it) until its TTL.
func TestTasksOutcomeStoredDespiteStoreHiccup(t *testing.T) {
	t.Parallel()
	store := &flakyTaskStore{MemoryTaskStore: runtime.NewMemoryTaskStore()}
	store.failures.Store(1)
	hs, tt := newTaskServer(t, runtime.WithTaskStore(store))
	c := newModernClient(t, hs.URL, true)
	id := c.result("tools/call", map[string]any{"name": "slow"})["taskId"].(string)
	<-tt.started
	close(tt.release)
	c.waitStatus(id, runtime.TaskCompleted)
}

// TestTasksSubMillisecondTTL proves that a TTL under a millisecond is sent as 1, a positive
// integer as the tasks extension requires of ttlMs (null or positive), never as 0.
func TestTasksSubMillisecondTTL(t *testing.T) {
	t.Parallel()
	hs, tt := newTaskServer(t, runtime.WithDefaultTaskTTL(500*time.Microsecond))
	defer close(tt.release)
	created := newModernClient(t, hs.URL, true).result("tools/call", map[string]any{"name": "slow"})
	assert.EqualValues(t, 1, created["ttlMs"])
}

// TestTaskResumeEmptyID proves that a handle resumed from an empty task ID does not report
// a completed task: there is no task, and Status says so.
func TestTaskResumeEmptyID(t *testing.T) {
	t.Parallel()
	hs, _ := newTaskServer(t)
	c := runtime.NewClient(hs.URL, runtime.WithEra(runtime.EraModern), runtime.WithLogger(discardLogger()))
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	h := runtime.ResumeTypedTask[mcpv1.TextContent](c, "slow", "")
	_, err := h.Status(testCtx(t))
	require.Error(t, err)
	assert.Equal(t, runtime.CodeInvalidParams, runtime.CodeOf(err), "%v", err)
}

// TestTasksNoLeakAfterShutdown leaves tasks in every state (working with a TTL, waiting for
// input with a tasks/result open on it, cancelled, completed, in both eras), shuts the
// server down, and checks that no goroutine of theirs (handler, timer, asking) is left.
func TestTasksNoLeakAfterShutdown(t *testing.T) {
	before := goleak.IgnoreCurrent()
	s := runtime.NewServer(runtime.Implementation{Name: "tasks"}, runtime.WithLogger(discardLogger()))
	tt := addTaskTools(s)
	hs := httptest.NewServer(s)
	l := newLegacyClient(t, hs.URL)
	m := newModernClient(t, hs.URL, true)
	l.result("tools/call", map[string]any{"name": "slow", "task": map[string]any{"ttl": 60000}})
	<-tt.started
	m.result("tools/call", map[string]any{"name": "slow"})
	<-tt.started
	cancelled := l.result("tools/call", map[string]any{"name": "slow", "task": map[string]any{}})["task"].(map[string]any)["taskId"].(string)
	<-tt.started
	l.result("tasks/cancel", map[string]any{"taskId": cancelled})
	l.result("tools/call", map[string]any{"name": "must", "task": map[string]any{}})
	asking := l.result("tools/call", map[string]any{"name": "ask", "task": map[string]any{}})["task"].(map[string]any)["taskId"].(string)
	l.waitStatus(asking, runtime.TaskInputRequired)
	mi := m.result("tools/call", map[string]any{"name": "ask"})["taskId"].(string)
	m.waitStatus(mi, runtime.TaskInputRequired)
	// A tasks/result open on the asking task, whose client never answers.
	ctx, cancel := context.WithCancel(testCtx(t))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, hs.URL, bytes.NewReader(l.body("tasks/result", map[string]any{"taskId": asking})))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", l.sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)

	sctx, scancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer scancel()
	_ = s.Shutdown(sctx)
	cancel()
	resp.Body.Close()
	hs.CloseClientConnections()
	hs.Close()
	http.DefaultClient.CloseIdleConnections()
	goleak.VerifyNone(t, before)
}

// TestTasksPlainCallOfRequiredTool proves that a plain CallTool of a tool that runs only as a
// task starts the task and waits for its result in both eras: in 2025-11-25 with params.task
// (tools/list says the tool requires it), in 2026-07-28 by declaring the tasks extension when
// the server refuses the call for lack of it (-32021 naming the extension).
func TestTasksPlainCallOfRequiredTool(t *testing.T) {
	t.Parallel()
	hs, _ := newTaskServer(t)
	for _, era := range []runtime.Era{runtime.EraLegacy, runtime.EraModern} {
		c := runtime.NewClient(hs.URL, runtime.WithEra(era), runtime.WithLogger(discardLogger()))
		t.Cleanup(func() { _ = c.Close(context.Background()) })
		res, err := c.CallTool(testCtx(t), "must", nil)
		require.NoErrorf(t, err, "era %v", era)
		assert.Equal(t, "must", res.Text())
	}
}

// TestTaskWaitOtherTaskID proves that a tasks/get answer about another task than the one
// asked is refused, rather than followed: Wait would otherwise poll, and return the result
// of, whatever task the server named.
func TestTaskWaitOtherTaskID(t *testing.T) {
	t.Parallel()
	s := runtime.NewServer(runtime.Implementation{Name: "tasks", Version: "1"}, runtime.WithLogger(discardLogger()))
	tt := addTaskTools(s)
	var gets atomic.Int32
	var other atomic.Value
	hs := httptest.NewServer(rewriteTasksGet(s, &gets, func(b string) string {
		var m struct {
			Result struct {
				TaskID string `json:"taskId"`
			} `json:"result"`
		}
		_ = json.Unmarshal([]byte(b), &m)
		if o, _ := other.Load().(string); o != "" && m.Result.TaskID != "" {
			b = strings.Replace(b, m.Result.TaskID, o, 1)
		}
		return b
	}))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
		hs.Close()
	})
	t.Cleanup(func() { close(tt.release) }) // before Shutdown waits for the handler
	c := runtime.NewClient(hs.URL, runtime.WithEra(runtime.EraModern), runtime.WithLogger(discardLogger()))
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	h, err := runtime.StartTypedTask[mcpv1.TextContent](testCtx(t), c, "slow", &mcpv1.TextContent{})
	require.NoError(t, err)
	<-tt.started
	other.Store("someone-elses-task")
	_, err = h.Status(testCtx(t))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "someone-elses-task")
}

// TestTasksLegacyInputAskedAgainAfterDrop proves that a task's input request asked on a
// tasks/result stream A whose client does not answer it (it went away, or does not read) is
// asked on another tasks/result stream B that waits on the task, rather than never (the task
// would sit in input_required until its TTL). A's stream outlives its connection (spec
// 2025-11-25, Transports, Resumability and Redelivery), so A's request goes on waiting too,
// and is woken first when its ask ends: the input request must go to B, which has not tried
// it, rather than back to A at every end of the bound (WithCallerRequestTimeout). B may wait
// from before A's bound ends (then A's client drops), or arrive after it ended and A, then
// the only waiter, was asked again (then A's client, still connected, must see no more than
// that ask end); and A's request may end instead (its client cancels it), which hands the
// input request to B without waiting for the bound.
func TestTasksLegacyInputAskedAgainAfterDrop(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// late: B arrives once A's first ask ended and A was asked again; cancel: A's
		// client cancels A's request, under a bound longer than the test waits.
		late, cancel bool
	}{
		{name: "B waits before the bound ends"},
		{name: "B arrives after the bound ended", late: true},
		{name: "A's request is cancelled", cancel: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			bound := 300 * time.Millisecond
			if tc.cancel {
				bound = time.Hour
			}
			var s *runtime.Server
			hs, _ := newTaskServerWith(t, func(srv *runtime.Server) { s = srv }, runtime.WithHandlerTimeout(runtime.Unlimited), runtime.WithCallerRequestTimeout(bound))
			c := newLegacyClient(t, hs.URL)
			id := c.result("tools/call", map[string]any{"name": "ask", "task": map[string]any{}})["task"].(map[string]any)["taskId"].(string)
			c.waitStatus(id, runtime.TaskInputRequired)

			// Stream A: its client reads what the server sends but never answers.
			a := openSilentTaskResult(t, c, id)
			require.Equal(t, "elicitation/create", a.next(t))
			if tc.late {
				// A's ask ends unanswered, and A, the only waiter, is asked again.
				require.Equal(t, "notifications/cancelled", a.next(t))
				require.Equal(t, "elicitation/create", a.next(t))
			}

			// Stream B: waits on the task while A holds the input request.
			c.answer = func(string, json.RawMessage) any {
				return map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}
			}
			done := make(chan rpcReply, 1)
			go func() { done <- c.call("tasks/result", map[string]any{"taskId": id}) }()
			require.True(t, waitFor(10*time.Second, func() bool { return runtime.TaskResultWaiters(s, id) == 2 }), "B never waited on the task")
			switch {
			case tc.cancel:
				a.cancel(t, c)
			case !tc.late:
				a.drop()
			}
			select {
			case r := <-done:
				require.Nil(t, r.Error)
				assert.Contains(t, string(r.Result), "Hello, Ada!")
			case <-time.After(10 * time.Second):
				require.FailNow(t, "the input request was never asked on B after A's client went away")
			}
			if tc.late {
				// What A saw after B was sent: the end of the ask it held, then the task's
				// result. One more ask only if B's request took a whole bound to start
				// waiting; never one at every end of the bound.
				var asked []string
				for m := a.next(t); m != ""; m = a.next(t) {
					asked = append(asked, m)
				}
				assert.LessOrEqual(t, strings.Count(strings.Join(asked, " "), "elicitation/create"), 1, "A was asked again while B waited: %v", asked)
			}
		})
	}
}

// silentTaskResult is a tasks/result request whose client reads the server's messages on
// its stream but answers none of them.
type silentTaskResult struct {
	reqID   int64
	methods chan string // the method of each message the server sent, "" for the response
	drop    func()      // closes the connection
}

// openSilentTaskResult sends tasks/result for task id in c's session and reads its stream
// in the background until the connection closes.
func openSilentTaskResult(t *testing.T, c *rawClient, id string) *silentTaskResult {
	t.Helper()
	ctx, drop := context.WithCancel(testCtx(t))
	t.Cleanup(drop)
	body := c.body("tasks/result", map[string]any{"taskId": id})
	var head struct {
		ID int64 `json:"id"`
	}
	require.NoError(t, json.Unmarshal(body, &head))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", c.sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	st := &silentTaskResult{reqID: head.ID, methods: make(chan string, 64), drop: drop}
	go func() {
		defer resp.Body.Close()
		defer close(st.methods)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok || data == "" {
				continue
			}
			var m struct {
				Method string `json:"method"`
			}
			if !assert.NoError(t, json.Unmarshal([]byte(data), &m)) {
				return
			}
			select {
			case st.methods <- m.Method:
			case <-ctx.Done():
				return
			}
		}
	}()
	return st
}

// next returns the method of the next message the server sends on the stream.
func (st *silentTaskResult) next(t *testing.T) string {
	t.Helper()
	select {
	case m, ok := <-st.methods:
		require.True(t, ok, "the stream ended")
		return m
	case <-time.After(10 * time.Second):
		require.FailNow(t, "the server sent nothing more on the stream")
		return ""
	}
}

// cancel cancels the request (spec 2025-11-25, Utilities, Cancellation), its connection
// left open.
func (st *silentTaskResult) cancel(t *testing.T, c *rawClient) {
	t.Helper()
	n := fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d,"reason":"the user went away"}}`, st.reqID)
	r := c.send([]byte(n), nil)
	r.Body.Close()
	require.Equal(t, http.StatusAccepted, r.StatusCode)
}
