// Command pair calls the echo (or items) tool of an MCP server through one SDK's client: our
// generated client (protomcp), the official go-sdk's, or mcp-go's. Each client runs with its
// defaults on an http.Client whose dialer counts TCP connections, so that the report says how
// many new connections the calls needed after warm-up (zero when the client reuses them).
//
//	pair -client gosdk -url http://127.0.0.1:8081/mcp -d 2s
//	pair -client protomcp -stdio "server-stdio -sdk gosdk" -d 2s
//
// With -stdio, the client launches the command and speaks the stdio transport to it instead.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	mgclient "github.com/mark3labs/mcp-go/client"
	mgtransport "github.com/mark3labs/mcp-go/client/transport"
	mgmcp "github.com/mark3labs/mcp-go/mcp"
	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"

	benchv1 "github.com/protomcp/protomcp/bench/gen/bench/v1"
	"github.com/protomcp/protomcp/bench/gen/bench/v1/benchv1mcp"
	"github.com/protomcp/protomcp/bench/internal/harness"
	"github.com/protomcp/protomcp/runtime"
)

// The session-era version that every server under test speaks; pinned so that the peers'
// clients do not first probe for the stateless 2026 era.
const protocolVersion = "2025-11-25"

func main() {
	url := flag.String("url", "http://127.0.0.1:8081/mcp", "MCP endpoint")
	client := flag.String("client", "protomcp", "client: protomcp, gosdk or mcpgo")
	name := flag.String("name", "", "name of the measurement in the output (default: the client)")
	tool := flag.String("tool", "echo", "tool to call: echo or items")
	text := flag.String("text", "the quick brown fox jumps over the lazy dog", "echo's text")
	n := flag.Int("n", 500, "items' n")
	callers := flag.Int("c", 1, "concurrent callers (1: sequential)")
	dur := flag.Duration("d", 2*time.Second, "how long to measure")
	count := flag.Int("count", 0, "calls per caller to measure (overrides -d)")
	warmup := flag.Int("warmup", 200, "calls per caller before measuring")
	timeout := flag.Duration("timeout", 10*time.Second, "a call running longer is a hang")
	modern := flag.Bool("modern", false, "protomcp's client only: speak MCP 2026-07-28 (no session), as a default client does to a server that speaks it")
	stdio := flag.String("stdio", "", "launch this command (space-separated) and speak stdio to it instead of -url")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the measured calls to this file")
	traceFile := flag.String("trace", "", "write an execution trace of the measured calls to this file")
	flag.Parse()
	if *stdio != "" {
		stdioCommand = strings.Fields(*stdio)
	}
	if *name == "" {
		*name = *client
	}
	var dialer harness.Dialer
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	version := protocolVersion
	if *modern {
		if *client != "protomcp" {
			fmt.Fprintln(os.Stderr, "pair: -modern is for -client protomcp")
			os.Exit(2)
		}
		version = runtime.ProtocolVersion20260728
	}
	call, closeFn, err := connect(ctx, *client, *url, version, &dialer, *callers, *tool, *text, int32(*n))
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "pair %s: connect: %v\n", *client, err)
		os.Exit(1)
	}
	stop := harness.Profile(*cpuprofile, *traceFile)
	res := harness.Run(*name, harness.Options{Callers: *callers, Warmup: *warmup, Duration: *dur, Count: *count, Timeout: *timeout}, &dialer, call)
	stop()
	harness.Print(res)
	closeFn()
}

// stdioCommand is the server command of -stdio, when given.
var stdioCommand []string

func connect(ctx context.Context, kind, url, version string, dialer *harness.Dialer, callers int, tool, text string, n int32) (harness.Call, func(), error) {
	hc := dialer.HTTPClient(callers)
	switch kind {
	case "protomcp":
		var c *runtime.Client
		if stdioCommand != nil {
			var err error
			c, err = runtime.NewCommandClient(exec.Command(stdioCommand[0], stdioCommand[1:]...), runtime.WithProtocolVersion(version))
			if err != nil {
				return nil, nil, err
			}
		} else {
			c = runtime.NewClient(url, runtime.WithHTTPClient(hc), runtime.WithProtocolVersion(version))
		}
		if err := c.Connect(ctx); err != nil {
			return nil, nil, err
		}
		if got := c.ProtocolVersion(); got != version {
			// The rows compare clients of one era: a silent switch would measure another path.
			return nil, nil, fmt.Errorf("the client speaks %s, not the %s asked for", got, version)
		}
		bc := benchv1mcp.NewBenchServiceClient(c)
		closeFn := func() { _ = c.Close(context.Background()) }
		if tool == "items" {
			return func(ctx context.Context, _ int) error {
				out, err := bc.Items(ctx, &benchv1.ItemsRequest{N: n})
				if err == nil && len(out.GetItems()) != int(n) {
					err = fmt.Errorf("got %d items, want %d", len(out.GetItems()), n)
				}
				return err
			}, closeFn, nil
		}
		return func(ctx context.Context, _ int) error {
			out, err := bc.Echo(ctx, &benchv1.EchoRequest{Text: text})
			if err == nil && out.GetText() != text {
				err = fmt.Errorf("echo answered %q", out.GetText())
			}
			return err
		}, closeFn, nil

	case "gosdk":
		c := gomcp.NewClient(&gomcp.Implementation{Name: "pair-gosdk", Version: "1"}, nil)
		var transport gomcp.Transport = &gomcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}
		if stdioCommand != nil {
			transport = &gomcp.CommandTransport{Command: exec.Command(stdioCommand[0], stdioCommand[1:]...)}
		}
		cs, err := c.Connect(ctx, transport, &gomcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
		if err != nil {
			return nil, nil, err
		}
		closeFn := func() { _ = cs.Close() }
		args := map[string]any{"text": text}
		if tool == "items" {
			args = map[string]any{"n": n}
		}
		return func(ctx context.Context, _ int) error {
			res, err := cs.CallTool(ctx, &gomcp.CallToolParams{Name: tool, Arguments: args})
			if err != nil {
				return err
			}
			if res.IsError || res.StructuredContent == nil {
				return errors.New("tool error or no structuredContent")
			}
			return nil
		}, closeFn, nil

	case "mcpgo":
		t, err := mgtransport.NewStreamableHTTP(url, mgtransport.WithHTTPBasicClient(hc))
		if err != nil {
			return nil, nil, err
		}
		c := mgclient.NewClient(t)
		if err := c.Start(ctx); err != nil {
			return nil, nil, err
		}
		var init mgmcp.InitializeRequest
		init.Params.ProtocolVersion = protocolVersion
		init.Params.ClientInfo = mgmcp.Implementation{Name: "pair-mcpgo", Version: "1"}
		if _, err := c.Initialize(ctx, init); err != nil {
			return nil, nil, err
		}
		closeFn := func() { _ = c.Close() }
		args := map[string]any{"text": text}
		if tool == "items" {
			args = map[string]any{"n": n}
		}
		return func(ctx context.Context, _ int) error {
			var req mgmcp.CallToolRequest
			req.Params.Name = tool
			req.Params.Arguments = args
			res, err := c.CallTool(ctx, req)
			if err != nil {
				return err
			}
			if res.IsError || res.StructuredContent == nil {
				return errors.New("tool error or no structuredContent")
			}
			return nil
		}, closeFn, nil
	}
	return nil, nil, fmt.Errorf("unknown client %q (want protomcp, gosdk or mcpgo)", kind)
}
