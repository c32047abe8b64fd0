package otelmcp_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/protomcp/protomcp/examples/weather"
	weatherv1 "github.com/protomcp/protomcp/gen/weather/v1"
	"github.com/protomcp/protomcp/gen/weather/v1/weatherv1mcp"
	"github.com/protomcp/protomcp/otelmcp"
	"github.com/protomcp/protomcp/runtime"
)

// TestMain fails the package's tests if a goroutine outlives them: every test closes its
// clients, servers and providers in its cleanup.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var propagators = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// telemetry is an in-memory OpenTelemetry SDK: the spans ended and the metrics recorded.
type telemetry struct {
	spans  *tracetest.SpanRecorder
	reader *sdkmetric.ManualReader
	tp     *sdktrace.TracerProvider
	mp     *sdkmetric.MeterProvider
}

func newTelemetry(t *testing.T) *telemetry {
	t.Helper()
	tel := &telemetry{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	tel.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tel.spans))
	tel.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(tel.reader))
	t.Cleanup(func() {
		ctx := context.Background()
		if err := tel.tp.Shutdown(ctx); err != nil {
			t.Errorf("tracer provider shutdown: %v", err)
		}
		if err := tel.mp.Shutdown(ctx); err != nil {
			t.Errorf("meter provider shutdown: %v", err)
		}
	})
	return tel
}

// interceptor returns an otelmcp.Interceptor that records into tel.
func (tel *telemetry) interceptor(t *testing.T, opts ...otelmcp.Option) *otelmcp.Interceptor {
	t.Helper()
	opts = append([]otelmcp.Option{
		otelmcp.WithTracerProvider(tel.tp),
		otelmcp.WithMeterProvider(tel.mp),
		otelmcp.WithPropagators(propagators),
	}, opts...)
	ic, err := otelmcp.NewInterceptor(opts...)
	if err != nil {
		t.Fatalf("NewInterceptor: %v", err)
	}
	return ic
}

// newServer returns the weather example's server, plus one resource and one prompt, with the
// given server options.
func newServer(t *testing.T, opts ...runtime.ServerOption) *runtime.Server {
	t.Helper()
	srv := runtime.NewServer(runtime.Implementation{Name: "weather-otel-test", Version: "0"}, opts...)
	weatherv1mcp.RegisterWeatherServiceHandler(srv, &weather.Service{})
	srv.AddResource(runtime.Resource{URI: stationsURI, Name: "stations", MIMEType: "text/plain"},
		func(_ context.Context, uri string) (*runtime.ReadResourceResult, error) {
			text := "Paris, Berlin, Tokyo"
			return &runtime.ReadResourceResult{Contents: []runtime.ResourceContents{{URI: uri, Text: &text}}}, nil
		})
	srv.AddPrompt(runtime.Prompt{Name: "forecast_summary", Arguments: []runtime.PromptArgument{{Name: "city"}}},
		func(_ context.Context, args map[string]string) (*runtime.GetPromptResult, error) {
			return &runtime.GetPromptResult{Messages: []runtime.PromptMessage{
				{Role: "user", Content: runtime.TextContent("Summarize the forecast for " + args["city"])},
			}}, nil
		})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("server shutdown: %v", err)
		}
	})
	return srv
}

const stationsURI = "weather://stations"

// serve serves h on loopback and returns its URL.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return hs.URL
}

// newClient returns a client of url, closed when the test ends. It speaks the session era,
// whose attributes (mcp.session.id, initialize) these tests check, unless a test asks for
// another.
func newClient(t *testing.T, url string, opts ...runtime.ClientOption) *runtime.Client {
	t.Helper()
	c := runtime.NewClient(url, append([]runtime.ClientOption{runtime.WithEra(runtime.EraLegacy)}, opts...)...)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := c.Close(ctx); err != nil {
			t.Errorf("client close: %v", err)
		}
	})
	return c
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// span returns the one ended span of that name and kind.
func span(t *testing.T, spans []sdktrace.ReadOnlySpan, name string, kind trace.SpanKind) sdktrace.ReadOnlySpan {
	t.Helper()
	var found []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == name && s.SpanKind() == kind {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		var names []string
		for _, s := range spans {
			names = append(names, s.SpanKind().String()+" "+s.Name())
		}
		t.Fatalf("%d %s spans named %q, want 1; spans: %q", len(found), kind, name, names)
	}
	return found[0]
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]string {
	m := make(map[attribute.Key]string)
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value.Emit()
	}
	return m
}

