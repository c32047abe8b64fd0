package runtime

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runningHandlers returns the number of handlers in flight.
func (e *hardenEnv) runningHandlers() int {
	return int(e.srv.running.Load())
}

// A client that disconnects mid-stream: the handler is not cancelled (a disconnection is
// not a cancellation), it finishes, its stream waits to be resumed, and the session and the
// server go on.
func TestFaultClientDisconnectMidStream(t *testing.T) {
	t.Parallel()
	e := newHardenEnv(t)
	c, err := e.openSSE(e.ctx(), http.MethodPost, e.sid, toolCall("1", "stream", `{"n":20,"size":100,"tag":"d","gate":true}`), nil)
	require.NoError(t, err)
	if _, ok := c.next(); !ok {
		require.Fail(t, "no first event")
	}
	<-e.ctl.started
	c.close()
	e.ctl.open()
	require.True(t, waitFor(10*time.Second, func() bool { return e.runningHandlers() == 0 }), "the handler never finished after its client went away")
	e.mustWork(e.sid)
	// The abandoned stream can still be resumed, with everything after the first event.
	r, err := e.send(e.ctx(), http.MethodGet, e.sid, "", map[string]string{"Last-Event-ID": c.lastID})
	require.NoError(t, err, "resume after the disconnection")
	require.NotNil(t, r.msg, "resume after the disconnection: no response: %s", dump(r))
	assert.Nil(t, r.msg.Error, "resume after the disconnection: %s", dump(r))
	assert.Len(t, r.events, 21, "events after the first, on resumption: %s", dump(r))
}

// A slow client: a raw TCP client POSTs a call to a tool that streams many large
// notifications and never reads the answer. Its writes block; the stream's queue limit
// stops the handler with an error that is logged; other sessions are served meanwhile; and
// when the client finally goes, nothing is left running.
func TestFaultSlowClient(t *testing.T) {
	t.Parallel()
	e := newHardenEnv(t, WithMaxQueuedEvents(16))
	conn, err := net.Dial("tcp", e.hs.Listener.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	body := toolCall("1", "stream", `{"n":2000,"size":65536,"tag":"slow"}`)
	fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n%s: %s\r\nContent-Length: %d\r\n\r\n%s",
		e.hs.Listener.Addr(), headerSessionID, e.sid, len(body), body)
	// The handler fills the socket buffers, then the queue, then fails.
	require.Truef(t, waitFor(20*time.Second, func() bool { return strings.Contains(e.log.String(), "stream is full") }), "the queue limit never kicked in:\n%s", truncate(e.log.String(), 4000))
	require.True(t, waitFor(10*time.Second, func() bool { return e.runningHandlers() == 0 }), "the slow client's handler never finished")
	// Other sessions, and other requests of the same session, are not held up.
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sid := e.initialize()
			for range 5 {
				r, err := e.call(e.ctx(), sid, "tools/call", `{"name":"stream","arguments":{"n":3,"size":10,"items":50,"tag":"ok"}}`)
				if err != nil || r.msg == nil || r.msg.Error != nil {
					assert.Fail(t, fmt.Sprintf("a call beside the slow client failed: %v %s", err, dump(r)))
					return
				}
			}
		}()
	}
	wg.Wait()
	e.mustWork(e.sid)
	// The slow client reads at last: what it gets is well-formed and ends with the
	// response, which says the stream overflowed.
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 1<<20), 1<<20)
	last, events := "", 0
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && d != "" {
			last = d
			events++
		}
	}
	if err := sc.Err(); err != nil {
		require.Fail(t, fmt.Sprintf("reading the slow stream after %d events: %v; last %s\n%s", events, err, truncate(last, 200), truncate(e.log.String(), 3000)))
	}
	assert.Contains(t, last, `"id":1`, "the last event is not the response")
	assert.Contains(t, last, "stream is full", "the last event does not report the overflow")
}

