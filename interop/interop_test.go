package interop

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"image"
	"image/png"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/protomcp/protomcp/examples/weather"
	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
	weatherv1 "github.com/protomcp/protomcp/gen/weather/v1"
	"github.com/protomcp/protomcp/gen/weather/v1/weatherv1mcp"
	"github.com/protomcp/protomcp/runtime"
)

// fixedNow is the clock of both servers in the tests that compare results with the Go handler.
var fixedNow = time.Date(2025, 6, 1, 9, 30, 0, 0, time.UTC)

const sdkPackage = "@modelcontextprotocol/sdk"

// clientSummary is what ts/client.mjs prints on stdout.
type clientSummary struct {
	OK                    bool                    `json:"ok"`
	SDKVersion            string                  `json:"sdkVersion"`
	Server                *runtime.Implementation `json:"server"`
	ProtocolVersion       string                  `json:"protocolVersion"`
	SessionID             bool                    `json:"sessionId"`
	Tools                 int                     `json:"tools"`
	ToolNames             []string                `json:"toolNames"`
	Calls                 int                     `json:"calls"`
	ToolErrors            int                     `json:"toolErrors"`
	ProtocolErrors        int                     `json:"protocolErrors"`
	ProgressNotifications int                     `json:"progressNotifications"`
	Prompts               []string                `json:"prompts"`
	ResourceTemplates     []string                `json:"resourceTemplates"`
	StreamedMessages      int                     `json:"streamedMessages"`
	Checks                int                     `json:"checks"`
	Error                 string                  `json:"error"`
}

// runClientMJS runs ts/client.mjs with args and returns the summary it prints last.
func runClientMJS(t *testing.T, dir string, args ...string) clientSummary {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, nodePath(t), append([]string{"client.mjs"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(cmd.Environ(), "INTEROP_DEADLINE_MS=60000")
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("node client.mjs did not finish in time\nstdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	}
	if err != nil {
		t.Fatalf("node client.mjs: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	var sum clientSummary
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		t.Fatalf("client.mjs summary: %v\nstdout:\n%s", err, stdout.String())
	}
	t.Logf("client.mjs summary: %s", lines[len(lines)-1])
	return sum
}

// The TypeScript SDK's Client lists, calls and gets progress from the Go weather server, in
// each of the server's answer modes (JSON unless a handler streams, SSE always, and SSE
// streams the server closes and the client resumes).
func TestTypeScriptClientAgainstGoServer(t *testing.T) {
	t.Parallel()
	dir := ensureNodeModules(t)
	wantSDK := lockedVersion(t, sdkPackage)
	for _, tc := range []struct {
		name    string
		opts    []runtime.ServerOption
		handler weatherv1mcp.WeatherServiceHandler
		resumes bool // the client has to resume streams
	}{
		{"default", nil, &weather.Service{}, false},
		{"sse-responses", []runtime.ServerOption{runtime.WithSSEResponses()}, &weather.Service{}, false},
		// Every call's stream is closed by the server before the handler answers (SEP-1699
		// polling): the SDK must reconnect with GET and Last-Event-ID to get its progress
		// notifications and result.
		{"polling", []runtime.ServerOption{runtime.WithRetryInterval(50 * time.Millisecond)}, pollingService{&weather.Service{}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := append([]runtime.ServerOption{runtime.WithLogger(slog.New(slog.NewTextHandler(t.Output(), nil)))}, tc.opts...)
			srv := runtime.NewServer(runtime.Implementation{Name: "weather", Version: runtime.Version}, opts...)
			weatherv1mcp.RegisterWeatherServiceHandler(srv, tc.handler)
			var resumes atomic.Int64 // GETs that resume a stream
			mux := http.NewServeMux()
			mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodGet && r.Header.Get("Last-Event-ID") != "" {
					resumes.Add(1)
				}
				srv.ServeHTTP(w, r)
			}))
			hs := httptest.NewServer(mux)
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				if err := srv.Shutdown(ctx); err != nil {
					t.Errorf("shutdown: %v", err)
				}
				hs.Close()
			})

			sum := runClientMJS(t, dir, hs.URL+"/mcp")
			if !sum.OK || sum.Error != "" {
				t.Errorf("client.mjs: ok=%v error=%q", sum.OK, sum.Error)
			}
			if sum.SDKVersion != wantSDK {
				t.Errorf("client ran SDK %s, package-lock.json pins %s", sum.SDKVersion, wantSDK)
			}
			if sum.Server == nil || sum.Server.Name != "weather" {
				t.Errorf("serverInfo seen by the TS client = %+v", sum.Server)
			}
			if sum.ProtocolVersion != runtime.LatestProtocolVersion || !sum.SessionID {
				t.Errorf("negotiated %q, session ID %v; want %q and a session", sum.ProtocolVersion, sum.SessionID, runtime.LatestProtocolVersion)
			}
			if sum.Tools != 5 || strings.Join(sum.ToolNames, ",") != "export_forecast,forecast_chart,get_climate_report,get_forecast,list_alerts" {
				t.Errorf("tools = %d %v, want the 5 weather tools", sum.Tools, sum.ToolNames)
			}
			if strings.Join(sum.Prompts, ",") != "plan_trip" || strings.Join(sum.ResourceTemplates, ",") != "weather://stations/{id}" || sum.StreamedMessages != 4 {
				t.Errorf("prompts %v, resource templates %v, streamed messages %d; want plan_trip, weather://stations/{id} and 4", sum.Prompts, sum.ResourceTemplates, sum.StreamedMessages)
			}
			if sum.ProgressNotifications == 0 {
				t.Error("the TS client received no progress notifications")
			}
			if n := resumes.Load(); (n > 0) != tc.resumes {
				t.Errorf("%d streams resumed with GET and Last-Event-ID", n)
			}
			if sum.Calls < 10 || sum.ToolErrors != 3 || sum.ProtocolErrors != 1 {
				t.Errorf("calls=%d toolErrors=%d protocolErrors=%d, want >=10, 3, 1", sum.Calls, sum.ToolErrors, sum.ProtocolErrors)
			}
		})
	}
}

