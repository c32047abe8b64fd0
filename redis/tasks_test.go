package redismcp_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	redismcp "github.com/protomcp/protomcp/redis"
	"github.com/protomcp/protomcp/runtime"
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
