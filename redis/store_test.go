package redismcp_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	redismcp "github.com/protomcp/protomcp/redis"
	"github.com/protomcp/protomcp/runtime"
	"github.com/redis/go-redis/v9"
)

func newStore(t *testing.T, opts redismcp.Options) (*redismcp.Store, *redis.Client) {
	t.Helper()
	rs := startRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", rs.port)})
	t.Cleanup(func() { rdb.Close() })
	return redismcp.New(rdb, opts), rdb
}

func TestStoreSessions(t *testing.T) {
	st, rdb := newStore(t, redismcp.Options{SessionTTL: time.Minute})
	ctx := context.Background()
	if _, err := st.Load(ctx, "nope"); !errors.Is(err, runtime.ErrSessionNotFound) {
		t.Fatalf("Load of an unknown session: %v", err)
	}
	// A change to a session that does not exist (deleted meanwhile) must not create it.
	if err := st.Update(ctx, "nope", runtime.SessionChange{Subscribe: "res://x"}); !errors.Is(err, runtime.ErrSessionNotFound) {
		t.Fatalf("Update of an unknown session: %v", err)
	}
	if n, _ := rdb.Exists(ctx, "mcp:s:nope").Result(); n != 0 {
		t.Fatal("Update brought a deleted session back")
	}
	in := &runtime.SessionState{
		ProtocolVersion: runtime.ProtocolVersion20251125,
		ClientInfo:      runtime.Implementation{Name: "c", Version: "1"},
		Owner:           "iss\x00sub\x00client",
		Subscriptions:   []string{"res://a"},
	}
	if err := st.Create(ctx, "s1", in); err != nil {
		t.Fatal(err)
	}
	for _, ch := range []runtime.SessionChange{{LogLevel: runtime.LevelWarning}, {Subscribe: "res://b"}, {Unsubscribe: "res://a"}} {
		if err := st.Update(ctx, "s1", ch); err != nil {
			t.Fatal(err)
		}
	}
	out, err := st.Load(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if out.ProtocolVersion != in.ProtocolVersion || out.ClientInfo != in.ClientInfo || out.Owner != in.Owner || out.LogLevel != runtime.LevelWarning || !slices.Equal(out.Subscriptions, []string{"res://b"}) {
		t.Fatalf("loaded %+v", out)
	}
	if ttl, _ := rdb.PTTL(ctx, "mcp:s:s1").Result(); ttl <= 0 || ttl > time.Minute {
		t.Fatalf("session TTL = %v; want the session TTL", ttl)
	}
	if err := st.Delete(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Load(ctx, "s1"); !errors.Is(err, runtime.ErrSessionNotFound) {
		t.Fatalf("Load after Delete: %v", err)
	}
	if err := st.Touch(ctx, "s1"); !errors.Is(err, runtime.ErrSessionNotFound) {
		t.Fatalf("Touch after Delete: %v", err)
	}
}

func TestStoreEvents(t *testing.T) {
	st, rdb := newStore(t, redismcp.Options{})
	ctx := context.Background()
	if err := st.OpenStream(ctx, "s", "r.1", []byte(`"req-7"`)); err != nil {
		t.Fatal(err)
	}
	for i := uint64(1); i <= 5; i++ {
		if err := st.Append(ctx, "s", "r.1", i, fmt.Appendf(nil, "e%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Append(ctx, "s", "r.1", 5, []byte("again")); !errors.Is(err, runtime.ErrEventConflict) {
		t.Fatalf("Append of an event the stream has: %v; want ErrEventConflict", err)
	}
	info, err := st.StreamInfo(ctx, "s", "r.1")
	if err != nil || string(info.RequestID) != `"req-7"` || info.LastSeq != 5 {
		t.Fatalf("StreamInfo = %+v, %v", info, err)
	}
	if _, err := st.StreamInfo(ctx, "s", "r.9"); !errors.Is(err, runtime.ErrSessionNotFound) {
		t.Fatalf("StreamInfo of an unknown stream: %v", err)
	}
	replay := func(after uint64) ([]string, error) {
		var got []string
		err := st.Replay(ctx, "s", "r.1", after, func(seq uint64, data []byte) error {
			got = append(got, fmt.Sprintf("%d:%s", seq, data))
			return nil
		})
		return got, err
	}
	if got, err := replay(2); err != nil || !slices.Equal(got, []string{"3:e3", "4:e4", "5:e5"}) {
		t.Fatalf("Replay after 2 = %v, %v", got, err)
	}
	// Trimmed events are reported, never skipped.
	if err := rdb.XTrimMaxLen(ctx, "mcp:e:s:r.1", 2).Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := replay(1); !errors.Is(err, runtime.ErrEventsEvicted) || len(got) != 0 {
		t.Fatalf("Replay after a trimmed event = %v, %v; want ErrEventsEvicted", got, err)
	}
	if got, err := replay(3); err != nil || !slices.Equal(got, []string{"4:e4", "5:e5"}) {
		t.Fatalf("Replay after 3 = %v, %v", got, err)
	}
	// Wait returns once a later event is stored.
	stored := make(chan struct{})
	go func() {
		time.Sleep(50 * time.Millisecond)
		_ = st.Append(ctx, "s", "r.1", 6, []byte("e6"))
		close(stored)
	}()
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for {
		if err := st.Wait(wctx, "s", "r.1", 5); err != nil {
			t.Fatal(err)
		}
		if info, _ := st.StreamInfo(ctx, "s", "r.1"); info.LastSeq == 6 {
			break
		}
	}
	<-stored
	if err := st.DeleteSession(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if keys, _ := rdb.Keys(ctx, "mcp:e*").Result(); len(keys) != 0 {
		t.Fatalf("keys left after DeleteSession: %v", keys)
	}
}

func TestStoreBus(t *testing.T) {
	st, _ := newStore(t, redismcp.Options{Lease: time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	var (
		mu  sync.Mutex
		got []string
	)
	done := make(chan error, 1)
	go func() {
		done <- st.Listen(ctx, "a", func(b []byte) {
			mu.Lock()
			got = append(got, string(b))
			mu.Unlock()
		})
	}()
	waitFor(t, 5*time.Second, "the lease", func() bool {
		ok, _ := st.Alive(context.Background(), "a")
		return ok
	})
	// Publish until the subscription is in place (Pub/Sub drops what precedes it).
	waitFor(t, 5*time.Second, "a message to every replica", func() bool {
		_ = st.Publish(context.Background(), "", []byte("all"))
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(got, "all")
	})
	_ = st.Publish(context.Background(), "b", []byte("for b"))
	_ = st.Publish(context.Background(), "a", []byte("for a"))
	waitFor(t, 5*time.Second, "a message to this replica", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(got, "for a")
	})
	mu.Lock()
	if slices.Contains(got, "for b") {
		t.Error("a replica received a message for another")
	}
	mu.Unlock()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Listen did not return after its context ended")
	}
	if ok, err := st.Alive(context.Background(), "a"); ok || err != nil {
		t.Fatalf("Alive after Listen returned = %v, %v; want the lease released", ok, err)
	}
}
