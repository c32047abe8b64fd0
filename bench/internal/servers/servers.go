// Package servers builds the MCP endpoints under test, one per SDK, each exposing the tools of
// package tools the way that SDK's users would (protomcp from the generated code, go-sdk and
// mcp-go with their typed tool helpers), plus the floor: a plain net/http JSON echo.
package servers

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"syscall"
	"time"

	mgmcp "github.com/mark3labs/mcp-go/mcp"
	mgserver "github.com/mark3labs/mcp-go/server"
	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/protomcp/protomcp/bench/gen/bench/v1/benchv1mcp"
	"github.com/protomcp/protomcp/bench/internal/tools"
	"github.com/protomcp/protomcp/runtime"
)

var quiet = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))

// Protomcp returns a protomcp server with the generated BenchService handler; sse makes it
// answer every call with an SSE stream instead of JSON; extra options come last (a replica
// set's shared stores, say).
func Protomcp(sse bool, extra ...runtime.ServerOption) *runtime.Server {
	opts := []runtime.ServerOption{runtime.WithLogger(quiet)}
	if sse {
		opts = append(opts, runtime.WithSSEResponses())
	}
	s := runtime.NewServer(runtime.Implementation{Name: "protomcp-bench", Version: "1"}, append(opts, extra...)...)
	benchv1mcp.RegisterBenchServiceHandler(s, tools.Proto{})
	return s
}

// GoSDK returns the official go-sdk's Streamable HTTP handler. Its default answer is an SSE
// stream; jsonResponse makes it answer JSON; stateless serves MCP 2026-07-28 (go-sdk speaks
// it only in its Stateless mode).
func GoSDK(jsonResponse, stateless bool) http.Handler {
	s := GoSDKServer()
	return gomcp.NewStreamableHTTPHandler(func(*http.Request) *gomcp.Server { return s },
		&gomcp.StreamableHTTPOptions{JSONResponse: jsonResponse, Stateless: stateless})
}

// GoSDKServer returns the official go-sdk's server with the benchmark tools, for any transport.
func GoSDKServer() *gomcp.Server {
	s := gomcp.NewServer(&gomcp.Implementation{Name: "gosdk-bench", Version: "1"}, nil)
	gomcp.AddTool(s, &gomcp.Tool{Name: tools.Echo, Description: "Returns its text unchanged."},
		func(_ context.Context, _ *gomcp.CallToolRequest, in tools.EchoArgs) (*gomcp.CallToolResult, tools.EchoResult, error) {
			return nil, tools.EchoResult(in), nil
		})
	gomcp.AddTool(s, &gomcp.Tool{Name: tools.Items, Description: "Returns n items."},
		func(_ context.Context, _ *gomcp.CallToolRequest, in tools.ItemsArgs) (*gomcp.CallToolResult, tools.ItemsResult, error) {
			items, err := tools.MakeItems(in.N)
			return nil, tools.ItemsResult{Items: items}, err
		})
	gomcp.AddTool(s, &gomcp.Tool{Name: tools.Slow, Description: "Sleeps for ms milliseconds."},
		func(ctx context.Context, _ *gomcp.CallToolRequest, in tools.SlowArgs) (*gomcp.CallToolResult, tools.SlowResult, error) {
			return nil, tools.SlowResult(in), tools.Sleep(ctx, in.Ms)
		})
	return s
}

// MCPGo returns mcp-go's Streamable HTTP server (JSON answers unless a tool streams).
func MCPGo() http.Handler {
	s := mgserver.NewMCPServer("mcpgo-bench", "1", mgserver.WithToolCapabilities(true))
	s.AddTool(mgmcp.NewTool(tools.Echo, mgmcp.WithDescription("Returns its text unchanged."),
		mgmcp.WithInputSchema[tools.EchoArgs](), mgmcp.WithOutputSchema[tools.EchoResult]()),
		mgmcp.NewStructuredToolHandler(func(_ context.Context, _ mgmcp.CallToolRequest, in tools.EchoArgs) (tools.EchoResult, error) {
			return tools.EchoResult(in), nil
		}))
	s.AddTool(mgmcp.NewTool(tools.Items, mgmcp.WithDescription("Returns n items."),
		mgmcp.WithInputSchema[tools.ItemsArgs](), mgmcp.WithOutputSchema[tools.ItemsResult]()),
		mgmcp.NewStructuredToolHandler(func(_ context.Context, _ mgmcp.CallToolRequest, in tools.ItemsArgs) (tools.ItemsResult, error) {
			items, err := tools.MakeItems(in.N)
			return tools.ItemsResult{Items: items}, err
		}))
	s.AddTool(mgmcp.NewTool(tools.Slow, mgmcp.WithDescription("Sleeps for ms milliseconds."),
		mgmcp.WithInputSchema[tools.SlowArgs](), mgmcp.WithOutputSchema[tools.SlowResult]()),
		mgmcp.NewStructuredToolHandler(func(ctx context.Context, _ mgmcp.CallToolRequest, in tools.SlowArgs) (tools.SlowResult, error) {
			return tools.SlowResult(in), tools.Sleep(ctx, in.Ms)
		}))
	return mgserver.NewStreamableHTTPServer(s)
}

// floorRequest is the part of a JSON-RPC tools/call that the floor reads.
type floorRequest struct {
	ID     json.RawMessage `json:"id"`
	Params struct {
		Arguments tools.EchoArgs `json:"arguments"`
	} `json:"params"`
}

type floorContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type floorResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  struct {
		Content           []floorContent   `json:"content"`
		StructuredContent tools.EchoResult `json:"structuredContent"`
	} `json:"result"`
}

// Floor is the floor every figure is compared with: a plain net/http handler that decodes the
// same JSON-RPC tools/call body with encoding/json and answers the same JSON (a result with
// structuredContent and its text mirror), with no protocol around it.
func Floor() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			// The floor of a standalone GET stream (benchrun's memory rows): an SSE
			// response that stays open, and nothing else, until the client goes.
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 4<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var req floorRequest
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var resp floorResponse
		resp.JSONRPC, resp.ID = "2.0", req.ID
		sc, _ := json.Marshal(tools.EchoResult(req.Params.Arguments))
		resp.Result.Content = []floorContent{{Type: "text", Text: string(sc)}}
		resp.Result.StructuredContent = tools.EchoResult(req.Params.Arguments)
		out, _ := json.Marshal(&resp)
		w.Header().Set("Content-Type", "application/json")
		w.Write(out)
	})
}

// Main serves h at /mcp on -addr until SIGINT or SIGTERM; it is the body of every server
// command. It prints "listening on ADDR" once the socket is open.
func Main(name string, build func(fs *flag.FlagSet) func() http.Handler) {
	fs := flag.NewFlagSet(name, flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:8080", "address to listen on")
	debug := fs.String("debug", "", "serve net/http/pprof's /debug/pprof/ (profiles, traces) on this address")
	mk := build(fs)
	_ = fs.Parse(os.Args[1:])
	if *debug != "" {
		// A listener of its own, so that profiling never shares the measured server's mux.
		go func() {
			if err := http.ListenAndServe(*debug, debugMux()); err != nil {
				fmt.Fprintf(os.Stderr, "%s: -debug: %v\n", name, err)
			}
		}()
	}
	if err := serve(*addr, mk()); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}

// debugMux serves net/http/pprof's handlers.
func debugMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

func serve(addr string, h http.Handler) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(quiet.Handler(), slog.LevelError)}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	fmt.Printf("listening on %s\n", ln.Addr())
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