// A server killed and restarted on the same port under a connected client: calls fail
// with a clear error while it is down, and once it is back the client starts a new session
// by itself and succeeds.
func TestFaultServerRestart(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	start := func(ln net.Listener) (*Server, *http.Server) {
		srv := NewServer(Implementation{Name: "restart", Version: "1"}, WithLogger(discardLogger()))
		addHardenTools(srv, &hardenCtl{started: make(chan string, 8), release: make(chan struct{})})
		hs := &http.Server{Handler: srv}
		go func() { _ = hs.Serve(ln) }()
		return srv, hs
	}
	stop := func(srv *Server, hs *http.Server) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		_ = hs.Shutdown(ctx)
		_ = hs.Close()
	}
	srv1, hs1 := start(ln)
	c := NewClient("http://"+addr, WithLogger(discardLogger()), WithEra(EraLegacy))
	defer c.Close(context.Background())
	ctx := testCtx(t)
	if _, err := c.CallTool(ctx, "echo", json.RawMessage(`{"n":1}`)); err != nil {
		require.NoError(t, err)
	}
	first := c.SessionID()

	stop(srv1, hs1)
	_, err = c.CallTool(ctx, "echo", json.RawMessage(`{"n":2}`))
	require.Error(t, err, "a call to a stopped server")
	// The first failure may be the pooled connection's EOF; either way it names the server.
	assert.ErrorContains(t, err, addr, "the error while the server is down does not name it")
	_, err = c.CallTool(ctx, "echo", json.RawMessage(`{"n":2}`))
	assert.ErrorContains(t, err, "connection refused", "the second call while the server is down")
	require.NoError(t, ctx.Err(), "the failing call only ended with its context")

	ln2, err := net.Listen("tcp", addr)
	require.NoError(t, err, "reopening %s", addr)
	srv2, hs2 := start(ln2)
	defer stop(srv2, hs2)
	res, err := c.CallTool(ctx, "echo", json.RawMessage(`{"n":3}`))
	require.NoError(t, err, "the client did not recover once the server was back")
	assert.Contains(t, res.Text(), `"n":3`, "the result after the restart")
	assert.NotEmpty(t, c.SessionID(), "the session after the restart")
	assert.NotEqual(t, first, c.SessionID(), "the client kept its session across the restart")
}

// Shutdown with calls in flight: calls that finish within the deadline are answered;
// calls still running at the deadline are cancelled, and their clients get a clear error
// rather than waiting.
func TestFaultShutdownInFlight(t *testing.T) {
	t.Parallel()
	t.Run("finish within the deadline", func(t *testing.T) {
		e := newHardenEnv(t)
		c := NewClient(e.url, WithLogger(e.logger()))
		defer c.Close(context.Background())
		ctx := testCtx(t)
		errs := make(chan error, 3)
		for i := range 3 {
			go func() {
				_, err := c.CallTool(ctx, "block", json.RawMessage(fmt.Sprintf(`{"tag":"s%d"}`, i)))
				errs <- err
			}()
		}
		for range 3 {
			<-e.ctl.started
		}
		shut := make(chan error, 1)
		go func() {
			sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer scancel()
			shut <- e.srv.Shutdown(sctx)
		}()
		// New requests are refused while draining; the running ones then finish.
		require.True(t, waitFor(5*time.Second, func() bool {
			r, err := e.call(e.ctx(), e.sid, "ping", `{}`)
			return err == nil && r.status == http.StatusServiceUnavailable
		}), "the server kept taking requests while shutting down")
		e.ctl.open()
		for range 3 {
			if err := <-errs; err != nil {
				assert.Fail(t, fmt.Sprintf("a call that finished within the deadline failed: %v", err))
			}
		}
		if err := <-shut; err != nil {
			require.Fail(t, fmt.Sprintf("Shutdown: %v", err))
		}
	})
	t.Run("cancelled after the deadline", func(t *testing.T) {
		e := newHardenEnv(t)
		c := NewClient(e.url, WithLogger(e.logger()), WithMaxResumes(1))
		defer c.Close(context.Background())
		ctx := testCtx(t)
		errs := make(chan error, 3)
		for i := range 3 {
			go func() {
				_, err := c.CallTool(ctx, "block", json.RawMessage(fmt.Sprintf(`{"tag":"c%d"}`, i)))
				errs <- err
			}()
		}
		for range 3 {
			<-e.ctl.started
		}
		sctx, scancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer scancel()
		require.ErrorIs(t, e.srv.Shutdown(sctx), context.DeadlineExceeded, "Shutdown with stuck calls")
		for range 3 {
			select {
			case err := <-errs:
				if err == nil {
					assert.Fail(t, "a call cancelled by shutdown succeeded")
				} else if ctx.Err() != nil {
					assert.Fail(t, fmt.Sprintf("a call cancelled by shutdown only ended with its context: %v", err))
				} else if !strings.Contains(err.Error(), "shutting down") {
					assert.Fail(t, fmt.Sprintf("unclear error for a call cancelled by shutdown: %v", err))
				}
			case <-time.After(15 * time.Second):
				require.Fail(t, "a call cancelled by shutdown never returned")
			}
		}
		assert.Zero(t, e.runningHandlers(), "handlers still running after Shutdown")
	})
}

