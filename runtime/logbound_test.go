package runtime

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countingHandler is a slog.Handler, enabled at every level, that counts the lines written
// through it by message and keeps the "suppressed" counts of the summary lines.
type countingHandler struct {
	mu         sync.Mutex
	lines      int
	byMsg      map[string]int
	suppressed map[string]int64  // by message, from the summary lines
	sources    map[string]string // a written line's source file, by message
}

func newCountingHandler() *countingHandler {
	return &countingHandler{byMsg: map[string]int{}, suppressed: map[string]int64{}, sources: map[string]string{}}
}

// source is the base name of the source file of msg's lines.
func (h *countingHandler) source(msg string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sources[msg]
}

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lines++
	h.byMsg[r.Message]++
	if r.PC != 0 {
		f, _ := goruntime.CallersFrames([]uintptr{r.PC}).Next()
		h.sources[r.Message] = filepath.Base(f.File)
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "suppressed" {
			h.suppressed[r.Message] += a.Value.Int64()
		}
		return true
	})
	return nil
}

func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countingHandler) WithGroup(string) slog.Handler      { return h }

// counts returns the number of lines and a copy of the counts by message and of the
// suppressed counts.
func (h *countingHandler) counts() (int, map[string]int, map[string]int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	byMsg := make(map[string]int, len(h.byMsg))
	for k, v := range h.byMsg {
		byMsg[k] = v
	}
	supp := make(map[string]int64, len(h.suppressed))
	for k, v := range h.suppressed {
		supp[k] = v
	}
	return h.lines, byMsg, supp
}

// A server that answers a tools/call with a million malformed SSE events (and as many
// responses to requests the client never sent) before the response makes the client write a
// bounded number of log lines: the first few of each kind, then one line per kind with how
// many were not written. The call still gets its result (spec 2025-11-25, Transports,
// Streamable HTTP, Sending Messages to the Server: the stream carries JSON-RPC messages; the
// client ignores what is not one).
func TestClientBoundsLogOfMalformedEvents(t *testing.T) {
	t.Parallel()
	const malformed, misrouted = 1_000_000, 100_000
	f := newFakeServer(t, &fakeServer{onPost: func(w http.ResponseWriter, r *http.Request, m *wireMessage) {
		w.Header().Set("Content-Type", "text/event-stream")
		other := fmt.Sprintf("data: %s\n\n", encodeResponse(&ID{raw: `"not-yours"`}, json.RawMessage(`{}`), nil))
		chunk := strings.Repeat("data: {\n\n", 1000) // 1,000 undecodable events
		for i := 0; i < malformed/1000; i++ {
			if _, err := w.Write([]byte(chunk)); err != nil {
				return
			}
			if i%10 == 0 {
				if _, err := w.Write([]byte(strings.Repeat(other, misrouted/(malformed/1000/10)))); err != nil {
					return
				}
			}
		}
		fmt.Fprintf(w, "data: %s\n\n", encodeResponse(m.ID, json.RawMessage(`{"content":[{"type":"text","text":"done"}]}`), nil))
	}})
	h := newCountingHandler()
	c := NewClient(f.hs.URL, WithEra(EraLegacy), WithLogger(slog.New(h)))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := c.CallTool(ctx, "flood", nil)
	require.NoError(t, err, "the call, after the flood")
	require.Len(t, res.Content, 1)
	assert.Equal(t, "done", res.Content[0].Text)
	closeClient(t, c)

	lines, byMsg, supp := h.counts()
	assert.LessOrEqualf(t, lines, 100, "the client wrote %d log lines for %d malformed events: %v", lines, malformed, byMsg)
	const bad, stray = "mcp: ignoring malformed message on the response stream", "mcp: ignoring a response to another request"
	summary := " (more lines like this were not written)"
	// Every event is accounted for: written, or counted in the summary line.
	assert.Equal(t, int64(malformed), int64(byMsg[bad])+supp[bad+summary], "malformed events written and counted")
	assert.Equal(t, int64(misrouted), int64(byMsg[stray])+supp[stray+summary], "responses to other requests written and counted")
	assert.Equal(t, logBurst, byMsg[bad], "malformed events written in full")
	assert.Equal(t, 1, byMsg[bad+summary], "summary lines of malformed events")
}