// pollingService is the weather service, but each tool first closes the connection carrying
// its call's SSE stream, so that the client has to resume the stream to get the result.
type pollingService struct{ *weather.Service }

func (p pollingService) GetForecast(ctx context.Context, req *weatherv1.GetForecastRequest) (*weatherv1.GetForecastResponse, error) {
	if err := runtime.CallerFrom(ctx).CloseSSEStream(); err != nil {
		return nil, err
	}
	return p.Service.GetForecast(ctx, req)
}

func (p pollingService) ListAlerts(ctx context.Context, req *weatherv1.ListAlertsRequest) (*weatherv1.ListAlertsResponse, error) {
	if err := runtime.CallerFrom(ctx).CloseSSEStream(); err != nil {
		return nil, err
	}
	return p.Service.ListAlerts(ctx, req)
}

func (p pollingService) RenderForecastChart(ctx context.Context, req *weatherv1.RenderForecastChartRequest) (*mcpv1.ToolResult, error) {
	if err := runtime.CallerFrom(ctx).CloseSSEStream(); err != nil {
		return nil, err
	}
	return p.Service.RenderForecastChart(ctx, req)
}

// The generated Go client calls every tool of an McpServer of the TypeScript SDK that serves
// the weather tools, and decodes the same typed results the Go handler returns; with SSE
// answers (the SDK's default, with resumable streams) and with JSON answers.
func TestGoClientAgainstTypeScriptServer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		args     []string
		progress bool // the server can stream progress before the result
		resumes  bool // the server closes streams, so the client must resume them
	}{
		{"sse", nil, true, false},
		{"json", []string{"--json"}, false, false},
		// The server closes every call's stream at its start and again mid-call (SEP-1699
		// polling): the client resumes it with GET and Last-Event-ID, from the SDK's event store.
		{"sse-polling", []string{"--close-streams"}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := startTSServer(t, append([]string{"--now", fixedNow.Format(time.RFC3339)}, tc.args...)...)
			rt := &countingTransport{base: runtime.DefaultTransport()}
			c := runtime.NewClient(ts.URL,
				runtime.WithHTTPClient(&http.Client{Transport: rt}),
				runtime.WithClientInfo(runtime.Implementation{Name: "protomcp-interop", Version: runtime.Version}),
				runtime.WithLogger(slog.New(slog.NewTextHandler(t.Output(), nil))))
			t.Cleanup(func() {
				if n := rt.resumes.Load(); (n > 0) != tc.resumes {
					t.Errorf("the client resumed %d streams with GET and Last-Event-ID", n)
				}
				rt.base.CloseIdleConnections()
			})
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if err := c.Close(ctx); err != nil {
					t.Errorf("close: %v", err)
				}
			})
			client := weatherv1mcp.NewWeatherServiceClient(c)
			direct := &weather.Service{Now: func() time.Time { return fixedNow }}

			if err := c.Connect(bounded(t)); err != nil {
				t.Fatalf("connect: %v", err)
			}
			if info, caps, _ := c.ServerInfo(); info.Name != "weather-ts" || caps.Tools == nil {
				t.Errorf("server info %+v, capabilities %+v", info, caps)
			}
			if c.ProtocolVersion() != runtime.LatestProtocolVersion || c.SessionID() == "" {
				t.Errorf("negotiated %q with session %q", c.ProtocolVersion(), c.SessionID())
			}
			if err := c.Ping(bounded(t)); err != nil {
				t.Errorf("ping: %v", err)
			}

			t.Run("ListTools", func(t *testing.T) { checkToolList(t, c) })

			t.Run("GetForecast", func(t *testing.T) {
				days := int32(5)
				req := &weatherv1.GetForecastRequest{
					Location: &weatherv1.GetForecastRequest_City{City: "Paris, FR"},
					Days:     &days,
					Unit:     weatherv1.TemperatureUnit_TEMPERATURE_UNIT_FAHRENHEIT,
				}
				var mu sync.Mutex
				var progress []float64
				got, err := client.GetForecast(bounded(t), req, runtime.WithProgress(func(p *runtime.ProgressParams) {
					mu.Lock()
					defer mu.Unlock()
					progress = append(progress, p.Progress)
					if p.Total == nil || *p.Total != 5 || !strings.HasPrefix(p.Message, "forecast for ") {
						t.Errorf("progress %+v: want total 5 and a message", p)
					}
				}))
				if err != nil {
					t.Fatalf("GetForecast: %v", err)
				}
				want, _ := direct.GetForecast(context.Background(), req)
				if !proto.Equal(got, want) {
					t.Errorf("GetForecast from the TS server =\n%v\nthe Go handler says\n%v", got, want)
				}
				mu.Lock()
				defer mu.Unlock()
				if wantN := map[bool]int{true: 5, false: 0}[tc.progress]; len(progress) != wantN {
					t.Errorf("progress notifications %v, want %d", progress, wantN)
				}
			})

			t.Run("GetForecastCoordinates", func(t *testing.T) {
				req := &weatherv1.GetForecastRequest{Location: &weatherv1.GetForecastRequest_Coordinates{
					Coordinates: &weatherv1.Coordinates{Latitude: -33.8688, Longitude: 151.2093},
				}}
				got, err := client.GetForecast(bounded(t), req)
				if err != nil {
					t.Fatalf("GetForecast: %v", err)
				}
				want, _ := direct.GetForecast(context.Background(), req)
				if !proto.Equal(got, want) {
					t.Errorf("GetForecast(coordinates) from the TS server =\n%v\nthe Go handler says\n%v", got, want)
				}
			})

			t.Run("ConcurrentProgress", func(t *testing.T) {
				// Each call's progress callback sees its own call's notifications only.
				var wg sync.WaitGroup
				for i := range 8 {
					wg.Go(func() {
						days := int32(i + 1)
						var n int
						_, err := client.GetForecast(bounded(t), &weatherv1.GetForecastRequest{
							Location: &weatherv1.GetForecastRequest_City{City: "Berlin"},
							Days:     &days,
						}, runtime.WithProgress(func(p *runtime.ProgressParams) {
							n++
							if p.Total == nil || *p.Total != float64(days) {
								t.Errorf("call for %d days got progress %+v", days, p)
							}
						}))
						if err != nil {
							t.Errorf("GetForecast(%d days): %v", days, err)
						}
						if tc.progress && n != int(days) {
							t.Errorf("call for %d days got %d progress notifications", days, n)
						}
					})
				}
				wg.Wait()
			})

			t.Run("ListAlerts", func(t *testing.T) {
				for _, req := range []*weatherv1.ListAlertsRequest{
					{Regions: []string{"FR", "DE", "JP", "US", "IT", "ES"}},
					{Regions: []string{"FR", "DE", "JP", "US", "IT", "ES"}, MinSeverity: weatherv1.Severity_SEVERITY_SEVERE},
					{Regions: []string{"DE"}},
				} {
					got, err := client.ListAlerts(bounded(t), req)
					if err != nil {
						t.Fatalf("ListAlerts(%v): %v", req, err)
					}
					want, _ := direct.ListAlerts(context.Background(), req)
					if !proto.Equal(got, want) {
						t.Errorf("ListAlerts(%v) from the TS server =\n%v\nthe Go handler says\n%v", req, got, want)
					}
				}
			})

			t.Run("RenderForecastChart", func(t *testing.T) {
				days := int32(6)
				req := &weatherv1.RenderForecastChartRequest{City: "Tokyo", Days: &days}
				got, err := client.RenderForecastChart(bounded(t), req)
				if err != nil {
					t.Fatalf("RenderForecastChart: %v", err)
				}
				want, _ := direct.RenderForecastChart(context.Background(), req)
				checkChart(t, got, want)
			})

			t.Run("BadArguments", func(t *testing.T) { checkBadArguments(t, c, client) })
		})
	}
}

