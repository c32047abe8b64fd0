package runtime_test

// Benchmarks of the per-call path, each side isolated from the network:
//
//   - BenchmarkServer* call Server.ServeHTTP directly with a reusable request and a reusable
//     response writer, so that the figures are the server's own cost per tools/call (JSON-RPC
//     decoding, session lookup, the protojson glue, the handler goroutine, JSON or SSE writing).
//   - BenchmarkClient* run a typed runtime.CallTypedTool against an http.RoundTripper that answers
//     from memory, so that the figures are the client's own cost per call.
//   - BenchmarkClientEchoLoopback and BenchmarkNetHTTPEchoLoopback make the same call over a
//     real loopback connection, with the client and with bare net/http: the difference is
//     what the client costs beyond net/http.
//
// go test -run '^$' -bench . -benchmem ./runtime/ ; add -cpuprofile/-memprofile to profile.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"github.com/stretchr/testify/require"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
	weatherv1 "github.com/protomcp/protomcp/gen/weather/v1"
	"github.com/protomcp/protomcp/runtime"
)

const benchText = "the quick brown fox jumps over the lazy dog"

// benchWriter is a reusable http.ResponseWriter (and http.Flusher) that keeps the body, so
// that the harness allocates nothing per call.
type benchWriter struct {
	h    http.Header
	body bytes.Buffer
	code int
}

func (w *benchWriter) Header() http.Header         { return w.h }
func (w *benchWriter) Write(p []byte) (int, error) { return w.body.Write(p) }
func (w *benchWriter) WriteHeader(code int)        { w.code = code }
func (w *benchWriter) Flush()                      {}

// Hijack makes the writer one that net/http's HTTP/1.x responses are (an http.Hijacker), so
// that the server runs handlers inline as it does for them; taking it fails, as it would for
// a server that must then end the response when the handler returns.
func (w *benchWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return nil, nil, http.ErrNotSupported
}
func (w *benchWriter) reset() {
	clear(w.h)
	w.body.Reset()
	w.code = 0
}

// benchBody is a reusable request body.
type benchBody struct{ bytes.Reader }

func (*benchBody) Close() error { return nil }

// benchServer is a server with one initialized session and a POST request template for it.
type benchServer struct {
	s    *runtime.Server
	req  *http.Request
	body benchBody
	w    benchWriter
}

