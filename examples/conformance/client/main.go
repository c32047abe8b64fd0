// Command client is an MCP client for the client scenarios of the official MCP conformance
// suite (@modelcontextprotocol/conformance). The suite starts a mock server for each scenario
// and runs
//
//	MCP_CONFORMANCE_SCENARIO=<scenario> client <server-url>
//
// The scenarios it implements are initialize, tools_call, elicitation-sep1034-client-defaults,
// sse-retry, every auth/* scenario (auth.go: the runtime's OAuth client, configured from
// MCP_CONFORMANCE_CONTEXT) and the 2026-07-28 ones (modern.go: request-metadata,
// sep-2322-client-request-state, http-*, json-schema-*). Tools are called through the clients generated from
// examples/conformance/proto. It exits non-zero when the scenario fails on its side.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	conformancev1 "github.com/protomcp/protomcp/gen/conformance/v1"
	"github.com/protomcp/protomcp/gen/conformance/v1/conformancev1mcp"
	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
	"github.com/protomcp/protomcp/runtime"
)

// scenarios maps a scenario name to what the client does in it.
var scenarios = map[string]func(ctx context.Context, url string, log *slog.Logger) error{
	"initialize":                          runInitialize,
	"tools_call":                          runToolsCall,
	"elicitation-sep1034-client-defaults": runElicitationDefaults,
	"sse-retry":                           runSSERetry,
}

func main() {
	verbose := flag.Bool("v", false, "log at debug level")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: MCP_CONFORMANCE_SCENARIO=<scenario> %s [-v] <server-url>\n", os.Args[0])
		flag.PrintDefaults()
	}
	flag.Parse()
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	url := flag.Arg(flag.NArg() - 1)
	name := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	run, ok := scenarios[name]
	if !ok && strings.HasPrefix(name, "auth/") {
		run, ok = runAuth, true
	}
	if !ok {
		log.Error("unknown or missing MCP_CONFORMANCE_SCENARIO", "scenario", name, "known", known())
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	if err := run(ctx, url, log); err != nil {
		log.Error("scenario failed", "scenario", name, "err", err)
		os.Exit(1)
	}
	log.Info("scenario done", "scenario", name)
}

func known() string {
	names := make([]string, 0, len(scenarios))
	for n := range scenarios {
		names = append(names, n)
	}
	return strings.Join(names, ", ")
}

func newClient(url string, log *slog.Logger, opts ...runtime.ClientOption) *runtime.Client {
	opts = append([]runtime.ClientOption{
		runtime.WithClientInfo(runtime.Implementation{Name: "protomcp-conformance-client", Version: runtime.Version}),
		runtime.WithLogger(log),
		// The mock servers keep resumed GET streams open after the response: stop reading
		// them soon, so that Close does not wait out the default 5 s drain bound.
		runtime.WithDrainLimits(1<<20, 500*time.Millisecond),
	}, opts...)
	return runtime.NewClient(url, opts...)
}

// closeClient ends the session. A mock server that does not support DELETE is not a failure.
func closeClient(c *runtime.Client, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Close(ctx); err != nil {
		log.Debug("close", "err", err)
	}
}

// runInitialize initializes a session and lists the tools.
func runInitialize(ctx context.Context, url string, log *slog.Logger) error {
	c := newClient(url, log)
	defer closeClient(c, log)
	if err := c.Connect(ctx); err != nil {
		return err
	}
	info, _, _ := c.ServerInfo()
	log.Info("initialized", "server", info.Name, "version", c.ProtocolVersion())
	tools, err := c.ListTools(ctx, "")
	if err != nil {
		return err
	}
	log.Info("listed tools", "count", len(tools.Tools))
	return nil
}

// runToolsCall calls add_numbers through the generated client.
func runToolsCall(ctx context.Context, url string, log *slog.Logger) error {
	c := newClient(url, log)
	defer closeClient(c, log)
	res, err := conformancev1mcp.NewMockServerServiceClient(c).AddNumbers(ctx, &conformancev1.AddNumbersRequest{A: 5, B: 3})
	if err != nil {
		return err
	}
	log.Info("add_numbers", "result", resultText(res))
	return nil
}

// runElicitationDefaults accepts the server's elicitation without filling in anything: the
// runtime completes the answer with the schema's defaults (SEP-1034).
func runElicitationDefaults(ctx context.Context, url string, log *slog.Logger) error {
	c := newClient(url, log, runtime.WithElicitationHandler(func(_ context.Context, p *runtime.ElicitParams) (*runtime.ElicitResult, error) {
		log.Info("elicitation", "message", p.Message)
		return &runtime.ElicitResult{Action: "accept"}, nil
	}), runtime.WithStandaloneStream())
	defer closeClient(c, log)
	res, err := conformancev1mcp.NewMockServerServiceClient(c).TestClientElicitationDefaults(ctx, &conformancev1.TestClientElicitationDefaultsRequest{})
	if err != nil {
		return err
	}
	log.Info("test_client_elicitation_defaults", "result", resultText(res))
	return nil
}

// runSSERetry calls test_reconnection, whose stream the server closes before answering: the
// runtime waits for the retry: interval and resumes with GET and Last-Event-ID.
func runSSERetry(ctx context.Context, url string, log *slog.Logger) error {
	c := newClient(url, log)
	defer closeClient(c, log)
	res, err := conformancev1mcp.NewConformanceServiceClient(c).TestReconnection(ctx, &conformancev1.TestReconnectionRequest{})
	if err != nil {
		return err
	}
	log.Info("test_reconnection", "result", resultText(res))
	return nil
}

func resultText(r *mcpv1.ToolResult) string {
	var parts []string
	for _, c := range r.GetContent() {
		if t := c.GetText(); t != nil {
			parts = append(parts, t.GetText())
		}
	}
	if len(parts) == 0 {
		return "(no text)"
	}
	return strings.Join(parts, "\n")
}
