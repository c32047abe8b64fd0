package runtime

// Tasks: a tool call that outlives its request (spec 2025-11-25, basic/utilities "Tasks"; in
// 2026-07-28 the official extension io.modelcontextprotocol/tasks). This file holds the names
// both sides share; the server's task runner and the client's task handle build on them.

// TaskSupport says whether a tool may, must or must not be called as a task: its
// execution.taskSupport in tools/list (spec 2025-11-25, Tasks, "Tool-Level Negotiation").
type TaskSupport int

const (
	// TaskForbidden, the zero value, is a tool that always answers its call directly.
	TaskForbidden TaskSupport = iota
	// TaskOptional is a tool a client may call as a task or directly.
	TaskOptional
	// TaskRequired is a tool a client must call as a task; a direct call is refused with
	// Method not found (-32601) in 2025-11-25.
	TaskRequired
)

// String returns the value execution.taskSupport takes on the wire.
func (s TaskSupport) String() string {
	switch s {
	case TaskOptional:
		return "optional"
	case TaskRequired:
		return "required"
	default:
		return "forbidden"
	}
}

// TaskStatus is the state of a task (spec 2025-11-25, Tasks, "Task Status").
type TaskStatus string

const (
	// TaskWorking is a task whose handler is running.
	TaskWorking TaskStatus = "working"
	// TaskInputRequired is a task waiting for the client to answer a request (an
	// elicitation, a sampling request).
	TaskInputRequired TaskStatus = "input_required"
	// TaskCompleted is a task whose handler returned a result (a tool error is a completed
	// task whose result has isError set).
	TaskCompleted TaskStatus = "completed"
	// TaskFailed is a task that ended with a protocol-level error, or whose replica died.
	TaskFailed TaskStatus = "failed"
	// TaskCancelled is a task ended by tasks/cancel.
	TaskCancelled TaskStatus = "cancelled"
)

// Terminal reports whether the status is final: completed, failed or cancelled.
func (s TaskStatus) Terminal() bool {
	return s == TaskCompleted || s == TaskFailed || s == TaskCancelled
}