// A server that streams malformed SSE events without end on a tools/call answer makes the
// client write a bounded number of log lines, and the call ends at its timeout with a
// deadline error; the server sees the stream closed.
func TestClientBoundsLogOfEndlessMalformedEvents(t *testing.T) {
	t.Parallel()
	stopped := make(chan struct{})
	f := newFakeServer(t, &fakeServer{onPost: func(w http.ResponseWriter, r *http.Request, m *wireMessage) {
		defer close(stopped)
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := []byte(strings.Repeat("data: [\n\n", 1000))
		for {
			if _, err := w.Write(chunk); err != nil {
				return // the client closed the stream
			}
		}
	}})
	h := newCountingHandler()
	c := NewClient(f.hs.URL, WithEra(EraLegacy), WithLogger(slog.New(h)))
	defer closeClient(t, c)
	ctx := testCtx(t)
	_, err := c.CallTool(ctx, "flood", nil, WithTimeout(2*time.Second))
	require.Error(t, err, "a call whose answer never comes")
	assert.Equal(t, CodeDeadlineExceeded, CodeOf(err), "the call's end: %v", err)
	select {
	case <-stopped:
	case <-ctx.Done():
		require.FailNow(t, "the client never closed the endless stream")
	}
	lines, byMsg, supp := h.counts()
	const bad = "mcp: ignoring malformed message on the response stream"
	assert.LessOrEqualf(t, lines, 100, "the client wrote %d log lines: %v", lines, byMsg)
	assert.Equal(t, logBurst, byMsg[bad], "malformed events written in full")
	assert.Positive(t, supp[bad+" (more lines like this were not written)"], "the count of the malformed events not written")
}

// logBound writes the first logBurst lines of each message, counts the rest, and writes one
// line per message with the count when its scope ends; a level the logger does not write is
// neither written nor counted.
func TestLogBound(t *testing.T) {
	t.Parallel()
	h := newCountingHandler()
	l := slog.New(h)
	var b logBound
	ctx := context.Background()
	for i := 0; i < 1000; i++ {
		b.log(ctx, l, slog.LevelWarn, "a", "i", i)
		if i%2 == 0 {
			b.log(ctx, l, slog.LevelDebug, "b")
		}
	}
	b.log(ctx, l, slog.LevelInfo, "c")
	assert.Equal(t, "logbound_test.go", h.source("c"), "a line's source is where it was logged")
	lines, byMsg, _ := h.counts()
	assert.Equal(t, 2*logBurst+1, lines, "lines before the scope ends: %v", byMsg)
	b.flush(ctx, l)
	lines, byMsg, supp := h.counts()
	assert.Equal(t, 2*logBurst+3, lines, "lines after the scope ends: %v", byMsg)
	assert.Equal(t, int64(1000-logBurst), supp["a (more lines like this were not written)"])
	assert.Equal(t, int64(500-logBurst), supp["b (more lines like this were not written)"])
	assert.Zero(t, byMsg["c (more lines like this were not written)"], "a summary of nothing")
	b.flush(ctx, l)
	lines, _, _ = h.counts()
	assert.Equal(t, 2*logBurst+3, lines, "a second flush writes nothing")

	// A window that ends: the next line of the message is preceded by the count of the
	// lines the window left out, and starts a window of its own.
	h2 := newCountingHandler()
	l2 := slog.New(h2)
	w := logBound{burst: 2, window: 20 * time.Millisecond}
	for range 5 {
		w.log(ctx, l2, slog.LevelWarn, "d")
	}
	time.Sleep(40 * time.Millisecond) // past the window
	w.log(ctx, l2, slog.LevelWarn, "d")
	lines, byMsg, supp = h2.counts()
	assert.Equal(t, 4, lines, "two lines, the count of three, and the first of the next window: %v", byMsg)
	assert.Equal(t, int64(3), supp["d (more lines like this were not written)"])

	// A logger that does not write a level: the lines cost nothing and are not counted.
	quiet := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelError}))
	var q logBound
	for i := 0; i < 100; i++ {
		q.log(ctx, quiet, slog.LevelWarn, "a")
	}
	assert.Nil(t, q.kinds, "lines the logger does not write were counted")
}

