package redismcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
	redismcp "github.com/protomcp/protomcp/redis"
	"github.com/protomcp/protomcp/runtime"
	"github.com/redis/go-redis/v9"
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

// budgetRec returns a task record whose charge against the byte budget grows with len(id),
// len(owner) and len(result) only: records with fields of equal lengths are charged alike.
func budgetRec(id, owner string, ttl time.Duration, result string) *runtime.TaskRecord {
	now := time.Now().UTC().Truncate(time.Millisecond)
	r := &runtime.TaskRecord{ID: id, Owner: owner, Tool: "t", Version: runtime.ProtocolVersion20251125, Status: runtime.TaskWorking, CreatedAt: now, LastUpdatedAt: now, TTL: ttl}
	if result != "" {
		r.Result = json.RawMessage(result)
	}
	return r
}

// memoryCharge is what rec is charged against a byte budget (TaskRecord.Size), checked
// against runtime.MemoryTaskStore, which admits rec within exactly that budget: the Redis
// store must charge the same, so that one WithMaxTaskBytes admits the same tasks whichever
// store holds them.
func memoryCharge(t *testing.T, rec *runtime.TaskRecord) int64 {
	t.Helper()
	fits := func(budget int64) bool {
		err := runtime.NewMemoryTaskStore().Create(context.Background(), rec, runtime.TaskLimits{Bytes: budget})
		if err != nil && !errors.Is(err, runtime.ErrTaskLimit) {
			t.Fatal(err)
		}
		return err == nil
	}
	size := rec.Size()
	if !fits(size) || fits(size-1) {
		t.Fatalf("the memory store does not charge a record its Size, %d bytes", size)
	}
	return size
}

// accounted returns the bytes the Redis task store counts as used, and checks the count
// against the charges of the records it holds: the sum of the charges, one per record
// present in Redis, so that the total cannot drift.
func accounted(t *testing.T, rdb *redis.Client) int64 {
	t.Helper()
	ctx := context.Background()
	used, err := rdb.HGet(ctx, "mcp:tbytes", "used").Int64()
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Fatal(err)
	}
	charges, err := rdb.HGetAll(ctx, "mcp:tsize").Result()
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for id, v := range charges {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("the charge of task %s is %q", id, v)
		}
		sum += n
		if rdb.Exists(ctx, "mcp:t:"+id).Val() != 1 {
			t.Fatalf("task %s is charged %d bytes but is not in Redis", id, n)
		}
	}
	if sum != used {
		t.Fatalf("the store counts %d bytes used; its records' charges add up to %d", used, sum)
	}
	return used
}

