package runtime_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/anypb"

	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
	"github.com/protomcp/protomcp/runtime"
)

// metadataJob is a typed task tool whose handler publishes metadata as it goes: "phase 1",
// then "phase 2"; then it tries metadata of more than MaxTaskMetadata and reports the error,
// and waits for release before it returns.
type metadataJob struct {
	published chan struct{} // one per call: both phases are published
	tooLarge  chan error    // one per call: what SetTaskMetadata said of the large value
	release   chan struct{}
	direct    chan error // what SetTaskMetadata said in a call that is not a task
}

// newMetadataServer starts a loopback server with the tool "job" (a task only) and "plain"
// (a task or not), shut down at the test's end.
func newMetadataServer(t *testing.T, opts ...runtime.ServerOption) (*httptest.Server, *metadataJob) {
	t.Helper()
	j := &metadataJob{published: make(chan struct{}, 4), tooLarge: make(chan error, 4), release: make(chan struct{}), direct: make(chan error, 4)}
	s := runtime.NewServer(runtime.Implementation{Name: "metadata", Version: "1"}, append([]runtime.ServerOption{runtime.WithLogger(discardLogger())}, opts...)...)
	runtime.AddTypedTool(s, runtime.ToolSpec{Name: "job", TaskSupport: runtime.TaskRequired},
		func(ctx context.Context, in *mcpv1.TextContent) (*mcpv1.TextContent, error) {
			c := runtime.CallerFrom(ctx)
			if err := c.SetTaskMetadata(ctx, &mcpv1.TextContent{Text: "phase 1"}); err != nil {
				return nil, err
			}
			// An Any is unpacked: the metadata is the message it holds.
			a, err := anypb.New(&mcpv1.TextContent{Text: "phase 2"})
			if err != nil {
				return nil, err
			}
			if err := c.SetTaskMetadata(ctx, a); err != nil {
				return nil, err
			}
			j.published <- struct{}{}
			j.tooLarge <- c.SetTaskMetadata(ctx, &mcpv1.TextContent{Text: strings.Repeat("x", runtime.MaxTaskMetadata)})
			select {
			case <-j.release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return &mcpv1.TextContent{Text: "done: " + in.GetText()}, nil
		})
	runtime.AddTypedTool(s, runtime.ToolSpec{Name: "plain", TaskSupport: runtime.TaskOptional},
		func(ctx context.Context, in *mcpv1.TextContent) (*mcpv1.TextContent, error) {
			j.direct <- runtime.CallerFrom(ctx).SetTaskMetadata(ctx, map[string]int{"rows": 3})
			return in, nil
		})
	hs := httptest.NewServer(s)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
		hs.Close()
	})
	return hs, j
}

// TestTaskMetadataBothEras proves, through the client's task handle in both eras, that a
// task's handler publishes metadata that tasks/get carries: set twice, the second is read;
// more than MaxTaskMetadata is refused, saying so, and leaves the last metadata; a terminal
// task keeps its last metadata; outside a task, SetTaskMetadata does nothing.
func TestTaskMetadataBothEras(t *testing.T) {
	t.Parallel()
	hs, j := newMetadataServer(t)
	for _, era := range []runtime.Era{runtime.EraLegacy, runtime.EraModern} {
		ctx := testCtx(t)
		c := runtime.NewClient(hs.URL, runtime.WithEra(era), runtime.WithLogger(discardLogger()))
		t.Cleanup(func() { _ = c.Close(context.Background()) })

		h, err := runtime.StartTypedTask[mcpv1.TextContent](ctx, c, "job", &mcpv1.TextContent{Text: "x"})
		require.NoErrorf(t, err, "era %v", era)
		select {
		case <-j.published:
		case <-ctx.Done():
			require.FailNowf(t, "the handler did not publish its metadata", "era %v", era)
		}
		var large error
		select {
		case large = <-j.tooLarge:
		case <-ctx.Done():
			require.FailNowf(t, "the handler did not try its large metadata", "era %v", era)
		}
		require.ErrorIsf(t, large, runtime.ErrTaskMetadataTooLarge, "era %v", era)
		assert.Contains(t, large.Error(), "64 KiB")

		got, err := runtime.TaskMetadataOf[mcpv1.TextContent](ctx, h)
		require.NoErrorf(t, err, "era %v", era)
		assert.Empty(t, cmp.Diff(&mcpv1.TextContent{Text: "phase 2"}, got, protocmp.Transform()), "era %v: the second metadata replaces the first", era)
		info, err := h.Status(ctx)
		require.NoError(t, err)
		assert.JSONEq(t, `{"text":"phase 2"}`, string(info.Metadata), "era %v", era)

		j.release <- struct{}{}
		res, err := h.Wait(ctx)
		require.NoErrorf(t, err, "era %v", era)
		assert.Equal(t, "done: x", res.GetText())
		got, err = runtime.TaskMetadataOf[mcpv1.TextContent](ctx, h)
		require.NoErrorf(t, err, "era %v", era)
		assert.Empty(t, cmp.Diff(&mcpv1.TextContent{Text: "phase 2"}, got, protocmp.Transform()), "era %v: a terminal task keeps its last metadata", era)

		// A call answered directly (not a task): SetTaskMetadata does nothing, and the
		// handle of a call without a task has no metadata.
		out, err := runtime.CallTypedTool[mcpv1.TextContent](ctx, c, "plain", &mcpv1.TextContent{Text: "y"})
		require.NoErrorf(t, err, "era %v", era)
		assert.Equal(t, "y", out.GetText())
		assert.NoError(t, <-j.direct, "era %v: SetTaskMetadata outside a task", era)
	}
}