// countingTransport counts the GET requests that resume a stream.
type countingTransport struct {
	base    *http.Transport
	resumes atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet && r.Header.Get("Last-Event-ID") != "" {
		c.resumes.Add(1)
	}
	return c.base.RoundTrip(r)
}

// bounded returns a context that ends with the test, after 30 seconds at most.
func bounded(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func checkToolList(t *testing.T, c *runtime.Client) {
	res, err := c.ListTools(bounded(t), "")
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	if res.NextCursor != "" || len(res.Tools) != 3 {
		t.Fatalf("ListTools = %d tools, next cursor %q; want the 3 weather tools", len(res.Tools), res.NextCursor)
	}
	for _, tool := range res.Tools {
		rich := tool.Name == weatherv1mcp.WeatherServiceRenderForecastChartToolName
		switch tool.Name {
		case weatherv1mcp.WeatherServiceGetForecastToolName, weatherv1mcp.WeatherServiceListAlertsToolName, weatherv1mcp.WeatherServiceRenderForecastChartToolName:
		default:
			t.Errorf("unexpected tool %q", tool.Name)
		}
		if tool.Description == "" || tool.Title == "" {
			t.Errorf("%s: title %q, description %q", tool.Name, tool.Title, tool.Description)
		}
		var in, out struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(tool.InputSchema, &in); err != nil || in.Type != "object" || len(in.Properties) == 0 {
			t.Errorf("%s: inputSchema %s (%v)", tool.Name, tool.InputSchema, err)
		}
		hasOut := len(tool.OutputSchema) > 0 && string(tool.OutputSchema) != "null"
		if hasOut == rich {
			t.Errorf("%s: outputSchema present = %v", tool.Name, hasOut)
		}
		if hasOut {
			if err := json.Unmarshal(tool.OutputSchema, &out); err != nil || out.Type != "object" || len(out.Properties) == 0 {
				t.Errorf("%s: outputSchema %s (%v)", tool.Name, tool.OutputSchema, err)
			}
		}
		if a := tool.Annotations; a == nil || a.ReadOnlyHint == nil || !*a.ReadOnlyHint {
			t.Errorf("%s: annotations %+v, want readOnlyHint", tool.Name, a)
		}
	}
}

// checkChart compares the chart from the TS server with the Go handler's: the same summary and
// the same pixels (the PNG encoders differ, the images do not).
func checkChart(t *testing.T, got, want *mcpv1.ToolResult) {
	t.Helper()
	if got.GetIsError() || len(got.GetContent()) != 2 {
		t.Fatalf("chart result %v: want a text and an image", got)
	}
	if g, w := got.GetContent()[0].GetText().GetText(), want.GetContent()[0].GetText().GetText(); g != w {
		t.Errorf("chart text %q, want %q", g, w)
	}
	gi, wi := got.GetContent()[1].GetImage(), want.GetContent()[1].GetImage()
	if gi.GetMimeType() != "image/png" {
		t.Fatalf("chart image type %q", gi.GetMimeType())
	}
	gImg, err := png.Decode(bytes.NewReader(gi.GetData()))
	if err != nil {
		t.Fatalf("chart from the TS server is not a PNG: %v (%.40s)", err, base64.StdEncoding.EncodeToString(gi.GetData()))
	}
	wImg, err := png.Decode(bytes.NewReader(wi.GetData()))
	if err != nil {
		t.Fatal(err)
	}
	if gImg.Bounds() != wImg.Bounds() {
		t.Fatalf("chart is %v, want %v", gImg.Bounds(), wImg.Bounds())
	}
	if p, ok := firstDifference(gImg, wImg); ok {
		t.Errorf("chart pixel %v is %v, want %v", p, gImg.At(p.X, p.Y), wImg.At(p.X, p.Y))
	}
}

func firstDifference(a, b image.Image) (image.Point, bool) {
	r := a.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			ar, ag, ab, aa := a.At(x, y).RGBA()
			br, bg, bb, ba := b.At(x, y).RGBA()
			if ar != br || ag != bg || ab != bb || aa != ba {
				return image.Pt(x, y), true
			}
		}
	}
	return image.Point{}, false
}