// checkAttrs checks that s has every attribute of want (a value of "*" means any non-empty
// value) and none of absent.
func checkAttrs(t *testing.T, s sdktrace.ReadOnlySpan, want map[attribute.Key]string, absent ...attribute.Key) {
	t.Helper()
	got := attrs(s)
	for k, v := range want {
		g, ok := got[k]
		switch {
		case !ok:
			t.Errorf("%s %q: no %s attribute; have %v", s.SpanKind(), s.Name(), k, got)
		case v == "*" && g == "":
			t.Errorf("%s %q: %s is empty", s.SpanKind(), s.Name(), k)
		case v != "*" && g != v:
			t.Errorf("%s %q: %s = %q, want %q", s.SpanKind(), s.Name(), k, g, v)
		}
	}
	for _, k := range absent {
		if g, ok := got[k]; ok {
			t.Errorf("%s %q: unexpected %s = %q", s.SpanKind(), s.Name(), k, g)
		}
	}
}

// checkPair checks that the server span is the client span's child through _meta, and that
// both sides agree on the session, the protocol version and the request ID.
func checkPair(t *testing.T, client, server sdktrace.ReadOnlySpan) {
	t.Helper()
	if server.Parent().TraceID() != client.SpanContext().TraceID() || server.Parent().SpanID() != client.SpanContext().SpanID() {
		t.Errorf("%q: server span's parent is %v/%v, want the client span %v/%v", server.Name(),
			server.Parent().TraceID(), server.Parent().SpanID(), client.SpanContext().TraceID(), client.SpanContext().SpanID())
	}
	if !server.Parent().IsRemote() {
		t.Errorf("%q: server span's parent is not remote", server.Name())
	}
	ca, sa := attrs(client), attrs(server)
	for _, k := range []attribute.Key{"mcp.session.id", "mcp.protocol.version", "jsonrpc.request.id"} {
		if ca[k] == "" || ca[k] != sa[k] {
			t.Errorf("%q: %s is %q on the client, %q on the server; want the same, non-empty", server.Name(), k, ca[k], sa[k])
		}
	}
}

