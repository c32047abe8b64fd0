package interop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/protomcp/protomcp/examples/weather"
	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
	weatherv1 "github.com/protomcp/protomcp/gen/weather/v1"
	"github.com/protomcp/protomcp/gen/weather/v1/weatherv1mcp"
	"github.com/protomcp/protomcp/runtime"
)

// Our client's task handle against real task servers of the TypeScript SDK's experimental
// tasks (spec 2025-11-25, Tasks): the official "everything" server over stdio, and the SDK's
// own interactive task example over Streamable HTTP. Each tool requires a task
// (execution.taskSupport "required"), so the client learns that from tools/list and sends
// params.task; the input the tasks wait for reaches its handlers on the tasks/result stream.

// taskArgs is a tool's arguments as a Struct, for the typed calls of tools with no proto.
func taskArgs(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The Go client drives the everything server's simulate-research-query task: started with
// StartTypedTask, its status polled while it works through its stages, its clarification
// (input_required) answered by the client's elicitation handler through tasks/result, and its
// report collected with Wait. A plain call of the same tool starts and waits for a task too.
func TestGoTaskClientAgainstEverythingServer(t *testing.T) {
	t.Parallel()
	dir := ensureNodeModules(t)
	t.Logf("%s %s", everythingPackage, lockedVersion(t, everythingPackage))
	var stderr syncBuffer
	var asked atomic.Int32
	cmd := exec.Command(nodePath(t), filepath.Join(dir, "node_modules", everythingPackage, "dist", "index.js"), "stdio")
	c, err := runtime.NewCommandClient(cmd,
		runtime.WithLogger(slog.New(slog.NewTextHandler(&stderr, nil))),
		runtime.WithElicitationHandler(func(_ context.Context, p *runtime.ElicitParams) (*runtime.ElicitResult, error) {
			asked.Add(1)
			if !strings.Contains(p.Message, "multiple interpretations") {
				return nil, fmt.Errorf("unexpected elicitation %q", p.Message)
			}
			return &runtime.ElicitResult{Action: "accept", Content: map[string]any{"interpretation": "programming"}}, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	defer func() {
		if err := c.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
		if t.Failed() {
			t.Logf("server stderr:\n%s", stderr.String())
		}
	}()

	h, err := runtime.StartTypedTask[mcpv1.ToolResult](ctx, c, "simulate-research-query",
		taskArgs(t, map[string]any{"topic": "python", "ambiguous": true}), runtime.WithTaskTTL(2*time.Minute))
	if err != nil {
		t.Fatalf("start simulate-research-query: %v", err)
	}
	if h.ID() == "" {
		t.Fatal("simulate-research-query answered without a task")
	}
	info, err := h.Status(ctx)
	if err != nil {
		t.Fatalf("tasks/get: %v", err)
	}
	if info.ID != h.ID() || info.Status.Terminal() || info.PollInterval != time.Second || info.TTL <= 0 || info.CreatedAt.IsZero() {
		t.Errorf("tasks/get right after the start: %+v", info)
	}
	res, err := h.Wait(ctx)
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	report := textOf(res)
	if !strings.Contains(report, "# Research Report: python (programming)") {
		t.Errorf("report does not carry the clarification:\n%s", report)
	}
	if asked.Load() != 1 {
		t.Errorf("elicitations answered = %d, want 1", asked.Load())
	}
	if info, err := h.Status(ctx); err != nil || info.Status != runtime.TaskCompleted {
		t.Errorf("tasks/get after Wait: %+v, %v", info, err)
	}
	tasks, _, err := c.ListTasks(ctx, "")
	if err != nil || len(tasks) == 0 {
		t.Errorf("tasks/list: %d tasks, %v", len(tasks), err)
	}

	// A plain call of a tool that requires a task: the client makes it one and waits.
	plain, err := runtime.CallTypedTool[mcpv1.ToolResult](ctx, c, "simulate-research-query", taskArgs(t, map[string]any{"topic": "tides"}))
	if err != nil {
		t.Fatalf("plain call: %v", err)
	}
	if !strings.Contains(textOf(plain), "# Research Report: tides") {
		t.Errorf("plain call's report:\n%s", textOf(plain))
	}

	// Cancelled while it works: Wait reports it by its code.
	h, err = runtime.StartTypedTask[mcpv1.ToolResult](ctx, c, "simulate-research-query", taskArgs(t, map[string]any{"topic": "storms"}))
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	if err := h.Cancel(ctx); err != nil {
		t.Fatalf("tasks/cancel: %v", err)
	}
	if _, err := h.Wait(ctx); runtime.CodeOf(err) != runtime.CodeRequestCancelled {
		t.Errorf("Wait on a cancelled task: %v (code %d), want code %d", err, runtime.CodeOf(err), runtime.CodeRequestCancelled)
	}
}

// textOf is the text of a tool result's content blocks.
func textOf(r *mcpv1.ToolResult) string {
	var b strings.Builder
	for _, c := range r.GetContent() {
		b.WriteString(c.GetText().GetText())
	}
	return b.String()
}

// The Go client against the TypeScript SDK's interactive task example server
// (examples/server/simpleTaskInteractive.js) over Streamable HTTP: confirm_delete asks for
// confirmation by elicitation, write_haiku asks the client's model by sampling, each while
// running as a task; the client opens the standalone stream, where the example sends them.
func TestGoTaskClientAgainstTypeScriptTaskServer(t *testing.T) {
	t.Parallel()
	url := startTSTaskExample(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// The example sends the requests of its tasks on the standalone GET stream (spec
	// 2025-11-25, Tasks: "clients SHOULD expect messages to be delivered on any SSE stream,
	// including the HTTP GET stream").
	c := runtime.NewClient(url, runtime.WithStandaloneStream(),
		runtime.WithElicitationHandler(func(_ context.Context, p *runtime.ElicitParams) (*runtime.ElicitResult, error) {
			if !strings.Contains(p.Message, "notes.txt") {
				return nil, fmt.Errorf("unexpected elicitation %q", p.Message)
			}
			return &runtime.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}, nil
		}),
		runtime.WithSamplingHandler(func(_ context.Context, p *runtime.CreateMessageParams) (*runtime.CreateMessageResult, error) {
			return &runtime.CreateMessageResult{Role: "assistant", Model: "test", Content: runtime.TextContent("tasks wait\npolled, then collected\nthe result arrives")}, nil
		}))
	defer func() { _ = c.Close(ctx) }()

	h, err := runtime.StartTypedTask[mcpv1.ToolResult](ctx, c, "confirm_delete", taskArgs(t, map[string]any{"filename": "notes.txt"}))
	if err != nil {
		t.Fatalf("start confirm_delete: %v", err)
	}
	if h.ID() == "" {
		t.Fatal("confirm_delete answered without a task")
	}
	res, err := h.Wait(ctx)
	if err != nil {
		t.Fatalf("confirm_delete: %v", err)
	}
	if got := textOf(res); got != "Deleted 'notes.txt'" {
		t.Errorf("confirm_delete: %q", got)
	}

	// Resumed by ID, as after a restart of the client: a second client collects the task.
	h, err = runtime.StartTypedTask[mcpv1.ToolResult](ctx, c, "write_haiku", taskArgs(t, map[string]any{"topic": "polling"}))
	if err != nil {
		t.Fatalf("start write_haiku: %v", err)
	}
	res, err = runtime.ResumeTypedTask[mcpv1.ToolResult](c, "write_haiku", h.ID()).Wait(ctx)
	if err != nil {
		t.Fatalf("write_haiku: %v", err)
	}
	if got := textOf(res); !strings.Contains(got, "Haiku:\ntasks wait") {
		t.Errorf("write_haiku: %q", got)
	}
}

// startTSTaskExample starts the TypeScript SDK's simpleTaskInteractive example on a free
// loopback port, waits (bounded) until it listens, and stops it when the test ends.
func startTSTaskExample(t *testing.T) string {
	t.Helper()
	dir := ensureNodeModules(t)
	t.Logf("@modelcontextprotocol/sdk %s", lockedVersion(t, "@modelcontextprotocol/sdk"))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	script := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "dist", "esm", "examples", "server", "simpleTaskInteractive.js")
	cmd := exec.Command(nodePath(t), script)
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", script, err)
	}
	listening := make(chan struct{})
	var out syncBuffer
	go func() {
		sc := bufio.NewScanner(stdout)
		once := false
		for sc.Scan() {
			fmt.Fprintln(&out, sc.Text())
			if !once && strings.Contains(sc.Text(), "Starting server on") {
				once = true
				close(listening)
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("simpleTaskInteractive stdout:\n%s\nstderr:\n%s", out.String(), stderr.String())
		}
	})
	select {
	case <-listening:
	case <-time.After(30 * time.Second):
		t.Fatalf("simpleTaskInteractive did not listen within 30s\nstdout:\n%s\nstderr:\n%s", out.String(), stderr.String())
	}
	return fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
}

// tasksClientSummary is what ts/tasks-client.mjs prints on stdout.
type tasksClientSummary struct {
	OK                  bool            `json:"ok"`
	SDKVersion          string          `json:"sdkVersion"`
	ProtocolVersion     string          `json:"protocolVersion"`
	TaskSupport         string          `json:"taskSupport"`
	TaskID              string          `json:"taskId"`
	Created             *tsTask         `json:"created"`
	Statuses            []string        `json:"statuses"`
	StatusNotifications []string        `json:"statusNotifications"`
	Progress            []string        `json:"progress"`
	Messages            []string        `json:"messages"`
	Result              json.RawMessage `json:"result"`
	ResultAgain         json.RawMessage `json:"resultAgain"`
	FinalTask           *tsTask         `json:"finalTask"`
	Listed              bool            `json:"listed"`
	CancelResult        *tsTask         `json:"cancelResult"`
	StreamError         string          `json:"streamError"`
	ToolErrorStatus     *tsTask         `json:"toolErrorStatus"`
	ToolError           *tsToolResult   `json:"toolError"`
	Checks              int             `json:"checks"`
	Error               string          `json:"error"`
}

// tsToolResult is the text content and isError of a CallToolResult.
type tsToolResult struct {
	Content []struct {
		Text string `json:"text"`
	} `json:"content"`
	IsError bool `json:"isError"`
}

// tsTask is a Task as the TypeScript SDK parsed it (spec 2025-11-25, Tasks).
type tsTask struct {
	TaskID        string   `json:"taskId"`
	Status        string   `json:"status"`
	TTL           *float64 `json:"ttl"`
	PollInterval  *float64 `json:"pollInterval"`
	StatusMessage string   `json:"statusMessage"`
}

// runTasksClientMJS runs ts/tasks-client.mjs MODE URL and returns the summary it prints last.
func runTasksClientMJS(t *testing.T, dir, mode, url string) tasksClientSummary {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, nodePath(t), "tasks-client.mjs", mode, url)
	cmd.Dir = dir
	cmd.Env = append(cmd.Environ(), "INTEROP_DEADLINE_MS=60000")
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("node tasks-client.mjs did not finish in time\nstdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	var sum tasksClientSummary
	if jerr := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); jerr != nil {
		t.Fatalf("tasks-client.mjs summary: %v (exit: %v)\nstdout:\n%s\nstderr:\n%s", jerr, err, stdout.String(), stderr.String())
	}
	t.Logf("tasks-client.mjs %s summary: %s", mode, lines[len(lines)-1])
	if err != nil || !sum.OK || sum.Error != "" {
		t.Fatalf("tasks-client.mjs %s: %v: %s\nstderr:\n%s", mode, err, sum.Error, stderr.String())
	}
	return sum
}

// startWeatherServer serves the weather example over Streamable HTTP on a loopback port, with a
// climate report that takes step per year, and shuts it down when the test ends.
func startWeatherServer(t *testing.T, step time.Duration, opts ...runtime.ServerOption) string {
	t.Helper()
	opts = append([]runtime.ServerOption{runtime.WithLogger(slog.New(slog.NewTextHandler(t.Output(), nil)))}, opts...)
	srv := runtime.NewServer(runtime.Implementation{Name: "weather", Version: runtime.Version}, opts...)
	weatherv1mcp.RegisterWeatherServiceHandler(srv, &weather.Service{Now: func() time.Time { return fixedNow }, ReportStep: step})
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		hs.Close()
	})
	return hs.URL
}

