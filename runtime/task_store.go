package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// TaskRecord is one task as a TaskStore keeps it: what tasks/get, tasks/list and
// tasks/result read, and what the replica running the task's handler writes as it goes
// (spec 2025-11-25, basic/utilities "Tasks"; in 2026-07-28 the extension
// io.modelcontextprotocol/tasks).
type TaskRecord struct {
	// ID is the task's id: random, unguessable, unique within the store.
	ID string `json:"id"`
	// Owner is who may see the task: the authenticated identity that created it, else the
	// 2025-11-25 session that did ("" in the 2026-07-28 era without authentication, where
	// the id alone grants access). Opaque, made by the runtime.
	Owner string `json:"owner,omitempty"`
	// Replica names the replica whose process runs the handler (WithReplicaID); "" for a
	// server that is not part of a replica set.
	Replica string `json:"replica,omitempty"`
	// Tool is the name of the tool called.
	Tool string `json:"tool"`
	// Version is the protocol version of the request that created the task: it decides the
	// shape of the task's answers (the two eras differ).
	Version string `json:"version"`
	// Status is the task's status; once terminal it never changes again.
	Status TaskStatus `json:"status"`
	// StatusMessage describes the status for a human (optional).
	StatusMessage string `json:"statusMessage,omitempty"`
	// CreatedAt and LastUpdatedAt are when the task was created and last changed.
	CreatedAt     time.Time `json:"createdAt"`
	LastUpdatedAt time.Time `json:"lastUpdatedAt"`
	// TTL is how long the task is kept after its creation; 0 for no limit.
	TTL time.Duration `json:"ttl"`
	// PollInterval is the interval the server suggests between polls.
	PollInterval time.Duration `json:"pollInterval"`
	// Result is the tool's result (a CallToolResult as JSON) once the task completed.
	Result json.RawMessage `json:"result,omitempty"`
	// Error is the JSON-RPC error object ({code, message, data}) of a failed task.
	Error json.RawMessage `json:"error,omitempty"`
	// InputRequests are the requests the handler waits on while the task is input_required:
	// a JSON object of key to {"method", "params"}, empty otherwise.
	InputRequests json.RawMessage `json:"inputRequests,omitempty"`
	// Metadata is what the task's handler last published with Caller.SetTaskMetadata (an
	// Operation rpc's metadata_type, say), as JSON; empty when it published none. Every
	// Task the server answers with carries it in its _meta under TaskMetadataMetaKey.
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// expired reports whether the record's TTL has run out at now.
func (r *TaskRecord) expired(now time.Time) bool {
	return r.TTL > 0 && now.After(r.CreatedAt.Add(r.TTL))
}

// Size is what the record is charged against a TaskStore's byte budget (TaskLimits.Bytes):
// 256 bytes for its fixed fields and their overhead, plus the lengths of its variable ones. A
// TaskStore of its own should charge the same, so that one budget admits the same tasks
// whichever store holds them.
func (r *TaskRecord) Size() int64 {
	return int64(256 + len(r.ID) + len(r.Owner) + len(r.Replica) + len(r.Tool) + len(r.StatusMessage) + len(r.Result) + len(r.Error) + len(r.InputRequests) + len(r.Metadata))
}

// TaskLimits are the caps a TaskStore enforces when it creates a task, so that replicas
// sharing a store share the caps too.
type TaskLimits struct {
	// PerOwner is the most live tasks one owner may hold.
	PerOwner int
	// Total is the most live tasks the store holds.
	Total int
	// Bytes is the most bytes the store's records may take together.
	Bytes int64
}

// ErrTaskNotFound is returned by a TaskStore for a task it does not hold (never created,
// expired, or deleted).
var ErrTaskNotFound = errors.New("mcp: task not found in the task store")

// ErrTaskLimit is returned by TaskStore.Create, and by an Update that would grow the store
// past its byte budget, when a TaskLimits cap is reached.
var ErrTaskLimit = errors.New("mcp: task limit reached")

// TaskStore holds tasks (the records of tool calls run as tasks). The default keeps them in
// the Server's memory (NewMemoryTaskStore); a shared implementation (the redis module's) lets
// every replica of a server answer tasks/get, tasks/result and tasks/cancel for tasks
// another replica runs.
//
// The contract:
//   - Create stores a new record, refusing with ErrTaskLimit (wrapped or not) when the
//     owner already holds limits.PerOwner live tasks, the store limits.Total, or the
//     record would take the store past limits.Bytes.
//   - Get returns a copy of a live record, ErrTaskNotFound for one it does not hold. A
//     record whose TTL ran out (CreatedAt + TTL) is not live: the store forgets it,
//     whatever its status.
//   - Update applies fn to the current record atomically with respect to every other Update
//     of that record (on every replica), and stores what fn left, returning it; fn may be
//     called more than once (an optimistic store retries). An fn that returns an error
//     leaves the record as it was, and Update returns that error. A record that is
//     terminal must stay terminal: the runtime's fns never change a terminal status, and a
//     store need not check.
//   - List returns the live records of owner, oldest first, after the record whose ID is
//     after ("" for the first page), at most limit of them, and whether more follow.
//   - Delete forgets a record; deleting one the store does not hold is no error.
//
// Implementations must be safe for concurrent use, and must return an error rather than
// block when their backend is unreachable.
type TaskStore interface {
	Create(ctx context.Context, rec *TaskRecord, limits TaskLimits) error
	Get(ctx context.Context, id string) (*TaskRecord, error)
	Update(ctx context.Context, id string, fn func(*TaskRecord) error) (*TaskRecord, error)
	List(ctx context.Context, owner, after string, limit int) (recs []*TaskRecord, more bool, err error)
	Delete(ctx context.Context, id string) error
}