// TestTaskMetadataOnTheWire reads a 2025-11-25 task's metadata as any client sees it: in the
// _meta of the Task of tasks/get, of each Task of tasks/list and of notifications/tasks/status,
// under TaskMetadataMetaKey, and nowhere else (spec 2025-11-25, Tasks: the Task's members are
// unchanged; Basic, "_meta").
func TestTaskMetadataOnTheWire(t *testing.T) {
	t.Parallel()
	hs, j := newMetadataServer(t)
	c := newLegacyClient(t, hs.URL)
	notes := c.openGET(t)
	created := c.result("tools/call", map[string]any{"name": "job", "arguments": map[string]any{"text": "w"}, "task": map[string]any{}})
	task := created["task"].(map[string]any)
	assert.NotContains(t, task, "_meta", "a new task has no metadata")
	id := task["taskId"].(string)
	<-j.published
	<-j.tooLarge

	want := map[string]any{runtime.TaskMetadataMetaKey: map[string]any{"text": "phase 2"}}
	got := c.result("tasks/get", map[string]any{"taskId": id})
	assert.Equal(t, want, got["_meta"])
	assert.Equal(t, "working", got["status"])
	list := c.result("tasks/list", map[string]any{})["tasks"].([]any)
	require.Len(t, list, 1)
	assert.Equal(t, want, list[0].(map[string]any)["_meta"])

	close(j.release)
	done := c.waitStatus(id, runtime.TaskCompleted)
	assert.Equal(t, want, done["_meta"], "the completed task keeps its last metadata")
	r := c.call("tasks/result", map[string]any{"taskId": id})
	require.Nil(t, r.Error)
	var res map[string]any
	require.NoError(t, json.Unmarshal(r.Result, &res))
	assert.NotContains(t, res["_meta"], runtime.TaskMetadataMetaKey, "tasks/result is the tool's result, not a Task")

	// notifications/tasks/status carries the Task, its _meta too.
	ctx := testCtx(t)
	for {
		var m map[string]any
		select {
		case m = <-notes:
		case <-ctx.Done():
			require.FailNow(t, "no notifications/tasks/status of the completed task")
		}
		p, _ := m["params"].(map[string]any)
		if m["method"] == "notifications/tasks/status" && p["status"] == "completed" {
			assert.Equal(t, want, p["_meta"])
			break
		}
	}
}

// TestTaskMetadataBudget proves that metadata counts toward the task store's byte budget:
// metadata the budget cannot hold is refused with ErrTaskLimit, and the task goes on.
func TestTaskMetadataBudget(t *testing.T) {
	t.Parallel()
	// Room for the task's record and its result, not for 60 KB of metadata.
	hs, j := newMetadataServerBudget(t, 16<<10)
	c := runtime.NewClient(hs.URL, runtime.WithLogger(discardLogger()))
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	ctx := testCtx(t)
	h, err := runtime.StartTypedTask[mcpv1.TextContent](ctx, c, "big", &mcpv1.TextContent{Text: "x"})
	require.NoError(t, err)
	var got error
	select {
	case got = <-j.direct:
	case <-ctx.Done():
		require.FailNow(t, "the handler did not try its metadata")
	}
	require.ErrorIs(t, got, runtime.ErrTaskLimit)
	res, err := h.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, "x", res.GetText())
	meta, err := runtime.TaskMetadataOf[mcpv1.TextContent](ctx, h)
	require.NoError(t, err)
	assert.Nil(t, meta, "refused metadata is not kept")
}

// newMetadataServerBudget starts a loopback server whose tasks share a budget of bytes, with
// the tool "big" (a task only) that tries 60 KB of metadata and reports the error.
func newMetadataServerBudget(t *testing.T, bytes int64) (*httptest.Server, *metadataJob) {
	t.Helper()
	j := &metadataJob{direct: make(chan error, 1)}
	s := runtime.NewServer(runtime.Implementation{Name: "metadata", Version: "1"}, runtime.WithLogger(discardLogger()), runtime.WithMaxTaskBytes(bytes))
	runtime.AddTypedTool(s, runtime.ToolSpec{Name: "big", TaskSupport: runtime.TaskRequired},
		func(ctx context.Context, in *mcpv1.TextContent) (*mcpv1.TextContent, error) {
			j.direct <- runtime.CallerFrom(ctx).SetTaskMetadata(ctx, &mcpv1.TextContent{Text: strings.Repeat("m", 60<<10)})
			return in, nil
		})
	hs := httptest.NewServer(s)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
		hs.Close()
	})
	return hs, j
}
