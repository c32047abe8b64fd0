package redismcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
	redismcp "github.com/protomcp/protomcp/redis"
	"github.com/protomcp/protomcp/runtime"
	"go.uber.org/goleak"
)

// TestStoreTasks checks the Redis TaskStore against the runtime.TaskStore contract: caps
// per owner and in total, atomic updates under concurrent writers, listing in creation order
// a page at a time, expiry with the TTL, and deletion.
func TestStoreTasks(t *testing.T) {
	st, _ := newStore(t, redismcp.Options{})
	ts := st.Tasks()
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	rec := func(id, owner string, ttl time.Duration, at int) *runtime.TaskRecord {
		c := now.Add(time.Duration(at) * time.Millisecond)
		return &runtime.TaskRecord{ID: id, Owner: owner, Tool: "t", Status: runtime.TaskWorking, CreatedAt: c, LastUpdatedAt: c, TTL: ttl}
	}
	limits := runtime.TaskLimits{PerOwner: 3, Total: 5}
	for i := range 3 {
		if err := ts.Create(ctx, rec(fmt.Sprint("a", i), "alice", time.Minute, i), limits); err != nil {
			t.Fatal(err)
		}
	}
	if err := ts.Create(ctx, rec("a3", "alice", time.Minute, 3), limits); !errors.Is(err, runtime.ErrTaskLimit) {
		t.Fatalf("a fourth task of one owner: %v; want ErrTaskLimit", err)
	}
	for i := range 2 {
		if err := ts.Create(ctx, rec(fmt.Sprint("b", i), "bob", time.Minute, i), limits); err != nil {
			t.Fatal(err)
		}
	}
	if err := ts.Create(ctx, rec("c0", "carol", time.Minute, 0), limits); !errors.Is(err, runtime.ErrTaskLimit) {
		t.Fatalf("a sixth task in total: %v; want ErrTaskLimit", err)
	}
	if _, err := ts.Get(ctx, "nope"); !errors.Is(err, runtime.ErrTaskNotFound) {
		t.Fatalf("Get of an unknown task: %v", err)
	}

	// Concurrent updates: none is lost.
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Go(func() {
			if _, err := ts.Update(ctx, "a0", func(r *runtime.TaskRecord) error {
				r.StatusMessage += "x"
				return nil
			}); err != nil {
				t.Errorf("update %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	got, err := ts.Get(ctx, "a0")
	if err != nil || got.StatusMessage != "xxxxxxxxxx" {
		t.Fatalf("after 10 concurrent updates: %+v, %v", got, err)
	}
	stop := errors.New("stop")
	if _, err := ts.Update(ctx, "a0", func(*runtime.TaskRecord) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("an update whose fn fails: %v; want its error", err)
	}

	page, more, err := ts.List(ctx, "alice", "", 2)
	if err != nil || !more || len(page) != 2 || page[0].ID != "a0" || page[1].ID != "a1" {
		t.Fatalf("first page: %v more=%v err=%v", page, more, err)
	}
	page, more, err = ts.List(ctx, "alice", page[1].ID, 2)
	if err != nil || more || len(page) != 1 || page[0].ID != "a2" {
		t.Fatalf("second page: %v more=%v err=%v", page, more, err)
	}

	if err := ts.Delete(ctx, "a1"); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Get(ctx, "a1"); !errors.Is(err, runtime.ErrTaskNotFound) {
		t.Fatalf("Get of a deleted task: %v", err)
	}
	// A task whose TTL runs out is forgotten, and no longer listed.
	if err := ts.Create(ctx, rec("d0", "dave", 200*time.Millisecond, 0), runtime.TaskLimits{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the task's TTL to run out", func() bool {
		_, err := ts.Get(ctx, "d0")
		return errors.Is(err, runtime.ErrTaskNotFound)
	})
	if page, _, _ := ts.List(ctx, "dave", "", 10); len(page) != 0 {
		t.Fatalf("an expired task is listed: %v", page)
	}
}

// TestReplicaSetTasks runs three replicas sharing one redis-server behind a round-robin
// proxy: a task started through one replica is polled, and its result collected, through the
// others; the SIGKILL of the replica running a task ends it failed, within the Bus lease
// (testLease here; redismcp.Options.Lease, 3 s by default) of the death, at the next poll.
func TestReplicaSetTasks(t *testing.T) {
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() {
		http.DefaultClient.CloseIdleConnections()
		goleak.VerifyNone(t, before)
	})
	rs := startRedis(t)
	reps := []*replica{startReplica(t, rs.url()), startReplica(t, rs.url()), startReplica(t, rs.url())}
	px := newProxy(t, reps)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := runtime.NewClient(px.URL+"/mcp", legacy)
	defer c.Close(context.Background())
	if err := c.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	type task struct {
		TaskID        string `json:"taskId"`
		Status        string `json:"status"`
		StatusMessage string `json:"statusMessage"`
	}
	start := func(tool string, args any) task {
		t.Helper()
		raw, err := c.Call(ctx, "tools/call", map[string]any{"name": tool, "arguments": args, "task": map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		var r struct{ Task task }
		if err := json.Unmarshal(raw, &r); err != nil || r.Task.TaskID == "" {
			t.Fatalf("tools/call answered %s, %v; want a CreateTaskResult", raw, err)
		}
		return r.Task
	}
	get := func(id string) task {
		t.Helper()
		raw, err := c.Call(ctx, "tasks/get", map[string]any{"taskId": id})
		if err != nil {
			t.Fatal(err)
		}
		var tk task
		if err := json.Unmarshal(raw, &tk); err != nil {
			t.Fatal(err)
		}
		return tk
	}
	var got task
	backendsOf := func(rpc string) map[int]bool {
		seen := map[int]bool{}
		for _, h := range px.find(func(h hit) bool { return h.session == c.SessionID() && h.rpc == rpc }) {
			seen[h.backend] = true
		}
		return seen
	}

	tk := start("job", map[string]string{"a": "job1"})
	calls := px.find(func(h hit) bool { return h.session == c.SessionID() && h.rpc == "tools/call" })
	runner := calls[len(calls)-1].backend
	for range 3 {
		if got := get(tk.TaskID); got.Status != "working" {
			t.Fatalf("tasks/get = %+v; want working", got)
		}
	}
	if seen := backendsOf("tasks/get"); len(seen) != 3 {
		t.Fatalf("tasks/get went to replicas %v; want all 3", seen)
	}
	waitFor(t, 5*time.Second, "the handler's status message", func() bool { return get(tk.TaskID).StatusMessage == "waiting for job1" })
	resp, err := http.Get("http://" + reps[runner].addr + "/gate?name=job1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for range 3 {
		raw, err := c.Call(ctx, "tasks/result", map[string]any{"taskId": tk.TaskID})
		if err != nil {
			t.Fatal(err)
		}
		var res runtime.CallToolResult
		if err := json.Unmarshal(raw, &res); err != nil {
			t.Fatal(err)
		}
		if got := textOf(t, &res); got != "done by "+reps[runner].id {
			t.Fatalf("tasks/result = %q; want the result of replica %d", got, runner)
		}
	}
	if seen := backendsOf("tasks/result"); len(seen) != 3 {
		t.Fatalf("tasks/result went to replicas %v; want all 3", seen)
	}

	// tasks/cancel through another replica cancels the handler on the one running it (over
	// the Bus).
	tk = start("job", map[string]string{"a": "never"})
	calls = px.find(func(h hit) bool { return h.session == c.SessionID() && h.rpc == "tools/call" })
	runner = calls[len(calls)-1].backend
	for {
		gets := px.find(func(h hit) bool { return h.session == c.SessionID() })
		if (gets[len(gets)-1].backend+1)%3 != runner {
			break // the proxy's next request goes to another replica
		}
		get(tk.TaskID)
	}
	raw, err := c.Call(ctx, "tasks/cancel", map[string]any{"taskId": tk.TaskID})
	if err != nil {
		t.Fatal(err)
	}
	cancels := px.find(func(h hit) bool { return h.session == c.SessionID() && h.rpc == "tasks/cancel" })
	if cancels[0].backend == runner {
		t.Fatalf("tasks/cancel went to the replica running the task (%d)", runner)
	}
	if err := json.Unmarshal(raw, &got); err != nil || got.Status != "cancelled" {
		t.Fatalf("tasks/cancel = %s, %v; want the task cancelled", raw, err)
	}
	waitFor(t, 5*time.Second, "the handler's context cancelled on its replica", func() bool {
		resp, err := http.Get("http://" + reps[runner].addr + "/tasks-cancelled")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b) == "1"
	})

	// The SIGKILL of the replica running a task.
	tk = start("forever", nil)
	calls = px.find(func(h hit) bool { return h.session == c.SessionID() && h.rpc == "tools/call" })
	victim := calls[len(calls)-1].backend
	px.kill(victim)
	if err := reps[victim].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-reps[victim].done
	killed := time.Now()
	waitFor(t, testLease+5*time.Second, "the task of the killed replica to fail", func() bool {
		got = get(tk.TaskID)
		return got.Status != "working"
	})
	if got.Status != "failed" || !strings.Contains(got.StatusMessage, "stopped") {
		t.Fatalf("task of the killed replica = %+v; want failed, saying its replica stopped", got)
	}
	t.Logf("failed %v after the SIGKILL (lease %v)", time.Since(killed).Round(10*time.Millisecond), testLease)
	if _, err := c.Call(ctx, "tasks/result", map[string]any{"taskId": tk.TaskID}); err == nil || !strings.Contains(err.Error(), "stopped") {
		t.Fatalf("tasks/result of the failed task: %v; want the error saying its replica stopped", err)
	}
}

// TestStoreTasksOwnerIndexBounded proves that the owners' indexes do not outlive their
// tasks: the index of an owner whose tasks all expired (a session that ended) expires with
// them, and the index of anonymous callers (no per-owner cap, never listed) sheds the IDs of
// expired tasks as new ones come, rather than growing with every task ever created.
func TestStoreTasksOwnerIndexBounded(t *testing.T) {
	st, rdb := newStore(t, redismcp.Options{})
	ts := st.Tasks()
	ctx := context.Background()
	create := func(id, owner string, ttl time.Duration) {
		t.Helper()
		now := time.Now().UTC().Truncate(time.Millisecond)
		r := &runtime.TaskRecord{ID: id, Owner: owner, Tool: "t", Status: runtime.TaskWorking, CreatedAt: now, LastUpdatedAt: now, TTL: ttl}
		if err := ts.Create(ctx, r, runtime.TaskLimits{Total: 1000}); err != nil {
			t.Fatal(err)
		}
	}
	create("s1", "s:gone", 100*time.Millisecond)
	create("s2", "s:gone", 200*time.Millisecond)
	if ttl := rdb.PTTL(ctx, "mcp:to:s:gone").Val(); ttl <= 100*time.Millisecond || ttl > 200*time.Millisecond {
		t.Fatalf("the owner's index expires in %v; want with its last task, in 200 ms", ttl)
	}
	create("keep", "", time.Minute) // the anonymous index lives on: callers keep coming
	for i := range 40 {
		create(fmt.Sprint("old", i), "", 50*time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	if n := rdb.Exists(ctx, "mcp:to:s:gone").Val(); n != 0 {
		t.Fatal("the index of an owner whose tasks all expired is still in Redis")
	}
	for i := range 40 {
		create(fmt.Sprint("new", i), "", time.Minute)
	}
	if n := rdb.ZCard(ctx, "mcp:to:").Val(); n != 41 {
		t.Fatalf("the anonymous index holds %d IDs; want the 41 live tasks only", n)
	}
}

// TestStoreTaskMetadata proves that a task's metadata (runtime.Caller.SetTaskMetadata) goes
// through the Redis TaskStore unchanged: a server keeping its tasks in Redis answers tasks/get
// with the metadata its handler published last, in both eras, and the stored record holds it.
func TestStoreTaskMetadata(t *testing.T) {
	st, _ := newStore(t, redismcp.Options{})
	ts := st.Tasks()
	s := runtime.NewServer(runtime.Implementation{Name: "metadata", Version: "1"}, runtime.WithTaskStore(ts))
	runtime.AddTypedTool(s, runtime.ToolSpec{Name: "job", TaskSupport: runtime.TaskRequired},
		func(ctx context.Context, in *mcpv1.TextContent) (*mcpv1.TextContent, error) {
			c := runtime.CallerFrom(ctx)
			for _, phase := range []string{"phase 1", "phase 2"} {
				if err := c.SetTaskMetadata(ctx, &mcpv1.TextContent{Text: phase + " of " + in.GetText()}); err != nil {
					return nil, err
				}
			}
			return in, nil
		})
	hs := httptest.NewServer(s)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
		hs.Close()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, era := range []runtime.Era{runtime.EraLegacy, runtime.EraModern} {
		c := runtime.NewClient(hs.URL, runtime.WithEra(era))
		h, err := runtime.StartTypedTask[mcpv1.TextContent](ctx, c, "job", &mcpv1.TextContent{Text: fmt.Sprint(era)})
		if err != nil {
			t.Fatalf("era %v: %v", era, err)
		}
		if _, err := h.Wait(ctx); err != nil {
			t.Fatalf("era %v: %v", era, err)
		}
		want := "phase 2 of " + fmt.Sprint(era)
		got, err := runtime.TaskMetadataOf[mcpv1.TextContent](ctx, h)
		if err != nil || got.GetText() != want {
			t.Errorf("era %v: metadata %v, %v; want %q", era, got, err, want)
		}
		rec, err := ts.Get(ctx, h.ID())
		if err != nil {
			t.Fatalf("era %v: %v", era, err)
		}
		if string(rec.Metadata) != `{"text":"`+want+`"}` {
			t.Errorf("era %v: the stored record's metadata is %s; want %q's", era, rec.Metadata, want)
		}
		_ = c.Close(ctx)
	}
}
