package interop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/protomcp/protomcp/examples/weather"
	contractv1 "github.com/protomcp/protomcp/gen/contract/v1"
	"github.com/protomcp/protomcp/gen/contract/v1/contractv1mcp"
	weatherv1 "github.com/protomcp/protomcp/gen/weather/v1"
	"github.com/protomcp/protomcp/gen/weather/v1/weatherv1mcp"
	"github.com/protomcp/protomcp/runtime"
)

const inspectorPackage = "@modelcontextprotocol/inspector"

// contractEcho serves the contract service by echoing its arguments.
type contractEcho struct {
	contractv1mcp.UnimplementedContractServiceHandler
}

func (contractEcho) Echo(_ context.Context, req *contractv1.EchoRequest) (*contractv1.EchoResponse, error) {
	return &contractv1.EchoResponse{Request: req, Color: req.GetColor()}, nil
}

func (contractEcho) Known(_ context.Context, req *contractv1.KnownRequest) (*contractv1.KnownResponse, error) {
	return &contractv1.KnownResponse{Request: req}, nil
}

func (contractEcho) Validated(_ context.Context, req *contractv1.ValidatedRequest) (*contractv1.ValidatedResponse, error) {
	return &contractv1.ValidatedResponse{Request: req}, nil
}

// recordingServer serves srv on loopback HTTP and records the arguments of every tools/call,
// as they arrive on the wire.
type recordingServer struct {
	URL  string
	mu   sync.Mutex
	args []toolArgs
}

type toolArgs struct {
	tool string
	args json.RawMessage
}

func startRecording(t *testing.T, srv *runtime.Server) *recordingServer {
	t.Helper()
	rs := &recordingServer{}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			var m struct {
				Method string `json:"method"`
				Params struct {
					Name      string          `json:"name"`
					Arguments json.RawMessage `json:"arguments"`
				} `json:"params"`
			}
			if json.Unmarshal(body, &m) == nil && m.Method == "tools/call" {
				rs.mu.Lock()
				rs.args = append(rs.args, toolArgs{m.Params.Name, m.Params.Arguments})
				rs.mu.Unlock()
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	rs.URL = hs.URL + "/mcp"
	return rs
}

func newWeatherServer() *runtime.Server {
	srv := runtime.NewServer(runtime.Implementation{Name: "weather", Version: "1.0.0"})
	weatherv1mcp.RegisterWeatherServiceHandler(srv, &weather.Service{Now: func() time.Time { return fixedNow }})
	return srv
}

func (contractEcho) LegacyEcho(_ context.Context, req *contractv1.LegacyEchoRequest) (*contractv1.LegacyEchoResponse, error) {
	res := &contractv1.LegacyEchoResponse{Request: req, Etag: proto.String("e1"), Speed: req.Speed}
	proto.SetExtension(res, contractv1.E_Note, "a note")
	return res, nil
}

func (contractEcho) EditionsEcho(_ context.Context, req *contractv1.EditionsEchoRequest) (*contractv1.EditionsEchoResponse, error) {
	return &contractv1.EditionsEchoResponse{Request: req}, nil
}

// newContractServer serves the contract test's proto3, proto2 and editions services.
func newContractServer() *runtime.Server {
	srv := runtime.NewServer(runtime.Implementation{Name: "contract", Version: "1.0.0"})
	contractv1mcp.RegisterContractServiceHandler(srv, contractEcho{})
	contractv1mcp.RegisterLegacyServiceHandler(srv, contractEcho{})
	contractv1mcp.RegisterEditionsServiceHandler(srv, contractEcho{})
	return srv
}

// startConformanceServer builds and runs examples/conformance/server on a free loopback port.
func startConformanceServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "conformance-server")
	if out, err := exec.Command("go", "build", "-o", bin, "../examples/conformance/server").CombinedOutput(); err != nil {
		t.Fatalf("go build the conformance server: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "-addr", "127.0.0.1:0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			line <- strings.TrimSpace(sc.Text())
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case url := <-line:
		return url
	case <-time.After(30 * time.Second):
		t.Fatal("the conformance server did not print its URL")
	}
	return ""
}