// Spans of both sides for a typed tool call, a tool error, a JSON-RPC error, a resource and a
// prompt: names, kinds, attributes, status, parent/child through _meta; then the duration
// metrics' attributes.
func TestSpansAndMetrics(t *testing.T) {
	tel := newTelemetry(t)
	ic := tel.interceptor(t)
	url := serve(t, newServer(t, runtime.WithInterceptors(ic)))
	c := newClient(t, url, runtime.WithInterceptors(ic))
	client := weatherv1mcp.NewWeatherServiceClient(c)
	ctx := testContext(t)

	days := int32(2)
	if _, err := client.GetForecast(ctx, &weatherv1.GetForecastRequest{
		Location: &weatherv1.GetForecastRequest_City{City: "Paris"}, Days: &days,
	}); err != nil {
		t.Fatalf("get_forecast: %v", err)
	}
	tooMany := int32(99)
	_, err := client.GetForecast(ctx, &weatherv1.GetForecastRequest{
		Location: &weatherv1.GetForecastRequest_City{City: "Paris"}, Days: &tooMany,
	})
	var toolErr *runtime.ToolError
	if !errors.As(err, &toolErr) {
		t.Fatalf("get_forecast with 99 days: %v (%T), want a *runtime.ToolError", err, err)
	}
	_, err = c.CallTool(ctx, "no_such_tool", nil)
	if runtime.CodeOf(err) != runtime.CodeInvalidParams {
		t.Fatalf("no_such_tool: %v, want an invalid_params error", err)
	}
	if _, err := c.ReadResource(ctx, stationsURI); err != nil {
		t.Fatalf("resources/read: %v", err)
	}
	if _, err := c.GetPrompt(ctx, "forecast_summary", map[string]string{"city": "Paris"}); err != nil {
		t.Fatalf("prompts/get: %v", err)
	}

	spans := tel.spans.Ended()
	if len(spans) != 12 {
		t.Errorf("%d spans, want 12 (initialize and 5 calls, each seen by the client and by the server)", len(spans))
	}
	sessionAttrs := map[attribute.Key]string{
		"mcp.session.id":        "*",
		"mcp.protocol.version":  runtime.LatestProtocolVersion,
		"jsonrpc.request.id":    "*",
		"network.protocol.name": "http",
		"network.transport":     "tcp",
	}
	with := func(m map[attribute.Key]string) map[attribute.Key]string {
		out := make(map[attribute.Key]string, len(m)+len(sessionAttrs))
		for k, v := range sessionAttrs {
			out[k] = v
		}
		for k, v := range m {
			out[k] = v
		}
		return out
	}
	errorAttrs := []attribute.Key{"error.type", "rpc.response.status_code"}

	t.Run("initialize", func(t *testing.T) {
		cs := span(t, spans, "initialize", trace.SpanKindClient)
		ss := span(t, spans, "initialize", trace.SpanKindServer)
		for _, s := range []sdktrace.ReadOnlySpan{cs, ss} {
			checkAttrs(t, s, with(map[attribute.Key]string{"mcp.method.name": "initialize"}), errorAttrs...)
		}
		checkPair(t, cs, ss)
	})

	t.Run("tool", func(t *testing.T) {
		// The first get_forecast succeeded; the second is the tool error: tell them apart by
		// their status.
		var ok, failed [2]sdktrace.ReadOnlySpan
		for i, kind := range []trace.SpanKind{trace.SpanKindClient, trace.SpanKindServer} {
			for _, s := range spans {
				if s.Name() != "tools/call get_forecast" || s.SpanKind() != kind {
					continue
				}
				if s.Status().Code == codes.Error {
					failed[i] = s
				} else {
					ok[i] = s
				}
			}
			if ok[i] == nil || failed[i] == nil {
				t.Fatalf("%s: want a successful and a failed tools/call get_forecast span", kind)
			}
		}
		for i := range 2 {
			checkAttrs(t, ok[i], with(map[attribute.Key]string{
				"mcp.method.name":       "tools/call",
				"gen_ai.tool.name":      "get_forecast",
				"gen_ai.operation.name": "execute_tool",
			}), errorAttrs...)
			checkAttrs(t, failed[i], with(map[attribute.Key]string{
				"mcp.method.name":  "tools/call",
				"gen_ai.tool.name": "get_forecast",
				"error.type":       "tool_error",
			}), "rpc.response.status_code")
			if ok[i].Status().Code != codes.Unset {
				t.Errorf("%s: status %v, want unset", ok[i].SpanKind(), ok[i].Status())
			}
		}
		checkPair(t, ok[0], ok[1])
		checkPair(t, failed[0], failed[1])
		if failed[1].Status().Description == "" {
			t.Errorf("server tool error: no status description")
		}
	})

	t.Run("jsonrpc error", func(t *testing.T) {
		cs := span(t, spans, "tools/call no_such_tool", trace.SpanKindClient)
		ss := span(t, spans, "tools/call no_such_tool", trace.SpanKindServer)
		for _, s := range []sdktrace.ReadOnlySpan{cs, ss} {
			checkAttrs(t, s, with(map[attribute.Key]string{
				"mcp.method.name":          "tools/call",
				"gen_ai.tool.name":         "no_such_tool",
				"error.type":               "-32602",
				"rpc.response.status_code": strconv.Itoa(int(runtime.CodeInvalidParams)),
			}))
			if s.Status().Code != codes.Error || s.Status().Description == "" {
				t.Errorf("%s: status %+v, want Error with the JSON-RPC message", s.SpanKind(), s.Status())
			}
		}
		checkPair(t, cs, ss)
	})

	t.Run("resource", func(t *testing.T) {
		// The URI is an attribute, not part of the span name (high cardinality).
		cs := span(t, spans, "resources/read", trace.SpanKindClient)
		ss := span(t, spans, "resources/read", trace.SpanKindServer)
		for _, s := range []sdktrace.ReadOnlySpan{cs, ss} {
			checkAttrs(t, s, with(map[attribute.Key]string{
				"mcp.method.name":  "resources/read",
				"mcp.resource.uri": stationsURI,
			}), append(errorAttrs, "gen_ai.tool.name", "gen_ai.operation.name")...)
		}
		checkPair(t, cs, ss)
	})

	t.Run("prompt", func(t *testing.T) {
		cs := span(t, spans, "prompts/get forecast_summary", trace.SpanKindClient)
		ss := span(t, spans, "prompts/get forecast_summary", trace.SpanKindServer)
		for _, s := range []sdktrace.ReadOnlySpan{cs, ss} {
			checkAttrs(t, s, with(map[attribute.Key]string{
				"mcp.method.name":    "prompts/get",
				"gen_ai.prompt.name": "forecast_summary",
			}), append(errorAttrs, "gen_ai.operation.name")...)
		}
		checkPair(t, cs, ss)
	})

	t.Run("metrics", func(t *testing.T) {
		var rm metricdata.ResourceMetrics
		if err := tel.reader.Collect(ctx, &rm); err != nil {
			t.Fatalf("collect: %v", err)
		}
		common := []attribute.KeyValue{
			attribute.String("mcp.protocol.version", runtime.LatestProtocolVersion),
			attribute.String("network.protocol.name", "http"),
			attribute.String("network.transport", "tcp"),
		}
		set := func(kvs ...attribute.KeyValue) attribute.Set {
			return attribute.NewSet(append(kvs, common...)...)
		}
		tool := []attribute.KeyValue{
			attribute.String("mcp.method.name", "tools/call"),
			attribute.String("gen_ai.tool.name", "get_forecast"),
			attribute.String("gen_ai.operation.name", "execute_tool"),
		}
		want := []attribute.Set{
			set(attribute.String("mcp.method.name", "initialize")),
			set(tool...),
			set(append(tool, attribute.String("error.type", "tool_error"))...),
			set(attribute.String("mcp.method.name", "tools/call"),
				attribute.String("gen_ai.tool.name", "no_such_tool"),
				attribute.String("gen_ai.operation.name", "execute_tool"),
				attribute.String("error.type", "-32602"),
				attribute.String("rpc.response.status_code", "-32602")),
			// The resource's URI is opt-in for metrics: not recorded.
			set(attribute.String("mcp.method.name", "resources/read")),
			set(attribute.String("mcp.method.name", "prompts/get"),
				attribute.String("gen_ai.prompt.name", "forecast_summary")),
		}
		for _, name := range []string{"mcp.server.operation.duration", "mcp.client.operation.duration"} {
			h := histogram(t, rm, name)
			if len(h.DataPoints) != len(want) {
				t.Errorf("%s: %d data points, want %d", name, len(h.DataPoints), len(want))
			}
			for _, w := range want {
				found := false
				for _, dp := range h.DataPoints {
					if dp.Attributes.Equals(&w) {
						found = true
						if dp.Count != 1 {
							t.Errorf("%s %v: count %d, want 1", name, w.ToSlice(), dp.Count)
						}
						if len(dp.Bounds) != 14 || dp.Bounds[0] != 0.01 || dp.Bounds[13] != 300 {
							t.Errorf("%s: bucket bounds %v, want the semantic conventions' advice", name, dp.Bounds)
						}
					}
				}
				if !found {
					var have [][]attribute.KeyValue
					for _, dp := range h.DataPoints {
						have = append(have, dp.Attributes.ToSlice())
					}
					t.Errorf("%s: no data point with attributes %v; have %v", name, w.ToSlice(), have)
				}
			}
		}
	})
}