func newBenchServer(tb testing.TB, opts ...runtime.ServerOption) *benchServer {
	tb.Helper()
	s := runtime.NewServer(runtime.Implementation{Name: "bench", Version: "1"}, opts...)
	runtime.AddTypedTool(s, runtime.ToolSpec{Name: "echo", InputSchema: `{"type":"object"}`, OutputSchema: `{"type":"object"}`},
		func(_ context.Context, in *mcpv1.TextContent) (*mcpv1.TextContent, error) {
			return &mcpv1.TextContent{Text: in.GetText()}, nil
		})
	runtime.AddTypedTool(s, runtime.ToolSpec{Name: "items", InputSchema: `{"type":"object"}`, OutputSchema: `{"type":"object"}`},
		func(_ context.Context, in *weatherv1.ListAlertsRequest) (*weatherv1.ListAlertsResponse, error) {
			n := len(in.GetRegions())
			if n == 1 {
				n, _ = strconv.Atoi(in.GetRegions()[0])
			}
			out := &weatherv1.ListAlertsResponse{Alerts: make([]*weatherv1.Alert, n)}
			for i := range out.Alerts {
				id := strconv.Itoa(i + 1)
				out.Alerts[i] = &weatherv1.Alert{Id: id, Region: "FR", Severity: weatherv1.Severity_SEVERITY_MODERATE, Headline: "item " + id}
			}
			return out, nil
		})
	tb.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	b := &benchServer{s: s, w: benchWriter{h: make(http.Header)}}
	b.req, _ = http.NewRequest(http.MethodPost, "http://127.0.0.1:8080/mcp", &b.body)
	b.req.Host = "127.0.0.1:8080"
	b.req.Header.Set("Content-Type", "application/json")
	b.req.Header.Set("Accept", "application/json, text/event-stream")
	b.post(tb, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
	b.req.Header.Set("Mcp-Session-Id", b.w.h.Get("Mcp-Session-Id"))
	b.req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	b.post(tb, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return b
}

// post sends one message and returns the answer's body (valid until the next post).
func (b *benchServer) post(tb testing.TB, msg string) []byte {
	b.w.reset()
	b.body.Reset([]byte(msg))
	b.req.ContentLength = int64(len(msg)) // as an HTTP client sends it
	b.s.ServeHTTP(&b.w, b.req)
	if b.w.code >= 300 || b.w.code == 0 && b.w.body.Len() == 0 {
		tb.Fatalf("POST %s: status %d: %s", msg, b.w.code, b.w.body.Bytes())
	}
	return b.w.body.Bytes()
}

// benchmarkServer measures one tools/call; call is the message after its id (request IDs are
// not reused within a session, so each call gets its own).
func benchmarkServer(b *testing.B, call, want string, opts ...runtime.ServerOption) {
	benchmarkServerOn(b, newBenchServer(b, opts...), call, want)
}

// benchmarkServerOn is benchmarkServer on a server made by the caller.
func benchmarkServerOn(b *testing.B, s *benchServer, call, want string) {
	var msg []byte
	id := 1
	next := func() []byte {
		id++
		msg = append(msg[:0], `{"jsonrpc":"2.0","id":`...)
		msg = strconv.AppendInt(msg, int64(id), 10)
		msg = append(msg, ',')
		msg = append(msg, call...)
		return msg
	}
	check := func(got []byte) {
		if s.w.code >= 300 || !bytes.Contains(got, []byte(want)) || bytes.Contains(got, []byte(`"isError":true`)) {
			b.Fatalf("unexpected answer: status %d: %.300s", s.w.code, got)
		}
	}
	check(s.post(b, string(next())))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		m := next()
		s.w.reset()
		s.body.Reset(m)
		s.req.Body = &s.body
		s.req.ContentLength = int64(len(m))
		s.s.ServeHTTP(&s.w, s.req)
	}
	b.StopTimer()
	check(s.w.body.Bytes())
	b.ReportMetric(float64(s.w.body.Len()), "resp-bytes")
}

const (
	echoCall  = `"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + benchText + `"}}}`
	itemsCall = `"method":"tools/call","params":{"name":"items","arguments":{"regions":["500"]}}}`
)

// BenchmarkServerEcho is the server's cost of one small tools/call answered with JSON.
func BenchmarkServerEcho(b *testing.B) {
	benchmarkServer(b, echoCall, `"structuredContent":{"text":"`+benchText+`"}`)
}

// BenchmarkServerEchoModern is the same call in MCP 2026-07-28, as a default client sends it:
// no session, the request metadata in _meta and the version, method and name in headers.
func BenchmarkServerEchoModern(b *testing.B) {
	s := newBenchServer(b)
	s.req.Header.Del("Mcp-Session-Id")
	s.req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	s.req.Header.Set("Mcp-Method", "tools/call")
	s.req.Header.Set("Mcp-Name", "echo")
	benchmarkServerOn(b, s, modernEchoCall, `"structuredContent":{"text":"`+benchText+`"}`)
}

// modernEchoCall is echoCall in MCP 2026-07-28, its request metadata in _meta.
const modernEchoCall = `"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + benchText + `"},` +
	`"_meta":{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`

// noopInterceptor observes nothing and passes every request on: the cost of the interceptor
// machinery itself.
var noopInterceptor = runtime.InterceptorFunc(func(next runtime.CallFunc) runtime.CallFunc {
	return func(ctx context.Context, req *runtime.Request) (*runtime.Response, error) {
		return next(ctx, req)
	}
})

// BenchmarkServerEchoInterceptor is BenchmarkServerEcho with one no-op server interceptor.
func BenchmarkServerEchoInterceptor(b *testing.B) {
	benchmarkServer(b, echoCall, `"structuredContent":{"text":"`+benchText+`"}`, runtime.WithInterceptors(noopInterceptor))
}

// BenchmarkServerEchoSSE is the same call answered with an SSE stream.
func BenchmarkServerEchoSSE(b *testing.B) {
	benchmarkServer(b, echoCall, `"structuredContent":{"text":"`+benchText+`"}`, runtime.WithSSEResponses())
}

// BenchmarkServerItems500 is the server's cost of a result of 500 items, answered with JSON.
func BenchmarkServerItems500(b *testing.B) {
	benchmarkServer(b, itemsCall, `"headline":"item 500"`)
}

// BenchmarkServerItems500SSE is the same call answered with an SSE stream.
func BenchmarkServerItems500SSE(b *testing.B) {
	benchmarkServer(b, itemsCall, `"headline":"item 500"`, runtime.WithSSEResponses())
}

// memTransport answers MCP requests from memory: initialize, 202 for notifications, and a
// canned tools/call result carrying the request's id, as JSON or as SSE.
type memTransport struct {
	result string // the JSON of the tools/call result
	sse    bool
	modern bool // answers server/discover as a 2026-07-28 server
}

func (t *memTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp := &http.Response{StatusCode: http.StatusOK, Header: make(http.Header), Request: req, ProtoMajor: 1, ProtoMinor: 1}
	if req.Body == nil { // DELETE
		resp.Body = http.NoBody
		return resp, nil
	}
	in, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	id := requestID(in)
	var body string
	switch {
	case id == "":
		resp.StatusCode = http.StatusAccepted
		resp.Body = http.NoBody
		return resp, nil
	case t.modern && bytes.Contains(in, []byte(`"method":"server/discover"`)):
		body = `{"jsonrpc":"2.0","id":` + id + `,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mem","version":"1"}}}}`
	case bytes.Contains(in, []byte(`"method":"initialize"`)):
		resp.Header.Set("Mcp-Session-Id", "0123456789abcdef0123456789abcdef")
		body = `{"jsonrpc":"2.0","id":` + id + `,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"mem","version":"1"}}}`
	default:
		body = `{"jsonrpc":"2.0","id":` + id + `,"result":` + t.result + `}`
	}
	if t.sse {
		resp.Header.Set("Content-Type", "text/event-stream")
		body = "id: 1_0\nretry: 1000\ndata: \n\nevent: message\nid: 1_1\ndata: " + body + "\n\n"
	} else {
		resp.Header.Set("Content-Type", "application/json")
	}
	resp.ContentLength = int64(len(body))
	resp.Body = io.NopCloser(strings.NewReader(body))
	return resp, nil
}

// requestID finds the id of a JSON-RPC message written by the client ("" for none).
func requestID(msg []byte) string {
	i := bytes.Index(msg, []byte(`"id":`))
	if i < 0 {
		return ""
	}
	rest := msg[i+5:]
	j := bytes.IndexAny(rest, ",}")
	return string(rest[:j])
}

func benchmarkClient[Res any, PRes interface {
	*Res
	proto.Message
}](b *testing.B, tool string, req proto.Message, result PRes, sse bool, opts ...runtime.ClientOption) {
	benchmarkClientOn[Res, PRes](b, tool, req, result, &memTransport{sse: sse}, opts...)
}

// benchmarkClientOn is benchmarkClient over tr, whose result it sets.
func benchmarkClientOn[Res any, PRes interface {
	*Res
	proto.Message
}](b *testing.B, tool string, req proto.Message, result PRes, tr *memTransport, opts ...runtime.ClientOption) {
	sc, err := protojson.Marshal(result)
	require.NoError(b, err)
	text, _ := json.Marshal(string(sc))
	res := `{"content":[{"type":"text","text":` + string(text) + `}],"structuredContent":` + string(sc) + `}`
	if tr.modern {
		res = `{"resultType":"complete",` + res[1:]
	}
	tr.result = res
	c := runtime.NewClient("http://mem/mcp", append([]runtime.ClientOption{runtime.WithHTTPClient(&http.Client{Transport: tr})}, opts...)...)
	ctx := context.Background()
	require.NoError(b, c.Connect(ctx))
	b.Cleanup(func() { _ = c.Close(ctx) })
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := runtime.CallTypedTool[Res, PRes](ctx, c, tool, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkClientEcho is the client's cost of one small typed call answered with JSON
// (including the in-memory transport's own few allocations).
func BenchmarkClientEcho(b *testing.B) {
	benchmarkClient[mcpv1.TextContent](b, "echo", &mcpv1.TextContent{Text: benchText}, &mcpv1.TextContent{Text: benchText}, false)
}

// BenchmarkClientEchoModern is the same call in MCP 2026-07-28 (the request metadata in every
// request's _meta, the version, method and name in headers).
func BenchmarkClientEchoModern(b *testing.B) {
	benchmarkClientOn[mcpv1.TextContent](b, "echo", &mcpv1.TextContent{Text: benchText}, &mcpv1.TextContent{Text: benchText}, &memTransport{modern: true}, runtime.WithEra(runtime.EraModern))
}

// BenchmarkClientEchoInterceptor is BenchmarkClientEcho with one no-op client interceptor.
func BenchmarkClientEchoInterceptor(b *testing.B) {
	benchmarkClient[mcpv1.TextContent](b, "echo", &mcpv1.TextContent{Text: benchText}, &mcpv1.TextContent{Text: benchText}, false, runtime.WithInterceptors(noopInterceptor))
}

// BenchmarkClientEchoSSE is the same call answered with an SSE stream.
func BenchmarkClientEchoSSE(b *testing.B) {
	benchmarkClient[mcpv1.TextContent](b, "echo", &mcpv1.TextContent{Text: benchText}, &mcpv1.TextContent{Text: benchText}, true)
}

// BenchmarkClientItems500 is the client's cost of decoding a result of 500 items.
func BenchmarkClientItems500(b *testing.B) {
	out := &weatherv1.ListAlertsResponse{}
	for i := range 500 {
		id := strconv.Itoa(i + 1)
		out.Alerts = append(out.Alerts, &weatherv1.Alert{Id: id, Region: "FR", Severity: weatherv1.Severity_SEVERITY_MODERATE, Headline: "item " + id})
	}
	benchmarkClient[weatherv1.ListAlertsResponse](b, "items", &weatherv1.ListAlertsRequest{Regions: []string{"500"}}, out, false)
}

// BenchmarkServerEchoParallel runs the echo call from GOMAXPROCS goroutines at once on one
// session, the shape of many concurrent callers: with -mutexprofile it shows the contention on
// the session's and the server's locks.
func BenchmarkServerEchoParallel(b *testing.B) {
	s := newBenchServer(b)
	var ids atomic.Int64
	ids.Store(1 << 20)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		w := benchWriter{h: make(http.Header)}
		var body benchBody
		req := s.req.Clone(context.Background())
		var msg []byte
		for pb.Next() {
			msg = append(msg[:0], `{"jsonrpc":"2.0","id":`...)
			msg = strconv.AppendInt(msg, ids.Add(1), 10)
			msg = append(msg, ',')
			msg = append(msg, echoCall...)
			w.reset()
			body.Reset(msg)
			req.Body = &body
			req.ContentLength = int64(len(msg))
			s.s.ServeHTTP(&w, req)
			if w.code != http.StatusOK {
				b.Fatalf("status %d: %s", w.code, w.body.Bytes())
			}
		}
	})
}

// BenchmarkStdioServerEcho is the stdio server's cost of one small tools/call, driven by a
// minimal newline-JSON-RPC client over in-process pipes: BenchmarkServerEcho's call, on the
// message core without HTTP. (The client writes a prepared line and reads one.)
func BenchmarkStdioServerEcho(b *testing.B) {
	s := newBenchServer(b).s
	c2sR, c2sW := io.Pipe()
	s2cR, s2cW := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.ServeStdio(context.Background(), c2sR, s2cW)
		s2cW.Close()
	}()
	out := bufio.NewReaderSize(s2cR, 64<<10)
	var msg []byte
	call := func(line []byte) []byte {
		if _, err := c2sW.Write(line); err != nil {
			b.Fatal(err)
		}
		got, err := out.ReadSlice('\n')
		if err != nil {
			b.Fatal(err)
		}
		return got
	}
	call([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}` + "\n"))
	if _, err := io.WriteString(c2sW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		b.Fatal(err)
	}
	want := []byte(`"structuredContent":{"text":"` + benchText + `"}`)
	id := 1
	next := func() []byte {
		id++
		msg = append(msg[:0], `{"jsonrpc":"2.0","id":`...)
		msg = strconv.AppendInt(msg, int64(id), 10)
		msg = append(msg, ',')
		msg = append(msg, echoCall...)
		msg = append(msg, '\n')
		return msg
	}
	if got := call(next()); !bytes.Contains(got, want) {
		b.Fatalf("unexpected answer: %.300s", got)
	}
	b.ReportAllocs()
	b.ResetTimer()
	var got []byte
	for b.Loop() {
		got = call(next())
	}
	b.StopTimer()
	if !bytes.Contains(got, want) {
		b.Fatalf("unexpected answer: %.300s", got)
	}
	c2sW.Close()
	<-done
	s2cR.Close()
}

// BenchmarkStdioEcho is one small typed call from a stdio client to a stdio server over
// in-process pipes: both sides' whole cost, without a process boundary.
func BenchmarkStdioEcho(b *testing.B) {
	s := runtime.NewServer(runtime.Implementation{Name: "bench", Version: "1"})
	runtime.AddTypedTool(s, runtime.ToolSpec{Name: "echo"}, func(_ context.Context, in *mcpv1.TextContent) (*mcpv1.TextContent, error) {
		return &mcpv1.TextContent{Text: in.GetText()}, nil
	})
	c2sR, c2sW := io.Pipe()
	s2cR, s2cW := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.ServeStdio(context.Background(), c2sR, s2cW)
		s2cW.Close()
	}()
	c := runtime.NewStdioClient(s2cR, c2sW)
	ctx := context.Background()
	req := &mcpv1.TextContent{Text: benchText}
	if _, err := runtime.CallTypedTool[mcpv1.TextContent](ctx, c, "echo", req); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := runtime.CallTypedTool[mcpv1.TextContent](ctx, c, "echo", req); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	_ = c.Close(ctx)
	<-done
	_ = s.Shutdown(ctx)
}

// cannedHandler serves t's canned answers over HTTP: the server of the loopback benchmarks,
// whose cost per call is the same whichever client calls it.
type cannedHandler struct{ t *memTransport }

func (h cannedHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	resp, err := h.t.RoundTrip(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// newLoopbackEcho starts an HTTP server on loopback that answers echo calls from memory and
// returns its endpoint and the tools/call result it sends.
func newLoopbackEcho(b testing.TB) string {
	sc := `{"text":"` + benchText + `"}`
	text, _ := json.Marshal(sc)
	res := `{"content":[{"type":"text","text":` + string(text) + `}],"structuredContent":` + sc + `}`
	hs := httptest.NewServer(cannedHandler{&memTransport{result: res}})
	b.Cleanup(hs.Close)
	return hs.URL + "/mcp"
}

// BenchmarkClientEchoLoopback is BenchmarkClientEcho over a real HTTP connection on loopback
// (net/http's transport, with its goroutines and syscalls), to a server that answers from
// memory. BenchmarkNetHTTPEchoLoopback is the same exchange made by a bare net/http client
// (a prepared body, the answer read to its end and not decoded): the difference between the
// two is what the client costs beyond net/http.
func BenchmarkClientEchoLoopback(b *testing.B) {
	c := runtime.NewClient(newLoopbackEcho(b))
	ctx := context.Background()
	require.NoError(b, c.Connect(ctx))
	b.Cleanup(func() { _ = c.Close(ctx) })
	in := &mcpv1.TextContent{Text: benchText}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := runtime.CallTypedTool[mcpv1.TextContent](ctx, c, "echo", in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNetHTTPEchoLoopback: see BenchmarkClientEchoLoopback.
func BenchmarkNetHTTPEchoLoopback(b *testing.B) {
	call := bareEchoCall(newLoopbackEcho(b))
	b.ReportAllocs()
	for b.Loop() {
		if err := call(); err != nil {
			b.Fatal(err)
		}
	}
}

// bareEchoCall returns a function that makes BenchmarkNetHTTPEchoLoopback's call to url.
func bareEchoCall(url string) func() error {
	hc := &http.Client{Transport: runtime.DefaultTransport()}
	body := []byte(`{"jsonrpc":"2.0","id":7,` + echoCall)
	ctx := context.Background()
	return func() error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header["Content-Type"] = []string{"application/json"}
		req.Header["Accept"] = []string{"application/json, text/event-stream"}
		req.Header["Mcp-Session-Id"] = []string{"0123456789abcdef0123456789abcdef"}
		req.Header["Mcp-Protocol-Version"] = []string{"2025-11-25"}
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err == nil && resp.StatusCode != http.StatusOK {
			err = errors.New(resp.Status)
		}
		return err
	}
}