// TestInspectorStrict: MCP Inspector's CLI (`tools/list --strict`) finds no portability error
// in the tools of any example server, and no warning on any input schema; it lists the weather
// server's tools over HTTP and, launching the server binary, over stdio.
func TestInspectorStrict(t *testing.T) {
	t.Parallel()
	dir := ensureNodeModules(t)
	lockedVersion(t, inspectorPackage)
	cli := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "inspector", "clients", "cli", "build", "index.js")
	// Each target is what the CLI is given: a URL, or a command it launches over stdio.
	servers := map[string][]string{
		"weather":       {startRecording(t, newWeatherServer()).URL},
		"contract":      {startRecording(t, newContractServer()).URL},
		"conformance":   {startConformanceServer(t)},
		"weather-stdio": {buildWeatherServer(t), "-stdio"},
	}
	for name, target := range servers {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			args := append(append([]string{cli}, target...), "--method", "tools/list", "--strict")
			cmd := exec.CommandContext(ctx, nodePath(t), args...)
			// The CLI keeps a catalog under $HOME; give it a scratch one.
			cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "NO_COLOR=1")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var listed struct {
				Tools []json.RawMessage `json:"tools"`
			}
			if jerr := json.Unmarshal(stdout.Bytes(), &listed); jerr != nil || len(listed.Tools) == 0 {
				t.Fatalf("inspector tools/list: %v, %v\nstdout: %s\nstderr: %s", err, jerr, stdout.String(), stderr.String())
			}
			findings := parseInspectorFindings(stderr.String())
			for _, f := range findings {
				switch {
				case f.severity == "Error":
					t.Errorf("inspector: error on tool %s at %s: %s", f.tool, f.path, f.issue)
				case strings.HasPrefix(f.path, "inputSchema"):
					t.Errorf("inspector: warning on tool %s's input schema at %s: %s", f.tool, f.path, f.issue)
				default:
					t.Logf("inspector: warning on tool %s at %s: %s", f.tool, f.path, f.issue)
				}
			}
			if err != nil && !t.Failed() {
				t.Errorf("inspector exited with %v:\n%s", err, stderr.String())
			}
			t.Logf("%d tools listed, %d findings", len(listed.Tools), len(findings))
		})
	}
}

type inspectorFinding struct {
	severity, tool, path, issue string
}

// parseInspectorFindings reads the --strict report: blocks of "Error: tool \"x\"" or
// "Warning: tool \"x\"" followed by "  Path: ...", "  Issue: ..." and "  Suggestion: ...".
func parseInspectorFindings(report string) []inspectorFinding {
	var out []inspectorFinding
	var cur *inspectorFinding
	for _, line := range strings.Split(report, "\n") {
		switch {
		case strings.HasPrefix(line, "Error: tool "), strings.HasPrefix(line, "Warning: tool "):
			sev, tool, _ := strings.Cut(line, ": tool ")
			out = append(out, inspectorFinding{severity: sev, tool: strings.Trim(tool, `"`)})
			cur = &out[len(out)-1]
		case cur != nil && strings.HasPrefix(strings.TrimSpace(line), "Path: "):
			cur.path = strings.TrimPrefix(strings.TrimSpace(line), "Path: ")
		case cur != nil && strings.HasPrefix(strings.TrimSpace(line), "Issue: "):
			cur.issue = strings.TrimPrefix(strings.TrimSpace(line), "Issue: ")
		}
	}
	return out
}

// ajvSample is one JSON value to validate against a tool's input or output schema.
type ajvSample struct {
	Tool   string          `json:"tool"`
	Schema string          `json:"schema"`
	Value  json.RawMessage `json:"value"`
}

