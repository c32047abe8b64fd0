package servers

// The memory a server holds per session: idle (initialize and notifications/initialized
// answered, nothing else), and with its standalone GET stream open. Each SDK's handler is
// served on loopback by a real http.Server; the sessions are made by a client in the same
// process that keeps nothing per idle session but its ID, and holds a GET stream with a bare
// TCP connection (no reader, no buffer). The live heap and the goroutine stacks are read after
// a full collection, before and after. The floor holds GET connections open with a handler
// that only waits: what is left above it is the SDK's own cost.
//
//	go test -run TestSessionCost -v ./internal/servers/ -args -sessions 10000

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"
)

var (
	sessionsFlag = flag.Int("sessions", 100, "sessions per measurement in TestSessionCost")
	streamsFlag  = flag.Int("streams", 0, "GET streams opened in TestSessionCost (default: -sessions); each costs two file descriptors in this process")
)

// memNow returns the live heap and the goroutine stacks in use, after a full collection.
func memNow() (heap, stack int64) {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc), int64(ms.StackInuse)
}

// initSession starts a session and returns its ID ("" for servers without sessions).
func initSession(t *testing.T, hc *http.Client, url string) string {
	t.Helper()
	post := func(sid, body string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 300 {
			t.Fatalf("POST %.60s: %s", body, resp.Status)
		}
		return resp
	}
	resp := post("", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
	sid := resp.Header.Get("Mcp-Session-Id")
	post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return sid
}

// openGET opens a session's GET stream on a bare connection and waits for the answer's
// status line.
func openGET(t *testing.T, addr, sid string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "GET /mcp HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\nMcp-Session-Id: %s\r\nMcp-Protocol-Version: 2025-11-25\r\n\r\n", addr, sid)
	var buf [12]byte
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(c, buf[:]); err != nil || string(buf[9:12]) != "200" {
		t.Fatalf("GET stream: %v %q", err, buf)
	}
	_ = c.SetReadDeadline(time.Time{})
	return c
}

// waitingHandler is the floor for GET streams: it answers 200 and waits for the client to go.
func waitingHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
}

func TestSessionCost(t *testing.T) {
	n := *sessionsFlag
	m := *streamsFlag
	if m <= 0 || m > n {
		m = n
	}
	servers := []struct {
		name string
		mk   func() http.Handler
	}{
		{"protomcp", func() http.Handler { return Protomcp(false) }},
		{"go-sdk", func() http.Handler { return GoSDK(false, false) }},
		{"mcp-go", MCPGo},
		{"floor", waitingHandler},
	}
	t.Logf("%d sessions, %d of them with a GET stream; bytes per session (heap + goroutine stacks)", n, m)
	t.Logf("| server | idle session: heap | stack | with a GET stream: heap | stack |")
	for _, s := range servers {
		hs := httptest.NewUnstartedServer(s.mk())
		hs.Config.ReadHeaderTimeout = 10 * time.Second
		hs.Start()
		url := hs.URL + "/mcp"
		hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
		h0, s0 := memNow()
		ids := make([]string, n)
		for i := range ids {
			ids[i] = initSession(t, hc, url)
		}
		h1, s1 := memNow()
		conns := make([]net.Conn, m)
		for i := range conns {
			conns[i] = openGET(t, hs.Listener.Addr().String(), ids[i])
		}
		time.Sleep(200 * time.Millisecond) // every stream's writer settled
		h2, s2 := memNow()
		t.Logf("| %s | %d | %d | %d | %d |", s.name, (h1-h0)/int64(n), (s1-s0)/int64(n), (h2-h1)/int64(m), (s2-s1)/int64(m))
		for _, c := range conns {
			c.Close()
		}
		hc.CloseIdleConnections()
		hs.CloseClientConnections()
		hs.Close()
		runtime.KeepAlive(ids)
	}
}
