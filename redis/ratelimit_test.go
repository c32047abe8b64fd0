package redismcp_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	redismcp "github.com/protomcp/protomcp/redis"
	"github.com/protomcp/protomcp/runtime"
	"github.com/redis/go-redis/v9"
)

// TestLimiter proves the Redis token bucket against a real redis-server: a full bucket at
// first, refusals with the wait until the next token, buckets shared by two limiters on two
// connections (two replicas) and kept apart by key, a key that expires once full again.
func TestLimiter(t *testing.T) {
	t.Parallel()
	rs := startRedis(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	newLimiter := func() (*redismcp.Limiter, *redis.Client) {
		rdb := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", rs.port)})
		t.Cleanup(func() { rdb.Close() })
		return redismcp.NewLimiter(rdb, redismcp.LimiterOptions{Prefix: "t:"}), rdb
	}
	a, rdb := newLimiter()
	b, _ := newLimiter()
	r := runtime.Rate{Calls: 4, Period: time.Hour} // a token every 15 minutes
	var allowed int
	for i := range 6 {
		l := a
		if i%2 == 1 {
			l = b
		}
		ok, wait, err := l.Take(ctx, "k", r, 1)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			allowed++
			continue
		}
		if wait <= 14*time.Minute || wait > 15*time.Minute {
			t.Errorf("refusal %d: retry after %v, want about 15m", i, wait)
		}
	}
	if allowed != 4 {
		t.Errorf("two limiters allowed %d calls of one bucket of 4", allowed)
	}
	if ok, _, err := a.Take(ctx, "other", r, 1); err != nil || !ok {
		t.Errorf("another key's bucket: allowed %v, err %v", ok, err)
	}
	ttl, err := rdb.PTTL(ctx, "t:rl:k").Result()
	if err != nil || ttl <= 59*time.Minute || ttl > 61*time.Minute {
		t.Errorf("an empty bucket of 4 refilled in 1h expires in %v (err %v), want about 1h", ttl, err)
	}
	// A bucket refilled in well under a second.
	fast := runtime.Rate{Calls: 100, Period: time.Second, Burst: 1}
	if ok, _, _ := a.Take(ctx, "fast", fast, 1); !ok {
		t.Error("fast: first call refused")
	}
	waitFor(t, 5*time.Second, "the fast bucket to refill", func() bool {
		ok, _, err := b.Take(ctx, "fast", fast, 1)
		return err == nil && ok
	})
	if _, _, err := a.Take(ctx, "bad", runtime.Rate{Period: time.Second}, 1); err == nil {
		t.Error("a rate of no calls was accepted")
	}
}