// The TypeScript SDK's experimental tasks client (client.experimental.tasks) drives the weather
// example's task tool, get_climate_report (execution.taskSupport "optional"), on the Go server
// over Streamable HTTP (spec 2025-11-25, Tasks): callToolStream creates the task, polls it with
// tasks/get through working to completed and collects a result equal to the Go handler's, with
// a progress notification per year; getTaskResult, getTask and listTasks agree. A handler's
// error ends its task failed, with the tool error as its result. Cancelled while it works,
// tasks/cancel answers cancelled, and so does tasks/get after it.
func TestTypeScriptTaskClientAgainstGoServer(t *testing.T) {
	t.Parallel()
	dir := ensureNodeModules(t)
	wantSDK := lockedVersion(t, sdkPackage)

	// Each answer as JSON where it can be, and each as an SSE stream (WithSSEResponses).
	for _, tc := range []struct {
		name string
		opts []runtime.ServerOption
	}{{"complete", nil}, {"complete-sse", []runtime.ServerOption{runtime.WithSSEResponses()}}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			const step = 300 * time.Millisecond // 4 years: long enough to be polled working
			sum := runTasksClientMJS(t, dir, "complete", startWeatherServer(t, step, tc.opts...))
			if sum.SDKVersion != wantSDK {
				t.Errorf("client ran SDK %s, package-lock.json pins %s", sum.SDKVersion, wantSDK)
			}
			if sum.ProtocolVersion != "2025-11-25" {
				t.Errorf("negotiated %q, want 2025-11-25", sum.ProtocolVersion)
			}
			if sum.Created == nil || sum.Created.Status != "working" || sum.Created.PollInterval == nil || sum.Created.TTL == nil {
				t.Errorf("CreateTaskResult's task: %+v", sum.Created)
			}

			direct := &weather.Service{Now: func() time.Time { return fixedNow }, ReportStep: time.Millisecond}
			years := int32(4)
			want, err := direct.GetClimateReport(context.Background(), &weatherv1.GetClimateReportRequest{City: "Tokyo", Years: &years})
			if err != nil {
				t.Fatal(err)
			}
			for name, raw := range map[string]json.RawMessage{"callToolStream": sum.Result, "getTaskResult": sum.ResultAgain} {
				var res struct {
					StructuredContent json.RawMessage `json:"structuredContent"`
					IsError           bool            `json:"isError"`
				}
				if err := json.Unmarshal(raw, &res); err != nil {
					t.Fatalf("%s result: %v", name, err)
				}
				got := &weatherv1.GetClimateReportResponse{}
				if err := protojson.Unmarshal(res.StructuredContent, got); err != nil {
					t.Fatalf("%s structuredContent %s: %v", name, res.StructuredContent, err)
				}
				if res.IsError || !proto.Equal(got, want) {
					t.Errorf("%s collected (isError %v)\n%v\nwant\n%v", name, res.IsError, got, want)
				}
			}
			// The progress token of the task-augmented tools/call stays valid for the task's life
			// (spec 2025-11-25, Tasks, Progress): the SDK keeps its handler and sees every year.
			if want := []string{"1/4 analysed 2024", "2/4 analysed 2023", "3/4 analysed 2022", "4/4 analysed 2021"}; !slices.Equal(sum.Progress, want) {
				t.Errorf("progress seen by the TS client = %q, want %q", sum.Progress, want)
			}
			if sum.FinalTask == nil || sum.FinalTask.Status != "completed" || !sum.Listed {
				t.Errorf("after the result: getTask %+v, listed %v", sum.FinalTask, sum.Listed)
			}
			// Each progress message becomes the task's status message, which the server announces
			// with notifications/tasks/status on the GET stream (spec 2025-11-25, Tasks, Task
			// Status Notification); the SDK surfaces those to a notification handler.
			for _, year := range []string{"2024", "2023", "2022", "2021"} {
				if !slices.Contains(sum.StatusNotifications, "working analysed "+year) {
					t.Errorf("status notifications %q lack %q", sum.StatusNotifications, "working analysed "+year)
				}
			}
			// A handler's error: the task ends failed with a status message, and tasks/result
			// returns the tool error (spec 2025-11-25, Tasks, "Task Execution Errors").
			if sum.ToolErrorStatus == nil || sum.ToolErrorStatus.Status != "failed" || sum.ToolErrorStatus.StatusMessage == "" {
				t.Errorf("tasks/get of the failed task: %+v", sum.ToolErrorStatus)
			}
			if te := sum.ToolError; te == nil || !te.IsError || len(te.Content) != 1 || te.Content[0].Text != "city is empty" {
				t.Errorf("tasks/result of the failed task: %+v", te)
			}
			t.Logf("statuses polled: %v; status notifications: %v", sum.Statuses, sum.StatusNotifications)
		})
	}

	t.Run("cancel", func(t *testing.T) {
		t.Parallel()
		// A report that would take ten hours: it ends only by being cancelled.
		sum := runTasksClientMJS(t, dir, "cancel", startWeatherServer(t, time.Hour))
		if sum.CancelResult == nil || sum.CancelResult.Status != "cancelled" || sum.CancelResult.TaskID != sum.TaskID {
			t.Errorf("tasks/cancel answered %+v", sum.CancelResult)
		}
		if sum.FinalTask == nil || sum.FinalTask.Status != "cancelled" {
			t.Errorf("tasks/get after tasks/cancel: %+v", sum.FinalTask)
		}
		if len(sum.Result) > 0 && string(sum.Result) != "null" {
			t.Errorf("a cancelled task gave a result: %s", sum.Result)
		}
	})
}