// checkBadArguments: arguments the tool refuses come back as errors. The TS SDK reports them,
// and unknown tools too, as tool results with isError (which the typed client turns into a
// *runtime.ToolError), not as JSON-RPC errors.
func checkBadArguments(t *testing.T, c *runtime.Client, client weatherv1mcp.WeatherServiceClient) {
	days := int32(40)
	_, err := client.GetForecast(bounded(t), &weatherv1.GetForecastRequest{
		Location: &weatherv1.GetForecastRequest_City{City: "Paris"},
		Days:     &days,
	})
	var te *runtime.ToolError
	if !errors.As(err, &te) || !strings.Contains(err.Error(), "days must be between 1 and 14") {
		t.Errorf("GetForecast(40 days) error = %v, want a ToolError about days", err)
	}
	_, err = client.ListAlerts(bounded(t), &weatherv1.ListAlertsRequest{Regions: []string{"FRA"}})
	if !errors.As(err, &te) || !strings.Contains(err.Error(), "FRA") {
		t.Errorf("ListAlerts(FRA) error = %v, want a ToolError naming FRA", err)
	}
	_, err = client.RenderForecastChart(bounded(t), &weatherv1.RenderForecastChartRequest{City: " "})
	if !errors.As(err, &te) || !strings.Contains(err.Error(), "city is empty") {
		t.Errorf("RenderForecastChart(blank city) error = %v, want a ToolError about the city", err)
	}

	// Arguments the schema refuses (the SDK validates them with zod before the handler runs).
	for _, tc := range []struct {
		tool, args, mention string
	}{
		{"get_forecast", `{"town":"Paris"}`, "town"},
		{"get_forecast", `{"city":"Paris","days":"three"}`, "days"},
		{"get_forecast", `{"city":"Paris","unit":"KELVIN"}`, "unit"},
		{"list_alerts", `{}`, "regions"},
		{"forecast_chart", `{"days":3}`, "city"},
	} {
		res, err := c.CallTool(bounded(t), tc.tool, json.RawMessage(tc.args))
		if err != nil {
			t.Errorf("%s(%s): %v, want a result with isError", tc.tool, tc.args, err)
			continue
		}
		if !res.IsError || !strings.Contains(res.Text(), tc.mention) {
			t.Errorf("%s(%s) = isError %v, %q; want an error that mentions %s", tc.tool, tc.args, res.IsError, res.Text(), tc.mention)
		}
	}

	res, err := c.CallTool(bounded(t), "no_such_tool", json.RawMessage(`{}`))
	if err == nil && !res.IsError {
		t.Errorf("no_such_tool = %+v, want an error", res)
	}
}