// histogram returns the float64 histogram named name, checking its unit.
func histogram(t *testing.T, rm metricdata.ResourceMetrics, name string) metricdata.Histogram[float64] {
	t.Helper()
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			if sm.Scope.Name != otelmcp.InstrumentationName {
				t.Errorf("%s: scope %q, want %q", name, sm.Scope.Name, otelmcp.InstrumentationName)
			}
			if m.Unit != "s" {
				t.Errorf("%s: unit %q, want s", name, m.Unit)
			}
			h, ok := m.Data.(metricdata.Histogram[float64])
			if !ok {
				t.Fatalf("%s: %T, want a float64 histogram", name, m.Data)
			}
			return h
		}
	}
	t.Fatalf("no %s metric", name)
	return metricdata.Histogram[float64]{}
}

// ambient is a server interceptor that remembers the span of each request's context as it
// reaches the interceptors: the HTTP server span of otelhttp.
type ambient struct {
	mu    sync.Mutex
	spans []trace.SpanContext
}

func (a *ambient) WrapCall(next runtime.CallFunc) runtime.CallFunc {
	return func(ctx context.Context, req *runtime.Request) (*runtime.Response, error) {
		if req.Method == "tools/call" {
			a.mu.Lock()
			a.spans = append(a.spans, trace.SpanContextFromContext(ctx))
			a.mu.Unlock()
		}
		return next(ctx, req)
	}
}