// cutWriter makes the connection of one response look dropped after some writes: the
// writes after that fail, as on a dead socket, and the response ends there.
type cutWriter struct {
	http.ResponseWriter
	after int
	n     int
}

func (w *cutWriter) Write(p []byte) (int, error) {
	w.n++
	if w.n > w.after {
		return 0, errors.New("connection dropped (test)")
	}
	return w.ResponseWriter.Write(p)
}

func (w *cutWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Resumption after a dropped connection loses and duplicates nothing: the client resumes
// with GET and Last-Event-ID and sees every notification exactly once, in order, then the
// result.
func TestFaultResumeAfterDrop(t *testing.T) {
	t.Parallel()
	for cut := 1; cut <= 3; cut++ {
		t.Run(fmt.Sprintf("cut after %d writes", cut), func(t *testing.T) {
			ctl := &hardenCtl{started: make(chan string, 8), release: make(chan struct{})}
			log := &hardenLog{}
			srv := NewServer(Implementation{Name: "drop", Version: "1"}, WithLogger(slogTo(log)), WithRetryInterval(10*time.Millisecond))
			addHardenTools(srv, ctl)
			var once sync.Once
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost && r.ContentLength > 0 {
					body, _ := io.ReadAll(r.Body)
					r.Body = readCloser(body)
					if strings.Contains(string(body), `"stream"`) {
						cutNow := false
						once.Do(func() { cutNow = true })
						if cutNow {
							w = &cutWriter{ResponseWriter: w, after: cut}
						}
					}
				}
				srv.ServeHTTP(w, r)
			}))
			defer func() {
				ctl.releaseAll()
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_ = srv.Shutdown(ctx)
				hs.Close()
			}()
			var mu sync.Mutex
			var seen []int
			c := NewClient(hs.URL, WithEra(EraLegacy), WithLogger(slogTo(log)), WithNotificationHandler(func(_ context.Context, method string, params json.RawMessage) {
				var p struct {
					Data struct {
						I int `json:"i"`
					} `json:"data"`
				}
				if method == notifMessage && json.Unmarshal(params, &p) == nil && strings.Contains(string(params), `"i"`) {
					mu.Lock()
					seen = append(seen, p.Data.I)
					mu.Unlock()
				}
			}))
			defer c.Close(context.Background())
			ctx := testCtx(t)
			go func() {
				<-ctl.started
				ctl.open()
			}()
			const n = 40
			res, err := c.CallTool(ctx, "stream", json.RawMessage(fmt.Sprintf(`{"n":%d,"size":200,"tag":"r","gate":true,"items":3}`, n)))
			require.NoErrorf(t, err, "the call did not survive the dropped connection: %v\n%s", err, truncate(log.String(), 4000))
			assert.Contains(t, res.Text(), "r-2", "result")
			mu.Lock()
			defer mu.Unlock()
			want := make([]int, n)
			for i := range want {
				want[i] = i
			}
			assert.Equal(t, want, seen, "notifications: each once, in order")
		})
	}
}

func slogTo(w *hardenLog) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func readCloser(b []byte) io.ReadCloser { return io.NopCloser(bytes.NewReader(b)) }