// The Go client negotiates each protocol version it supports with the TypeScript SDK server,
// and calls a tool with progress under it.
func TestGoClientProtocolVersionsAgainstTypeScriptServer(t *testing.T) {
	t.Parallel()
	ts := startTSServer(t, "--now", fixedNow.Format(time.RFC3339))
	direct := &weather.Service{Now: func() time.Time { return fixedNow }}
	for _, version := range []string{runtime.ProtocolVersion20251125, runtime.ProtocolVersion20250618, runtime.ProtocolVersion20250326} {
		t.Run(version, func(t *testing.T) {
			c := runtime.NewClient(ts.URL, runtime.WithProtocolVersion(version))
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if err := c.Close(ctx); err != nil {
					t.Errorf("close: %v", err)
				}
			})
			if err := c.Connect(bounded(t)); err != nil {
				t.Fatalf("connect: %v", err)
			}
			if got := c.ProtocolVersion(); got != version {
				t.Errorf("negotiated %q, want %q", got, version)
			}
			days := int32(2)
			req := &weatherv1.GetForecastRequest{Location: &weatherv1.GetForecastRequest_City{City: "Lima"}, Days: &days}
			var progress atomic.Int64
			got, err := weatherv1mcp.NewWeatherServiceClient(c).GetForecast(bounded(t), req,
				runtime.WithProgress(func(*runtime.ProgressParams) { progress.Add(1) }))
			if err != nil {
				t.Fatalf("GetForecast: %v", err)
			}
			if want, _ := direct.GetForecast(context.Background(), req); !proto.Equal(got, want) {
				t.Errorf("GetForecast = %v, want %v", got, want)
			}
			if progress.Load() != 2 {
				t.Errorf("%d progress notifications, want 2", progress.Load())
			}
		})
	}
}