func (a *ambient) take(t *testing.T) trace.SpanContext {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.spans) != 1 {
		t.Fatalf("%d tools/call requests reached the server, want 1", len(a.spans))
	}
	sc := a.spans[0]
	a.spans = nil
	if !sc.IsValid() {
		t.Fatalf("the server's context holds no HTTP span")
	}
	return sc
}

// Behind otelhttp, the MCP server span's parent is the client's MCP span from _meta and its
// link is the HTTP server span; without trace context in _meta, the HTTP span is the parent.
// WithPublicEndpoint starts a new trace linked to the client's span instead.
func TestTransportSpan(t *testing.T) {
	tel := newTelemetry(t)
	args := &weatherv1.GetForecastRequest{Location: &weatherv1.GetForecastRequest_City{City: "Berlin"}}

	run := func(t *testing.T, serverOpts []otelmcp.Option, traced bool) (trace.SpanContext, sdktrace.ReadOnlySpan, sdktrace.ReadOnlySpan) {
		t.Helper()
		amb := new(ambient)
		srv := newServer(t, runtime.WithInterceptors(amb, tel.interceptor(t, serverOpts...)))
		url := serve(t, otelhttp.NewHandler(srv, "mcp",
			otelhttp.WithTracerProvider(tel.tp), otelhttp.WithPropagators(propagators)))
		var opts []runtime.ClientOption
		if traced {
			// The client's HTTP requests are traced too, as children of its MCP span.
			tr := &http.Transport{}
			t.Cleanup(tr.CloseIdleConnections)
			opts = append(opts,
				runtime.WithInterceptors(tel.interceptor(t)),
				runtime.WithHTTPClient(&http.Client{Transport: otelhttp.NewTransport(tr,
					otelhttp.WithTracerProvider(tel.tp), otelhttp.WithPropagators(propagators))}))
		}
		c := newClient(t, url, opts...)
		if _, err := weatherv1mcp.NewWeatherServiceClient(c).GetForecast(testContext(t), args); err != nil {
			t.Fatalf("get_forecast: %v", err)
		}
		httpSpan := amb.take(t)
		spans := tel.spans.Ended()
		ss := span(t, spans, "tools/call get_forecast", trace.SpanKindServer)
		var cs sdktrace.ReadOnlySpan
		if traced {
			cs = span(t, spans, "tools/call get_forecast", trace.SpanKindClient)
		}
		tel.spans.Reset()
		return httpSpan, cs, ss
	}

	t.Run("meta parent, transport link", func(t *testing.T) {
		httpSpan, cs, ss := run(t, nil, true)
		checkPair(t, cs, ss)
		if httpSpan.SpanID() == cs.SpanContext().SpanID() {
			t.Fatalf("the HTTP server span is the MCP client span")
		}
		if httpSpan.TraceID() != cs.SpanContext().TraceID() {
			t.Errorf("the HTTP server span is in trace %v, want the client's %v (otelhttp propagates it)", httpSpan.TraceID(), cs.SpanContext().TraceID())
		}
		if l := ss.Links(); len(l) != 1 || !l[0].SpanContext.Equal(httpSpan) {
			t.Errorf("server span links %+v, want one to the HTTP server span %v", l, httpSpan.SpanID())
		}
	})

	t.Run("transport parent without meta", func(t *testing.T) {
		httpSpan, _, ss := run(t, nil, false)
		if ss.Parent().SpanID() != httpSpan.SpanID() || ss.Parent().TraceID() != httpSpan.TraceID() {
			t.Errorf("server span's parent %v, want the HTTP server span %v", ss.Parent().SpanID(), httpSpan.SpanID())
		}
		if len(ss.Links()) != 0 {
			t.Errorf("server span links %+v, want none", ss.Links())
		}
		checkAttrs(t, ss, map[attribute.Key]string{"mcp.method.name": "tools/call", "mcp.session.id": "*"})
	})

	t.Run("public endpoint", func(t *testing.T) {
		httpSpan, cs, ss := run(t, []otelmcp.Option{otelmcp.WithPublicEndpoint()}, true)
		if ss.Parent().IsValid() {
			t.Errorf("server span has parent %v, want a new root", ss.Parent().SpanID())
		}
		if ss.SpanContext().TraceID() == cs.SpanContext().TraceID() {
			t.Errorf("server span is in the client's trace")
		}
		var linked []trace.SpanContext
		for _, l := range ss.Links() {
			linked = append(linked, l.SpanContext)
		}
		for _, want := range []trace.SpanContext{httpSpan, cs.SpanContext()} {
			found := false
			for _, l := range linked {
				found = found || (l.TraceID() == want.TraceID() && l.SpanID() == want.SpanID())
			}
			if !found {
				t.Errorf("server span links %v, want one to %v", linked, want.SpanID())
			}
		}
	})
}