// A client that sends the stdio server a hundred thousand unknown notifications, responses
// to requests the server never sent and messages before initialize makes it write a bounded
// number of log lines, and every message is accounted for in the counts (spec 2025-11-25,
// Transports, stdio: each line is a JSON-RPC message; the server ignores notifications it does
// not know, Basic, Lifecycle).
func TestServerBoundsLogOfPeerMessages(t *testing.T) {
	t.Parallel()
	const each = 100_000
	var in bytes.Buffer
	for i := 0; i < each; i++ { // before initialize: ignored
		in.WriteString(`{"jsonrpc":"2.0","method":"notifications/early"}` + "\n")
	}
	in.WriteString(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"flood","version":"1"}}}` + "\n")
	in.WriteString(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	for i := 0; i < each; i++ {
		fmt.Fprintf(&in, `{"jsonrpc":"2.0","method":"notifications/unknown_%d"}`+"\n", i%7)
		fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":%d,"result":{}}`+"\n", 1000+i)
	}
	in.WriteString(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n")
	h := newCountingHandler()
	srv := NewServer(Implementation{Name: "flooded", Version: "1"}, WithLogger(slog.New(h)))
	// The input stays open until the ping's answer has come: the end of a stdio server's
	// input ends its session, and with it the requests not yet answered.
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- srv.ServeStdio(context.Background(), inR, outW)
		outW.Close()
	}()
	answered := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		found := false
		for sc.Scan() {
			if !found && strings.Contains(sc.Text(), `"id":1,"result":{}`) {
				found = true
				inW.Close()
			}
		}
		answered <- found
	}()
	go func() {
		_, err := inW.Write(in.Bytes()) // returns once the server has read it all
		assert.NoError(t, err, "writing the flood")
	}()
	ctx := testCtx(t)
	select {
	case found := <-answered:
		assert.True(t, found, "the ping after the flood was not answered")
	case <-ctx.Done():
		inR.Close() // ends the write and ServeStdio's reads
		require.FailNow(t, "no end of the server's output")
	}
	select {
	case err := <-served:
		require.NoError(t, err, "ServeStdio")
	case <-ctx.Done():
		require.FailNow(t, "ServeStdio did not return")
	}
	require.NoError(t, srv.Shutdown(ctx))

	lines, byMsg, supp := h.counts()
	assert.LessOrEqualf(t, lines, 100, "the server wrote %d log lines for %d messages: %v", lines, 3*each, byMsg)
	summary := " (more lines like this were not written)"
	assert.Equal(t, "stdio.go", h.source("mcp: response to an unknown request"), "a line's source is where the server logged it")
	assert.Equal(t, "server.go", h.source("mcp: ignoring unknown notification"), "a line's source is where the server logged it")
	for _, msg := range []string{"mcp: ignoring a message before initialize", "mcp: ignoring unknown notification", "mcp: response to an unknown request"} {
		assert.Equalf(t, int64(each), int64(byMsg[msg])+supp[msg+summary], "%q lines written and counted", msg)
	}
}

// A stdio server that writes a million lines that are not JSON-RPC messages to stdout, and a
// hundred thousand to stderr, before it serves makes the client write a bounded number of log
// lines: the first few warnings and one line counting the rest; the first stderrLogBurst
// lines of its stderr and one line counting the rest. The call after the flood still gets its
// result (spec 2025-11-25, Transports, stdio: the server must not write to stdout anything
// that is not a valid MCP message; it may write anything to stderr, which the client may
// log).
func TestStdioClientBoundsLogOfFloods(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), testChildEnv+"=flood")
	h := newCountingHandler()
	c, err := NewCommandClient(cmd, WithLogger(slog.New(h)))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := c.CallTool(ctx, "echo", json.RawMessage(`{"text":"after the flood"}`))
	require.NoError(t, err, "the call after the flood")
	assert.Contains(t, res.Text(), "after the flood")
	require.NoError(t, c.Close(ctx))

	lines, byMsg, supp := h.counts()
	const junk, stderr = "mcp: the server wrote something other than a JSON-RPC message; skipped", "mcp: stdio server stderr"
	summary := " (more lines like this were not written)"
	assert.Equal(t, logBurst, byMsg[junk], "warnings of lines that are not messages written in full")
	assert.Equal(t, int64(floodLines), int64(byMsg[junk])+supp[junk+summary], "lines that are not messages, written and counted")
	assert.Equal(t, stderrLogBurst, byMsg[stderr], "stderr lines written in full")
	assert.GreaterOrEqual(t, int64(byMsg[stderr])+supp[stderr+summary], int64(floodLines/10), "stderr lines, written and counted")
	assert.LessOrEqualf(t, lines, stderrLogBurst+100, "the client wrote %d log lines: %v", lines, byMsg)
}
