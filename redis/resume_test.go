package redismcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// sseEvent is one message event of an SSE stream.
type sseEvent struct{ id, data string }

// readEvents reads message events from r until stop says so or the stream ends.
func readEvents(t *testing.T, body io.Reader, stop func([]sseEvent) bool) []sseEvent {
	t.Helper()
	var (
		evs []sseEvent
		cur sseEvent
	)
	sc := bufio.NewScanner(body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			cur.id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "data: "):
			cur.data = strings.TrimPrefix(line, "data: ")
		case line == "":
			if cur.data != "" {
				evs = append(evs, cur)
				if stop(evs) {
					return evs
				}
			}
			cur = sseEvent{}
		}
	}
	return evs
}

// TestResumeOnTheSameReplica resumes a stream on the replica that produces it, with events
// both in Redis (stored when queued) and still in the replica's queue: each goes out once.
func TestResumeOnTheSameReplica(t *testing.T) {
	rs := startRedis(t)
	rep := startReplica(t, rs.url())
	endpoint := "http://" + rep.addr + "/mcp"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	post := func(ctx context.Context, session, body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := post(ctx, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	resp.Body.Close()
	session := resp.Header.Get("Mcp-Session-Id")
	if session == "" {
		t.Fatalf("initialize: %s", resp.Status)
	}
	post(ctx, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`).Body.Close()

	callCtx, hangUp := context.WithCancel(ctx)
	resp = post(callCtx, session, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"gated","arguments":{"a":"ra","b":"rb"},"_meta":{"progressToken":"p"}}}`)
	first := readEvents(t, resp.Body, func(evs []sseEvent) bool { return len(evs) == 3 })
	if len(first) != 3 {
		t.Fatalf("first connection: %v", first)
	}
	hangUp() // the client's connection drops after the third event
	resp.Body.Close()

	// Events 4 and 5 are queued while no connection holds the stream, and stored in Redis.
	open := func(name string) {
		t.Helper()
		r, err := http.Get("http://" + rep.addr + "/gate?name=" + name)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
	}
	open("ra")
	rdb := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", rs.port)})
	defer rdb.Close()
	waitFor(t, 5*time.Second, "five stored events", func() bool {
		keys, _ := rdb.Keys(ctx, "mcp:e:"+session+":*").Result()
		for _, k := range keys {
			if n, _ := rdb.XLen(ctx, k).Result(); n == 5 {
				return true
			}
		}
		return false
	})

	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Last-Event-ID", first[2].id)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("resume: %s", resp.Status)
	}
	go func() { // the answer follows
		if r, err := http.Get("http://" + rep.addr + "/gate?name=rb"); err == nil {
			r.Body.Close()
		}
	}()
	rest := readEvents(t, resp.Body, func(evs []sseEvent) bool {
		return strings.Contains(evs[len(evs)-1].data, `"result"`)
	})
	var got []string
	for _, ev := range rest {
		var m struct {
			Method string `json:"method"`
			Params struct {
				Progress float64 `json:"progress"`
			} `json:"params"`
		}
		_ = json.Unmarshal([]byte(ev.data), &m)
		if m.Method != "" {
			got = append(got, fmt.Sprintf("%s %v", ev.id[strings.LastIndexByte(ev.id, '_')+1:], m.Params.Progress))
		} else {
			got = append(got, "response")
		}
	}
	if strings.Join(got, ", ") != "4 4, 5 5, response" {
		t.Fatalf("resumed stream: %v; want events 4 and 5 once each, then the response", got)
	}
}

// TestDeleteEndsTheSessionOnEveryReplica deletes a session through one replica while another
// holds its GET stream: that stream ends, and the session is gone on every replica. The bus
// tells the holder at once; failing that, the holder's periodic extension of the session's
// lifetime finds it gone (within the reaper's interval, 5 s here).
func TestDeleteEndsTheSessionOnEveryReplica(t *testing.T) {
	rs := startRedis(t)
	a, b := startReplica(t, rs.url()), startReplica(t, rs.url())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	do := func(method, addr, session, body string) *http.Response {
		t.Helper()
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, _ := http.NewRequestWithContext(ctx, method, "http://"+addr+"/mcp", rd)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := do(http.MethodPost, a.addr, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	resp.Body.Close()
	session := resp.Header.Get("Mcp-Session-Id")
	do(http.MethodPost, b.addr, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`).Body.Close()

	get := do(http.MethodGet, b.addr, session, "")
	defer get.Body.Close()
	if get.StatusCode != http.StatusOK {
		t.Fatalf("GET on replica b: %s", get.Status)
	}
	ended := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, get.Body) // until the replica ends the stream
		close(ended)
	}()
	if r := do(http.MethodDelete, a.addr, session, ""); r.StatusCode != http.StatusOK {
		t.Fatalf("DELETE on replica a: %s", r.Status)
	} else {
		r.Body.Close()
	}
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the GET stream on replica b outlived its session's DELETE on replica a")
	}
	for _, rep := range []*replica{a, b} {
		r := do(http.MethodPost, rep.addr, session, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
		r.Body.Close()
		if r.StatusCode != http.StatusNotFound {
			t.Fatalf("a request of the deleted session on %s: %s; want 404", rep.addr, r.Status)
		}
	}
}