// The trace context is added to _meta without disturbing entries the caller set, and the
// server's handler sees the client's baggage.
func TestMetaAndBaggage(t *testing.T) {
	tel := newTelemetry(t)
	ic := tel.interceptor(t)
	srv := newServer(t, runtime.WithInterceptors(ic))
	type seen struct {
		tenant string
		meta   map[string]string
	}
	got := make(chan seen, 1)
	srv.AddTool(runtime.ToolSpec{Name: "whoami", InputSchema: `{"type":"object"}`},
		func(ctx context.Context, req *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
			s := seen{tenant: baggage.FromContext(ctx).Member("tenant").Value(), meta: map[string]string{}}
			if req.Meta != nil {
				for k, v := range req.Meta.Other {
					s.meta[k] = string(v)
				}
			}
			got <- s
			return &runtime.CallToolResult{Content: []runtime.Content{runtime.TextContent("ok")}}, nil
		})
	c := newClient(t, serve(t, srv), runtime.WithInterceptors(ic))
	member, err := baggage.NewMember("tenant", "acme")
	if err != nil {
		t.Fatal(err)
	}
	bag, err := baggage.New(member)
	if err != nil {
		t.Fatal(err)
	}
	ctx := baggage.ContextWithBaggage(testContext(t), bag)
	if _, err := c.CallTool(ctx, "whoami", nil, runtime.WithMeta("example.com/request", "r-1")); err != nil {
		t.Fatalf("whoami: %v", err)
	}
	s := <-got
	if s.tenant != "acme" {
		t.Errorf("baggage tenant = %q in the handler, want acme", s.tenant)
	}
	if s.meta["example.com/request"] != `"r-1"` {
		t.Errorf("_meta %v: the caller's entry is missing", s.meta)
	}
	if s.meta["traceparent"] == "" || s.meta["baggage"] == "" {
		t.Errorf("_meta %v: want traceparent and baggage", s.meta)
	}
}

