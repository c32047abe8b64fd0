package otelmcp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	weatherv1 "github.com/protomcp/protomcp/gen/weather/v1"
	"github.com/protomcp/protomcp/gen/weather/v1/weatherv1mcp"
	"github.com/protomcp/protomcp/runtime"
)

// printedSpan is the part of a span that the console exporter (stdouttrace) prints, one JSON
// object per span.
type printedSpan struct {
	Name        string
	SpanKind    int
	SpanContext struct{ TraceID, SpanID string }
	Parent      struct {
		TraceID, SpanID string
		Remote          bool
	}
	Attributes []struct {
		Key   string
		Value struct{ Value any }
	}
	Links []struct {
		SpanContext struct{ TraceID, SpanID string }
	}
}

func (s printedSpan) attr(key string) string {
	for _, a := range s.Attributes {
		if a.Key == key {
			v, _ := a.Value.Value.(string)
			return v
		}
	}
	return ""
}

// urlWriter collects a process's stderr and reports the URL of its "serving MCP" log line.
type urlWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	url  chan string
	sent bool
}

var servingURL = regexp.MustCompile(`msg="serving MCP" url=(\S+)`)

func (w *urlWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if m := servingURL.FindSubmatch(w.buf.Bytes()); m != nil && !w.sent {
		w.sent = true
		w.url <- string(m[1])
	}
	return len(p), nil
}

func (w *urlWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// The weather-server example, built and run with OTEL_TRACES_EXPORTER=console, prints a
// SERVER span "tools/call get_forecast" with mcp.method.name when the generated client calls
// get_forecast: its parent is the client's span (through _meta, across processes) and its
// link the otelhttp server span.
func TestExampleServerConsoleExporter(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "weather-server")
	// The examples are a module of their own, so that the exporters they use stay out of
	// this module's requirements.
	build := exec.Command("go", "build", "-o", bin, "./weather-server")
	build.Dir = "examples"
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./weather-server in examples/: %v\n%s", err, out)
	}

	var stdout bytes.Buffer
	stderr := &urlWriter{url: make(chan string, 1)}
	cmd := exec.Command(bin, "-addr", "127.0.0.1:0")
	cmd.Env = append(os.Environ(),
		"OTEL_TRACES_EXPORTER=console", "OTEL_METRICS_EXPORTER=none", "OTEL_LOGS_EXPORTER=none",
		"OTEL_SERVICE_NAME=weather-server-test")
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		if err := cmd.Process.Signal(os.Interrupt); err != nil && !errors.Is(err, os.ErrProcessDone) {
			t.Errorf("interrupt: %v", err)
		}
		return <-exited
	}
	t.Cleanup(func() { _ = stop() })

	var url string
	select {
	case url = <-stderr.url:
	case err := <-exited:
		stopped = true
		t.Fatalf("the server exited before serving: %v\n%s", err, stderr)
	}

	tel := newTelemetry(t)
	// The session era: the printed span's mcp.session.id is checked below.
	c := runtime.NewClient(url, runtime.WithEra(runtime.EraLegacy), runtime.WithInterceptors(tel.interceptor(t)))
	ctx := testContext(t)
	fc, err := weatherv1mcp.NewWeatherServiceClient(c).GetForecast(ctx, &weatherv1.GetForecastRequest{
		Location: &weatherv1.GetForecastRequest_City{City: "Tokyo"},
	})
	if err != nil {
		t.Fatalf("get_forecast: %v", err)
	}
	if fc.GetPlace().GetName() != "Tokyo, JP" {
		t.Errorf("forecast for %q, want Tokyo, JP", fc.GetPlace().GetName())
	}
	if err := c.Close(context.WithoutCancel(ctx)); err != nil {
		t.Errorf("client close: %v", err)
	}
	clientSpan := span(t, tel.spans.Ended(), "tools/call get_forecast", trace.SpanKindClient)

	// Shutting down flushes the batched spans to stdout.
	if err := stop(); err != nil {
		t.Fatalf("server exit: %v\n%s", err, stderr)
	}
	checkPrinted(t, stdout.String(), clientSpan)
}

// checkPrinted finds the server's tools/call get_forecast span in the console exporter's
// output and checks it against the client's span.
func checkPrinted(t *testing.T, out string, client sdktrace.ReadOnlySpan) {
	t.Helper()
	var found []printedSpan
	var names []string
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var s printedSpan
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("console output line %q: %v", sc.Text(), err)
		}
		names = append(names, s.Name)
		if s.Name == "tools/call get_forecast" {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d printed spans named tools/call get_forecast, want 1; printed: %q", len(found), names)
	}
	s := found[0]
	if s.SpanKind != int(trace.SpanKindServer) {
		t.Errorf("span kind %d, want %d (server)", s.SpanKind, trace.SpanKindServer)
	}
	for key, want := range map[string]string{
		"mcp.method.name":       "tools/call",
		"gen_ai.tool.name":      "get_forecast",
		"gen_ai.operation.name": "execute_tool",
		"mcp.protocol.version":  runtime.LatestProtocolVersion,
	} {
		if got := s.attr(key); got != want {
			t.Errorf("printed span: %s = %q, want %q", key, got, want)
		}
	}
	if s.attr("mcp.session.id") == "" {
		t.Errorf("printed span has no mcp.session.id")
	}
	if s.Parent.TraceID != client.SpanContext().TraceID().String() || s.Parent.SpanID != client.SpanContext().SpanID().String() || !s.Parent.Remote {
		t.Errorf("printed span's parent %+v, want the client's span %v/%v (remote)", s.Parent,
			client.SpanContext().TraceID(), client.SpanContext().SpanID())
	}
	if len(s.Links) != 1 || s.Links[0].SpanContext.SpanID == "" || s.Links[0].SpanContext.SpanID == s.Parent.SpanID {
		t.Errorf("printed span's links %+v, want one to the HTTP server span", s.Links)
	}
}