// TestLimiterRedisOutage proves a Limiter answers with an error, at once, while Redis is
// down, and works again when Redis returns, with nothing done but its return.
func TestLimiterRedisOutage(t *testing.T) {
	rs := startRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", rs.port), MaxRetries: -1})
	defer rdb.Close()
	l := redismcp.NewLimiter(rdb, redismcp.LimiterOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := runtime.PerMinute(10)
	if ok, _, err := l.Take(ctx, "k", r, 1); err != nil || !ok {
		t.Fatalf("before the outage: allowed %v, err %v", ok, err)
	}
	rs.stop()
	if _, _, err := l.Take(ctx, "k", r, 1); err == nil {
		t.Fatal("Take succeeded with Redis down")
	}
	rs.start()
	waitFor(t, 10*time.Second, "the limiter to work again", func() bool {
		ok, _, err := l.Take(ctx, "k", r, 1)
		return err == nil && ok
	})
}

// TestReplicaSetRateLimit proves one quota for a replica set: three replicas sharing one
// redis-server behind the round-robin proxy allow, all together, the quota of the tool's
// bucket to one caller (anonymous 2026-07-28 clients from one address), not three times it.
// While Redis is down each replica limits by itself (runtime.FailLocal): calls are answered
// and at most three quotas are allowed; once Redis returns, one quota holds again.
func TestReplicaSetRateLimit(t *testing.T) {
	rs := startRedis(t)
	reps := []*replica{startReplica(t, rs.url()), startReplica(t, rs.url()), startReplica(t, rs.url())}
	px := newProxy(t, reps)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// burst makes calls calls from 4 clients at once and returns how many were allowed.
	burst := func(calls int) int {
		var wg sync.WaitGroup
		var allowed atomic.Int64
		per := calls / 4
		for range 4 {
			c := runtime.NewClient(px.URL, runtime.WithEra(runtime.EraModern))
			wg.Go(func() {
				defer c.Close(ctx)
				for range per {
					res, err := c.CallTool(ctx, "limited", nil)
					if err != nil {
						t.Errorf("call: %v", err)
						return
					}
					if !res.IsError {
						allowed.Add(1)
					} else if _, ok := runtime.RetryAfter(res, nil); !ok {
						t.Errorf("a refusal without its retry hint: %+v", res)
					}
				}
			})
		}
		wg.Wait()
		return int(allowed.Load())
	}
	within := func(what string, got, quota int) {
		t.Helper()
		if d := got - quota; d*10 > quota || -d*10 > quota {
			t.Errorf("%s: %d calls allowed, want %d within 10%%", what, got, quota)
		}
	}

	before := len(px.find(func(h hit) bool { return h.rpc == "tools/call" }))
	within("one quota for three replicas", burst(4*limitedQuota), limitedQuota)
	served := map[int]bool{}
	for _, h := range px.find(func(h hit) bool { return h.rpc == "tools/call" })[before:] {
		served[h.backend] = true
	}
	if len(served) != 3 {
		t.Errorf("the calls reached %d replicas, want 3", len(served))
	}

	rs.stop()
	got := burst(6 * limitedQuota)
	if got < limitedQuota || got > 3*limitedQuota {
		t.Errorf("Redis down: %d calls allowed, want between one quota and three (%d)", got, limitedQuota)
	}

	rs.start() // empty: every bucket is full again
	// Wait until every replica takes from Redis again: three calls in a row reach the three
	// replicas (round robin), and each takes a token from the Redis bucket.
	rdb := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", rs.port)})
	defer rdb.Close()
	const key = "mcp:rl:tool/limited|addr:127.0.0.1"
	waitFor(t, 20*time.Second, "every replica to take from Redis again", func() bool {
		if rdb.Del(ctx, key).Err() != nil {
			return false
		}
		c := runtime.NewClient(px.URL, runtime.WithEra(runtime.EraModern))
		defer c.Close(ctx)
		if c.Connect(ctx) != nil {
			return false
		}
		for range 3 {
			if _, err := c.CallTool(ctx, "limited", nil); err != nil {
				return false
			}
		}
		tk, err := rdb.HGet(ctx, key, "tk").Float64()
		return err == nil && tk < limitedQuota-2.5
	})
	if err := rdb.Del(ctx, key).Err(); err != nil {
		t.Fatal(err)
	}
	// Every replica must be back on Redis, not on its local buckets: those still hold what
	// the outage left, so the quota holds exactly only if all three use Redis.
	within("one quota again once Redis returned", burst(4*limitedQuota), limitedQuota)
}

// TestLimiterRedisHangs proves a Limiter's Timeout bounds each Take when Redis accepts the
// connection but never answers (a hung or partitioned Redis), whatever the client's own read
// timeout: go-redis leaves a context's deadline out of its socket reads unless the client
// was built with ContextTimeoutEnabled, so the deadline alone would not bound the wait.
func TestLimiterRedisHangs(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var held sync.WaitGroup
	conns := make(chan net.Conn, 16)
	held.Add(1)
	go func() { // accept, read, never answer
		defer held.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns <- c
			go func() { _, _ = io.Copy(io.Discard, c) }()
		}
	}()
	defer func() {
		ln.Close()
		held.Wait()
		close(conns)
		for c := range conns {
			c.Close()
		}
	}()
	// A *redis.Client, and a client of another kind (a ring of one shard).
	clients := map[string]redis.UniversalClient{
		"client": redis.NewClient(&redis.Options{Addr: ln.Addr().String(), ReadTimeout: time.Minute, MaxRetries: -1}),
		"ring": redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": ln.Addr().String()},
			ReadTimeout: time.Minute, MaxRetries: -1}),
	}
	for name, rdb := range clients {
		defer rdb.Close()
		l := redismcp.NewLimiter(rdb, redismcp.LimiterOptions{Timeout: 100 * time.Millisecond})
		done := make(chan error, 1)
		go func() {
			_, _, err := l.Take(context.Background(), "k", runtime.PerMinute(10), 1)
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil {
				t.Fatalf("%s: Take succeeded against a Redis that never answers", name)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: Take still waiting for a Redis that never answers, its Timeout long past", name)
		}
	}
}
