package gosdk

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/protomcp/protomcp/runtime"
)

// protomcp's stdio client against a go-sdk server speaking stdio's messages (its IOTransport)
// over pipes: calls, progress routed to the call that asked for it, an elicitation and log
// messages from the server, cancellation that reaches the server's handler, and Close ending
// the go-sdk session.
func TestStdioClientAgainstGoSDKServer(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "go-sdk-stdio", Version: "1"}, nil)
	type in struct {
		Name string `json:"name"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "greet"}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello " + a.Name}}}, nil, nil
	})
	server.AddTool(&mcp.Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		for i := 1; i <= 3; i++ {
			if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: float64(i), Total: 3}); err != nil {
				return nil, err
			}
		}
		if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "warning", Data: "asking"}); err != nil {
			return nil, err
		}
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "who are you?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"v":{"type":"string"}}}`)})
		if err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "you are " + res.Content["v"].(string)}}}, nil
	})
	started, cancelled := make(chan struct{}), make(chan struct{})
	server.AddTool(&mcp.Tool{Name: "wait", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		close(started)
		select {
		case <-ctx.Done():
			close(cancelled)
			return nil, ctx.Err()
		case <-time.After(time.Minute):
			return &mcp.CallToolResult{}, nil
		}
	})

	c2sR, c2sW := io.Pipe()
	s2cR, s2cW := io.Pipe()
	ran := make(chan error, 1)
	go func() { ran <- server.Run(context.Background(), &mcp.IOTransport{Reader: c2sR, Writer: s2cW}) }()
	var (
		mu   sync.Mutex
		logs []string
	)
	c := runtime.NewStdioClient(s2cR, c2sW,
		runtime.WithElicitationHandler(func(_ context.Context, p *runtime.ElicitParams) (*runtime.ElicitResult, error) {
			return &runtime.ElicitResult{Action: "accept", Content: map[string]any{"v": "ada"}}, nil
		}),
		runtime.WithLogHandler(func(_ context.Context, p *runtime.LogMessageParams) {
			mu.Lock()
			defer mu.Unlock()
			logs = append(logs, p.Data.(string))
		}))
	ctx := testCtx(t)

	if err := c.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	if info, _, _ := c.ServerInfo(); info.Name != "go-sdk-stdio" {
		t.Fatalf("server info %+v", info)
	}
	if err := c.SetLogLevel(ctx, runtime.LevelInfo); err != nil {
		t.Fatal(err)
	}
	res, err := c.CallToolJSON(ctx, "greet", map[string]any{"name": "ada"})
	if err != nil || res.Text() != "hello ada" {
		t.Fatalf("greet: %v %v", res.Text(), err)
	}
	var progress []float64
	res, err = c.CallToolJSON(ctx, "ask", nil, runtime.WithProgress(func(p *runtime.ProgressParams) {
		progress = append(progress, p.Progress) // in order, before the call returns
	}))
	if err != nil || res.Text() != "you are ada" {
		t.Fatalf("ask: %q %v", res.Text(), err)
	}
	if len(progress) != 3 || progress[2] != 3 {
		t.Errorf("progress %v, want 1, 2, 3", progress)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(logs)
		mu.Unlock()
		if n == 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	mu.Lock()
	if len(logs) != 1 || logs[0] != "asking" {
		t.Errorf("log messages %v, want [asking]", logs)
	}
	mu.Unlock()

	callCtx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := c.CallToolJSON(callCtx, "wait", nil)
		errc <- err
	}()
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("the wait tool did not start")
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call: %v", err)
	}
	select {
	case <-cancelled:
	case <-ctx.Done():
		t.Fatal("notifications/cancelled did not reach the go-sdk handler")
	}

	if err := c.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
	select {
	case <-ran:
	case <-ctx.Done():
		t.Fatal("the go-sdk session did not end when the client closed")
	}
}