// A raw tool that answers with isError set is a tool error on both sides: the server sees a
// *runtime.CallToolResult, the untyped CallTool's client sees the raw JSON.
func TestRawToolError(t *testing.T) {
	tel := newTelemetry(t)
	ic := tel.interceptor(t)
	srv := newServer(t, runtime.WithInterceptors(ic))
	srv.AddTool(runtime.ToolSpec{Name: "refuse", InputSchema: `{"type":"object"}`},
		func(context.Context, *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
			return &runtime.CallToolResult{IsError: true, Content: []runtime.Content{runtime.TextContent("no")}}, nil
		})
	c := newClient(t, serve(t, srv), runtime.WithInterceptors(ic))
	res, err := c.CallTool(testContext(t), "refuse", nil)
	if err != nil || !res.IsError {
		t.Fatalf("refuse: %+v, %v; want a result with isError", res, err)
	}
	spans := tel.spans.Ended()
	for _, kind := range []trace.SpanKind{trace.SpanKindClient, trace.SpanKindServer} {
		s := span(t, spans, "tools/call refuse", kind)
		checkAttrs(t, s, map[attribute.Key]string{"gen_ai.tool.name": "refuse", "error.type": "tool_error"}, "rpc.response.status_code")
		if s.Status().Code != codes.Error {
			t.Errorf("%s: status %+v, want Error", kind, s.Status())
		}
	}
}

// In the stateless era (MCP 2026-07-28) the spans carry the request's protocol version and no
// session, and the trace context in _meta still joins the client's span to the server's.
func TestSpansInTheStatelessEra(t *testing.T) {
	tel := newTelemetry(t)
	ic := tel.interceptor(t)
	url := serve(t, newServer(t, runtime.WithInterceptors(ic)))
	c := newClient(t, url, runtime.WithEra(runtime.EraAuto), runtime.WithInterceptors(ic))
	args := &weatherv1.GetForecastRequest{Location: &weatherv1.GetForecastRequest_City{City: "Berlin"}}
	if _, err := weatherv1mcp.NewWeatherServiceClient(c).GetForecast(testContext(t), args); err != nil {
		t.Fatalf("get_forecast: %v", err)
	}
	if v := c.ProtocolVersion(); v != runtime.ProtocolVersion20260728 {
		t.Fatalf("negotiated %q, want %q", v, runtime.ProtocolVersion20260728)
	}
	spans := tel.spans.Ended()
	cs := span(t, spans, "tools/call get_forecast", trace.SpanKindClient)
	ss := span(t, spans, "tools/call get_forecast", trace.SpanKindServer)
	if ss.Parent().SpanID() != cs.SpanContext().SpanID() || ss.Parent().TraceID() != cs.SpanContext().TraceID() {
		t.Errorf("server span's parent %v, want the client span %v", ss.Parent().SpanID(), cs.SpanContext().SpanID())
	}
	for _, s := range []sdktrace.ReadOnlySpan{cs, ss} {
		checkAttrs(t, s, map[attribute.Key]string{"mcp.method.name": "tools/call", "mcp.protocol.version": runtime.ProtocolVersion20260728}, "mcp.session.id")
	}
	checkAttrs(t, span(t, spans, "server/discover", trace.SpanKindClient), map[attribute.Key]string{"mcp.protocol.version": runtime.ProtocolVersion20260728}, "mcp.session.id")
}