// TestAjvDraft07Strict: every schema of the weather and contract servers compiles under Ajv in
// strict mode as draft-07 (with ajv-formats), and every request the typed clients send, with
// zero and extreme values, and every result the server writes, validates against it.
func TestAjvDraft07Strict(t *testing.T) {
	t.Parallel()
	dir := ensureNodeModules(t)
	var tools []json.RawMessage
	var samples []ajvSample
	ctx := bounded(t)
	record := func(rs *recordingServer, c *runtime.Client, calls func()) {
		calls()
		list, err := c.ListTools(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range list.Tools {
			b, _ := json.Marshal(tool)
			tools = append(tools, b)
		}
		rs.mu.Lock()
		recorded := rs.args
		rs.args = nil
		rs.mu.Unlock()
		// Each recorded request again, as raw JSON, to read the result the server writes.
		for _, a := range recorded {
			samples = append(samples, ajvSample{a.tool, "input", a.args})
			res, err := c.CallTool(ctx, a.tool, a.args)
			if err != nil {
				t.Fatalf("%s: %v", a.tool, err)
			}
			if res.IsError {
				t.Fatalf("%s(%s): %s", a.tool, a.args, res.Text())
			}
			if len(res.StructuredContent) > 0 {
				samples = append(samples, ajvSample{a.tool, "output", res.StructuredContent})
			}
		}
	}

	ws := startRecording(t, newWeatherServer())
	wc := runtime.NewClient(ws.URL)
	t.Cleanup(func() { _ = wc.Close(context.Background()) })
	weatherClient := weatherv1mcp.NewWeatherServiceClient(wc)
	record(ws, wc, func() {
		one, fourteen := int32(1), int32(14)
		for _, req := range []*weatherv1.GetForecastRequest{
			{Location: &weatherv1.GetForecastRequest_City{City: "Paris, FR"}, Days: &one},
			{Location: &weatherv1.GetForecastRequest_Coordinates{Coordinates: &weatherv1.Coordinates{Latitude: -90, Longitude: 180}}, Days: &fourteen, Unit: weatherv1.TemperatureUnit_TEMPERATURE_UNIT_FAHRENHEIT},
			{Location: &weatherv1.GetForecastRequest_Coordinates{Coordinates: &weatherv1.Coordinates{}}},
		} {
			if _, err := weatherClient.GetForecast(ctx, req); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := weatherClient.ListAlerts(ctx, &weatherv1.ListAlertsRequest{Regions: []string{"FR"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := weatherClient.RenderForecastChart(ctx, &weatherv1.RenderForecastChartRequest{City: "Oslo"}); err != nil {
			t.Fatal(err)
		}
	})

	cs := startRecording(t, newContractServer())
	cc := runtime.NewClient(cs.URL)
	t.Cleanup(func() { _ = cc.Close(context.Background()) })
	contract := contractv1mcp.NewContractServiceClient(cc)
	record(cs, cc, func() {
		ratio := math.MaxFloat64
		for _, req := range []*contractv1.EchoRequest{
			// Every required field at its zero value.
			{Color: contractv1.Color_COLOR_RED, Tags: []string{""}},
			// Extremes.
			{
				Count: math.MinInt32, Flag: true, Name: "<&>\u2028", Big: math.MinInt64,
				Color: contractv1.Color_COLOR_GREEN, Mode: contractv1.Mode_MODE_SECOND, Tags: []string{"a", "b"},
				Home:   &contractv1.Address{City: "c", Point: &contractv1.Point{Latitude: -90, Longitude: 180}},
				Others: []*contractv1.Address{{}, {City: "x"}}, ByName: map[string]*contractv1.Address{"": {}},
				Tree:  &contractv1.Tree{Children: []*contractv1.Tree{{}}},
				Ratio: &ratio, Weight: math.MaxFloat32, Total: math.MaxUint64, Blob: []byte{0, 255},
				ByCode: map[int32]string{math.MinInt32: "min", math.MaxInt32: "max"},
				Target: &contractv1.EchoRequest_Postal{Postal: &contractv1.Address{}},
			},
		} {
			if _, err := contract.Echo(ctx, req); err != nil {
				t.Fatal(err)
			}
		}
		value, _ := structpb.NewValue(map[string]any{"a": []any{1.0, nil, "x"}})
		data, _ := structpb.NewStruct(map[string]any{"k": true})
		for _, req := range []*contractv1.KnownRequest{
			{},
			{
				At:   timestamppb.New(time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)),
				Wait: &durationpb.Duration{Seconds: -315576000000, Nanos: -999999999}, Mask: &fieldmaskpb.FieldMask{Paths: []string{"foo_bar", "baz.qux"}},
				Data: data, Value: value, Maybe: wrapperspb.Int64(math.MaxInt64),
				Times: []*timestamppb.Timestamp{timestamppb.New(time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC))},
			},
		} {
			if _, err := contract.Known(ctx, req); err != nil {
				t.Fatal(err)
			}
		}
		legacy := contractv1mcp.NewLegacyServiceClient(cc)
		if _, err := legacy.LegacyEcho(ctx, &contractv1.LegacyEchoRequest{
			Id: proto.String(""), Tags: []string{"t"}, Inner: &contractv1.LegacyInner{N: proto.Int64(math.MinInt64)},
			Options: &contractv1.LegacyEchoRequest_Options{Verbose: proto.Bool(true)},
		}); err != nil {
			t.Fatal(err)
		}
		editions := contractv1mcp.NewEditionsServiceClient(cc)
		if _, err := editions.EditionsEcho(ctx, &contractv1.EditionsEchoRequest{Id: proto.String("x"), Sub: &contractv1.EditionsSub{}, Level: contractv1.Level_LEVEL_HIGH.Enum()}); err != nil {
			t.Fatal(err)
		}
		if _, err := contract.Validated(ctx, &contractv1.ValidatedRequest{
			Email: "ada@example.com", Name: "ada", Percent: 100, Ratio: 0.5, Tags: []string{"a"},
			Labels: map[string]string{"ok": "v"}, Color: contractv1.Color_COLOR_RED, Low: 1, High: 2,
			Deadline: timestamppb.New(time.Now().Add(time.Hour)), Big: 1, Code: "b",
			Contact: &contractv1.ValidatedRequest_Phone{Phone: "+33 1 23 45 67 89"},
		}); err != nil {
			t.Fatal(err)
		}
	})

	in, err := json.Marshal(map[string]any{"tools": tools, "samples": samples})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, nodePath(t), "schemas.mjs")
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var res struct {
		OK        bool     `json:"ok"`
		Compiled  int      `json:"compiled"`
		Validated int      `json:"validated"`
		Errors    []string `json:"errors"`
	}
	if jerr := json.Unmarshal(out, &res); jerr != nil {
		t.Fatalf("node schemas.mjs: %v, %v\nstdout: %s\nstderr: %s", err, jerr, out, stderr.String())
	}
	for _, e := range res.Errors {
		t.Error(e)
	}
	if res.Compiled < 10 || res.Validated != len(samples) || len(samples) < 15 {
		t.Errorf("compiled %d schemas and validated %d of %d samples", res.Compiled, res.Validated, len(samples))
	}
	t.Logf("Ajv (draft-07, strict): %d schemas compiled, %d samples valid", res.Compiled, res.Validated)
}
