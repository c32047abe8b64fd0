package runtime_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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