// TestStoreTasksByteBudget checks the byte budget of the runtime.TaskStore contract in the
// Redis store: a record is charged what the memory store charges it; Create refuses with
// ErrTaskLimit a record past the budget; Delete and expiry free the budget; an Update that
// grows a record is charged (and refused past the budget, as in the memory store); no budget
// (0, negative, or the runtime's Unlimited) refuses nothing.
func TestStoreTasksByteBudget(t *testing.T) {
	st, rdb := newStore(t, redismcp.Options{})
	ts := st.Tasks()
	ctx := context.Background()
	size := memoryCharge(t, budgetRec("r0", "alice", time.Minute, ""))
	limits := runtime.TaskLimits{Bytes: 3*size + size/2} // three records fit, not four

	for i := range 3 {
		if err := ts.Create(ctx, budgetRec(fmt.Sprint("r", i), "alice", time.Minute, ""), limits); err != nil {
			t.Fatalf("record %d of three that fit: %v", i, err)
		}
	}
	if got := accounted(t, rdb); got != 3*size {
		t.Fatalf("three records of %d bytes are accounted as %d bytes; want %d, the memory store's charge", size, got, 3*size)
	}
	err := ts.Create(ctx, budgetRec("r3", "bobby", time.Minute, ""), limits)
	if !errors.Is(err, runtime.ErrTaskLimit) || !strings.Contains(err.Error(), fmt.Sprintf("budget of %d bytes", limits.Bytes)) {
		t.Fatalf("a record past the byte budget: %v; want ErrTaskLimit naming the budget of %d bytes", err, limits.Bytes)
	}
	if _, err := ts.Get(ctx, "r3"); !errors.Is(err, runtime.ErrTaskNotFound) {
		t.Fatalf("the refused record is stored: %v", err)
	}

	// Delete frees its record's bytes.
	if err := ts.Delete(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	if got := accounted(t, rdb); got != 2*size {
		t.Fatalf("after a Delete %d bytes are accounted; want %d", got, 2*size)
	}
	if err := ts.Delete(ctx, "r1"); err != nil || accounted(t, rdb) != 2*size {
		t.Fatalf("deleting a deleted task again: %v, and %d bytes accounted; want no error and %d", err, accounted(t, rdb), 2*size)
	}

	// Expiry frees its record's bytes: a short-lived record takes the last place until its
	// TTL runs out.
	if err := ts.Create(ctx, budgetRec("e0", "carol", 300*time.Millisecond, ""), limits); err != nil {
		t.Fatal(err)
	}
	if err := ts.Create(ctx, budgetRec("r4", "bobby", time.Minute, ""), limits); !errors.Is(err, runtime.ErrTaskLimit) {
		t.Fatalf("a fourth record while the short-lived one lives: %v; want ErrTaskLimit", err)
	}
	waitFor(t, 5*time.Second, "the short-lived record's expiry to free its bytes", func() bool {
		err := ts.Create(ctx, budgetRec("r4", "bobby", time.Minute, ""), limits)
		if err != nil && !errors.Is(err, runtime.ErrTaskLimit) {
			t.Fatal(err)
		}
		return err == nil
	})
	if got := accounted(t, rdb); got != 3*size {
		t.Fatalf("after the expiry and a Create %d bytes are accounted; want %d", got, 3*size)
	}

	// An Update that grows a record is charged: the store is then fuller than its number of
	// records says, and a Create that now exceeds is refused.
	if err := ts.Delete(ctx, "r4"); err != nil {
		t.Fatal(err)
	}
	result := `{"content":[{"type":"text","text":"` + strings.Repeat("x", int(size)) + `"}]}`
	grown := memoryCharge(t, budgetRec("r0", "alice", time.Minute, result))
	up, err := ts.Update(ctx, "r0", func(r *runtime.TaskRecord) error {
		r.Status, r.Result = runtime.TaskCompleted, json.RawMessage(result)
		return nil
	})
	if err != nil || up.Status != runtime.TaskCompleted {
		t.Fatalf("an Update storing a result within the budget: %+v, %v", up, err)
	}
	if got, want := accounted(t, rdb), size+grown; got != want {
		t.Fatalf("after an Update that stored a result %d bytes are accounted; want %d", got, want)
	}
	if err := ts.Create(ctx, budgetRec("r5", "bobby", time.Minute, ""), limits); !errors.Is(err, runtime.ErrTaskLimit) {
		t.Fatalf("a Create that fits only without the grown result: %v; want ErrTaskLimit", err)
	}
	// Growing past the budget is refused and leaves the record as it was, as in the memory
	// store; shrinking is never refused, and frees what it sheds.
	big := `{"content":[{"type":"text","text":"` + strings.Repeat("y", int(2*size)) + `"}]}`
	if _, err := ts.Update(ctx, "r2", func(r *runtime.TaskRecord) error { r.Result = json.RawMessage(big); return nil }); !errors.Is(err, runtime.ErrTaskLimit) {
		t.Fatalf("an Update growing a record past the budget: %v; want ErrTaskLimit", err)
	}
	if got, err := ts.Get(ctx, "r2"); err != nil || got.Result != nil {
		t.Fatalf("the refused Update changed the record: %+v, %v", got, err)
	}
	if got, want := accounted(t, rdb), size+grown; got != want {
		t.Fatalf("after a refused Update %d bytes are accounted; want %d", got, want)
	}
	if _, err := ts.Update(ctx, "r0", func(r *runtime.TaskRecord) error { r.Result = nil; return nil }); err != nil {
		t.Fatal(err)
	}
	if got := accounted(t, rdb); got != 2*size {
		t.Fatalf("after an Update that dropped the result %d bytes are accounted; want %d", got, 2*size)
	}
	if err := ts.Create(ctx, budgetRec("r5", "bobby", time.Minute, ""), limits); err != nil {
		t.Fatalf("a Create that fits again: %v", err)
	}

	// No budget: 0, negative, and what the runtime passes for Unlimited refuse nothing.
	for i, b := range []int64{0, runtime.Unlimited, math.MaxInt64 >> 2} {
		if err := ts.Create(ctx, budgetRec(fmt.Sprint("u", i), "daves", time.Minute, big), runtime.TaskLimits{Bytes: b}); err != nil {
			t.Fatalf("a Create with a byte budget of %d (none): %v", b, err)
		}
		if _, err := ts.Update(ctx, "r5", func(r *runtime.TaskRecord) error { r.Result = json.RawMessage(big); return nil }); err != nil {
			t.Fatalf("an Update after a Create with a byte budget of %d (none): %v", b, err)
		}
	}
	accounted(t, rdb)
}

// TestStoreTasksByteBudgetShared runs two TaskStores, as two replicas would, on one Redis:
// the byte budget is one for both, and what one frees the other may use.
func TestStoreTasksByteBudgetShared(t *testing.T) {
	st, rdb := newStore(t, redismcp.Options{})
	rdb2 := redis.NewClient(&redis.Options{Addr: rdb.Options().Addr})
	t.Cleanup(func() { rdb2.Close() })
	a, b := st.Tasks(), redismcp.New(rdb2, redismcp.Options{}).Tasks()
	ctx := context.Background()
	size := memoryCharge(t, budgetRec("a0", "alice", time.Minute, ""))
	limits := runtime.TaskLimits{Bytes: 4 * size}
	for i := range 2 {
		if err := a.Create(ctx, budgetRec(fmt.Sprint("a", i), "alice", time.Minute, ""), limits); err != nil {
			t.Fatal(err)
		}
		if err := b.Create(ctx, budgetRec(fmt.Sprint("b", i), "bobby", time.Minute, ""), limits); err != nil {
			t.Fatal(err)
		}
	}
	for _, ts := range []*redismcp.TaskStore{a, b} {
		if err := ts.Create(ctx, budgetRec("c0", "carol", time.Minute, ""), limits); !errors.Is(err, runtime.ErrTaskLimit) {
			t.Fatalf("a fifth record in a budget of four, shared: %v; want ErrTaskLimit", err)
		}
	}
	if err := b.Delete(ctx, "a0"); err != nil {
		t.Fatal(err)
	}
	if err := a.Create(ctx, budgetRec("c0", "carol", time.Minute, ""), limits); err != nil {
		t.Fatalf("a Create after the other replica freed a record: %v", err)
	}
	// An Update on one replica is charged against the budget a Create on the other set.
	if _, err := b.Update(ctx, "a1", func(r *runtime.TaskRecord) error { r.StatusMessage = "more"; return nil }); !errors.Is(err, runtime.ErrTaskLimit) {
		t.Fatalf("an Update growing a record of a full store, on the other replica: %v; want ErrTaskLimit", err)
	}
	if got := accounted(t, rdb); got != 4*size {
		t.Fatalf("%d bytes accounted; want %d", got, 4*size)
	}
}

// TestStoreTasksByteBudgetConcurrent starts many Creates at once from three TaskStores (three
// replicas) on one Redis: exactly the records that fit are admitted, and the accounted total
// is their charge, within the budget.
func TestStoreTasksByteBudgetConcurrent(t *testing.T) {
	st, rdb := newStore(t, redismcp.Options{})
	stores := []*redismcp.TaskStore{st.Tasks()}
	for range 2 {
		c := redis.NewClient(&redis.Options{Addr: rdb.Options().Addr})
		t.Cleanup(func() { c.Close() })
		stores = append(stores, redismcp.New(c, redismcp.Options{}).Tasks())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	result := `"` + strings.Repeat("z", 1000) + `"`
	size := memoryCharge(t, budgetRec("c000", "o0", time.Minute, result))
	const fit, tries = 17, 90
	limits := runtime.TaskLimits{Bytes: fit*size + size - 1}
	var (
		wg               sync.WaitGroup
		mu               sync.Mutex
		admitted, denied int
	)
	for g := range 9 {
		wg.Go(func() {
			for i := range tries / 9 {
				err := stores[g%3].Create(ctx, budgetRec(fmt.Sprintf("c%d%02d", g, i), fmt.Sprint("o", g), time.Minute, result), limits)
				mu.Lock()
				switch {
				case err == nil:
					admitted++
				case errors.Is(err, runtime.ErrTaskLimit):
					denied++
				default:
					t.Errorf("create: %v", err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if admitted != fit || denied != tries-fit {
		t.Fatalf("%d records admitted, %d refused; want the %d that fit, and %d refused", admitted, denied, fit, tries-fit)
	}
	if got := accounted(t, rdb); got != fit*size || got > limits.Bytes {
		t.Fatalf("%d bytes accounted; want %d, within the budget of %d", got, fit*size, limits.Bytes)
	}
	if n := rdb.HLen(ctx, "mcp:tsize").Val(); n != fit {
		t.Fatalf("%d records charged; want %d", n, fit)
	}
}

// TestServerTaskByteBudget runs two servers on one Redis TaskStore, each with the same
// WithMaxTaskBytes: a task whose result does not fit in the budget fails saying so, and once
// the tasks started through one server fill the budget, a tools/call as a task through the
// other is refused too, naming the budget.
func TestServerTaskByteBudget(t *testing.T) {
	st, _ := newStore(t, redismcp.Options{})
	const budget = 4096
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	text := func(s string) *runtime.CallToolResult {
		return &runtime.CallToolResult{Content: []runtime.Content{runtime.TextContent(s)}}
	}
	var clients []*runtime.Client
	for range 2 {
		srv := runtime.NewServer(runtime.Implementation{Name: "budget"}, runtime.WithTaskStore(st.Tasks()), runtime.WithMaxTaskBytes(budget))
		srv.AddTool(runtime.ToolSpec{Name: "big", TaskSupport: runtime.TaskRequired}, func(context.Context, *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
			return text(strings.Repeat("b", 2*budget)), nil
		})
		srv.AddTool(runtime.ToolSpec{Name: "hold", TaskSupport: runtime.TaskRequired}, func(ctx context.Context, _ *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		})
		hs := httptest.NewServer(srv)
		c := runtime.NewClient(hs.URL, legacy)
		t.Cleanup(func() {
			c.Close(context.Background())
			sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer scancel()
			_ = srv.Shutdown(sctx)
			hs.Close()
		})
		if err := c.Connect(ctx); err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
	}
	a, b := clients[0], clients[1]
	start := func(c *runtime.Client, tool string) (string, error) {
		raw, err := c.Call(ctx, "tools/call", map[string]any{"name": tool, "arguments": map[string]any{}, "task": map[string]any{}})
		if err != nil {
			return "", err
		}
		var r struct {
			Task struct{ TaskID string }
		}
		if err := json.Unmarshal(raw, &r); err != nil || r.Task.TaskID == "" {
			t.Fatalf("tools/call answered %s, %v; want a CreateTaskResult", raw, err)
		}
		return r.Task.TaskID, nil
	}

	// A result past the budget fails its task, saying why.
	id, err := start(a, "big")
	if err != nil {
		t.Fatal(err)
	}
	var got struct{ Status, StatusMessage string }
	waitFor(t, 10*time.Second, "the task with a result past the budget to end", func() bool {
		raw, err := a.Call(ctx, "tasks/get", map[string]any{"taskId": id})
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatal(err)
		}
		return got.Status != "working"
	})
	if got.Status != "failed" || !strings.Contains(got.StatusMessage, "does not fit") {
		t.Fatalf("the task whose result does not fit: %+v; want failed, saying it does not fit", got)
	}

	// Tasks through one server fill the budget; the other server refuses the next.
	admitted := 0
	for {
		_, err := start(a, "hold")
		if err != nil {
			if !strings.Contains(err.Error(), "too many tasks") || !strings.Contains(err.Error(), fmt.Sprintf("budget of %d bytes", budget)) {
				t.Fatalf("a task past the budget: %v; want refused, naming the budget", err)
			}
			break
		}
		if admitted++; admitted > budget/256 {
			t.Fatalf("%d tasks of at least 256 bytes each admitted in a budget of %d bytes", admitted, budget)
		}
	}
	if admitted == 0 {
		t.Fatal("no task admitted in an empty budget")
	}
	if _, err := start(b, "hold"); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("budget of %d bytes", budget)) {
		t.Fatalf("a task through the other server once the budget is full: %v; want refused, naming the budget", err)
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
