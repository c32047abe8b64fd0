package servers

// Handler-level benchmarks: each SDK's http.Handler called directly through ServeHTTP with a
// reusable request and response writer, after an initialize, so that the figures are each
// server's own cost per tools/call, comparable across SDKs (no network, no client).
//
//	go test -run '^$' -bench . -benchmem ./internal/servers/

import (
	"bufio"
	"bytes"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

const text = "the quick brown fox jumps over the lazy dog"

type writer struct {
	h    http.Header
	body bytes.Buffer
	code int
}

func (w *writer) Header() http.Header         { return w.h }
func (w *writer) Write(p []byte) (int, error) { return w.body.Write(p) }
func (w *writer) WriteHeader(code int)        { w.code = code }
func (w *writer) Flush()                      {}

// Hijack makes the writer an http.Hijacker, as net/http's HTTP/1.x responses are, so that
// protomcp runs handlers on the request's goroutine as it does behind a real server; taking
// the connection fails (no handler here closes its stream early).
func (w *writer) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return nil, nil, http.ErrNotSupported
}
func (w *writer) reset() {
	clear(w.h)
	w.body.Reset()
	w.code = 0
}

type body struct{ bytes.Reader }

func (*body) Close() error { return nil }

type session struct {
	h    http.Handler
	req  *http.Request
	body body
	w    writer
}

func (s *session) post(tb testing.TB, msg string) []byte {
	s.w.reset()
	s.body.Reset([]byte(msg))
	s.req.ContentLength = int64(len(msg))
	s.req.Body = &s.body // some handlers replace the body they read
	s.h.ServeHTTP(&s.w, s.req)
	if s.w.code >= 300 {
		tb.Fatalf("POST %.100s: status %d: %.300s", msg, s.w.code, s.w.body.Bytes())
	}
	return s.w.body.Bytes()
}

func newSession(tb testing.TB, h http.Handler) *session {
	s := &session{h: h, w: writer{h: make(http.Header)}}
	s.req, _ = http.NewRequest(http.MethodPost, "http://127.0.0.1:8080/mcp", &s.body)
	s.req.Host = "127.0.0.1:8080"
	s.req.Header.Set("Content-Type", "application/json")
	s.req.Header.Set("Accept", "application/json, text/event-stream")
	s.post(tb, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
	if id := s.w.h.Get("Mcp-Session-Id"); id != "" {
		s.req.Header.Set("Mcp-Session-Id", id)
	}
	s.req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	s.post(tb, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return s
}

var handlers = []struct {
	name string
	mk   func() http.Handler
}{
	{"protomcp", func() http.Handler { return Protomcp(false) }},
	{"protomcp-sse", func() http.Handler { return Protomcp(true) }},
	{"gosdk", func() http.Handler { return GoSDK(false, false) }},
	{"gosdk-json", func() http.Handler { return GoSDK(true, false) }},
	{"mcpgo", MCPGo},
	{"floor", Floor},
}

var calls = []struct {
	name, msg, want string
}{
	{"echo", `"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + text + `"}}}`, `"text":"` + text + `"`},
	{"items500", `"method":"tools/call","params":{"name":"items","arguments":{"n":500}}}`, `"name":"item-500"`},
}

// BenchmarkHandler/<call>/<server> is one tools/call through a server's ServeHTTP.
func BenchmarkHandler(b *testing.B) {
	for _, c := range calls {
		b.Run(c.name, func(b *testing.B) {
			for _, h := range handlers {
				if h.name == "floor" && c.name != "echo" {
					continue
				}
				b.Run(h.name, func(b *testing.B) {
					s := newSession(b, h.mk())
					// Request IDs must not be reused within a session: each call has its own.
					var msg []byte
					id := 1
					next := func() []byte {
						id++
						msg = append(msg[:0], `{"jsonrpc":"2.0","id":`...)
						msg = strconv.AppendInt(msg, int64(id), 10)
						return append(msg, ',')
					}
					got := s.post(b, string(next())+c.msg)
					if !strings.Contains(string(got), c.want) || strings.Contains(string(got), `"isError":true`) {
						b.Fatalf("unexpected answer: %.300s", got)
					}
					b.ReportAllocs()
					b.ResetTimer()
					for b.Loop() {
						m := append(next(), c.msg...)
						msg = m
						s.w.reset()
						s.body.Reset(m)
						s.req.ContentLength = int64(len(m))
						s.req.Body = &s.body
						s.h.ServeHTTP(&s.w, s.req)
					}
					b.StopTimer()
					if s.w.code >= 300 || !strings.Contains(s.w.body.String(), c.want) {
						b.Fatalf("unexpected last answer: status %d: %.300s", s.w.code, s.w.body.Bytes())
					}
					b.ReportMetric(float64(s.w.body.Len()), "resp-bytes")
				})
			}
		})
	}
}
