package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/protomcp/protomcp/runtime"
)

// The fixtures of the suite's tasks-* scenarios (the 2026-07-28 extension
// io.modelcontextprotocol/tasks, SEP-2663): tools that run as tasks, declared with
// ToolSpec.TaskSupport and added raw, as their schemas and names are the suite's.

// addTaskTools adds greet (an ordinary tool), slow_compute, failing_job (a task-only tool),
// protocol_error_job, confirm_delete, multi_input and test_tool_with_task.
func addTaskTools(srv *runtime.Server) {
	// test_tool_with_task asks for a name in the request (a multi round-trip request in
	// 2026-07-28), and only then goes on as a task (runtime.DeferTask, ContinueAsTask).
	srv.AddTool(runtime.ToolSpec{
		Name: "test_tool_with_task", Description: "Asks for your name, then greets you from a task.",
		TaskSupport: runtime.TaskRequired,
	}, func(ctx context.Context, _ *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		name, err := askName(ctx, "user_name", "What is your name?")
		if err != nil {
			return nil, err
		}
		return nil, runtime.ContinueAsTask(func(ctx context.Context) (*runtime.CallToolResult, error) {
			if err := sleep(ctx, 200*time.Millisecond); err != nil {
				return nil, err
			}
			return textResult("Hello, " + name + "!"), nil
		})
	}, runtime.DeferTask())
	srv.AddTool(runtime.ToolSpec{
		Name: "greet", Description: "Greets someone by name, at once.",
		InputSchema: `{"type":"object","properties":{"name":{"type":"string"}}}`,
	}, func(_ context.Context, req *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		var a struct{ Name string }
		_ = json.Unmarshal(req.Arguments, &a)
		return textResult("Hello, " + a.Name + "!"), nil
	})
	srv.AddTool(runtime.ToolSpec{
		Name: "slow_compute", Description: "Sleeps for the given seconds, then answers; runs as a task.",
		InputSchema: `{"type":"object","properties":{"seconds":{"type":"number"},"label":{"type":"string"}}}`,
		TaskSupport: runtime.TaskOptional,
	}, slowCompute)
	srv.AddTool(runtime.ToolSpec{
		Name: "failing_job", Description: "Fails with a tool error after about a second; runs only as a task.",
		TaskSupport: runtime.TaskRequired,
	}, func(ctx context.Context, _ *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		if err := sleep(ctx, time.Second); err != nil {
			return nil, err
		}
		return nil, errors.New("the job failed")
	})
	srv.AddTool(runtime.ToolSpec{
		Name: "protocol_error_job", Description: "Panics: a protocol error; runs as a task.",
		TaskSupport: runtime.TaskOptional,
	}, func(context.Context, *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		panic("protocol_error_job always panics")
	})
	srv.AddTool(runtime.ToolSpec{
		Name: "confirm_delete", Description: "Asks the user to confirm deleting a file; runs as a task.",
		InputSchema: `{"type":"object","properties":{"filename":{"type":"string"}}}`,
		TaskSupport: runtime.TaskOptional,
	}, func(ctx context.Context, req *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		var a struct{ Filename string }
		_ = json.Unmarshal(req.Arguments, &a)
		ok, err := confirm(ctx, "confirm", "Delete "+a.Filename+"?")
		if err != nil {
			return nil, err
		}
		if !ok {
			return textResult("Kept " + a.Filename), nil
		}
		return textResult("Deleted " + a.Filename), nil
	})
	srv.AddTool(runtime.ToolSpec{
		Name: "multi_input", Description: "Asks two questions at once; runs as a task.",
		TaskSupport: runtime.TaskOptional,
	}, func(ctx context.Context, _ *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		// Both questions at once: the task is input_required with two requests pending.
		var wg sync.WaitGroup
		var first, second bool
		var err1, err2 error
		wg.Add(2)
		go func() { defer wg.Done(); first, err1 = confirm(ctx, "first", "First question?") }()
		go func() { defer wg.Done(); second, err2 = confirm(ctx, "second", "Second question?") }()
		wg.Wait()
		if err := errors.Join(err1, err2); err != nil {
			return nil, err
		}
		return textResult(fmt.Sprintf("first: %v, second: %v", first, second)), nil
	})
}

// slowCompute sleeps for its seconds argument, reporting progress, then answers.
func slowCompute(ctx context.Context, req *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
	var a struct {
		Seconds float64
		Label   string
	}
	_ = json.Unmarshal(req.Arguments, &a)
	c := runtime.CallerFrom(ctx)
	_ = c.SetStatusMessage(ctx, "computing "+a.Label)
	if err := sleep(ctx, time.Duration(a.Seconds*float64(time.Second))); err != nil {
		return nil, err
	}
	return textResult(fmt.Sprintf("computed %s after %gs", a.Label, a.Seconds)), nil
}

// confirm elicits a yes or no under key.
func confirm(ctx context.Context, key, message string) (bool, error) {
	res, err := runtime.CallerFrom(ctx).Elicit(runtime.WithInputKey(ctx, key), &runtime.ElicitParams{
		Message:         message,
		RequestedSchema: json.RawMessage(`{"type":"object","properties":{"confirm":{"type":"boolean"}}}`),
	})
	if err != nil {
		return false, err
	}
	ok, _ := res.Content["confirm"].(bool)
	return res.Action == "accept" && ok, nil
}

// textResult is a tool result of one text.
func textResult(s string) *runtime.CallToolResult {
	return &runtime.CallToolResult{Content: []runtime.Content{runtime.TextContent(s)}}
}
