// Command server is an MCP server with the whole fixed surface of the official MCP
// conformance suite (@modelcontextprotocol/conformance): its tools (declared in
// examples/conformance/proto and served through the generated handler, plus one raw tool),
// resources, resource template, prompts, completions and logging. `make conformance` runs the
// suite's server scenarios against it.
//
//	go run ./examples/conformance/server -addr 127.0.0.1:3001
//
// With -addr 127.0.0.1:0 it listens on a free port. Either way it prints the endpoint's URL
// as its first line of standard output, once it accepts connections.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/protomcp/protomcp/gen/conformance/v1/conformancev1mcp"
	"github.com/protomcp/protomcp/runtime"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:3001", "address to listen on (port 0 picks a free port)")
	path := flag.String("path", "/mcp", "URL path of the MCP endpoint")
	verbose := flag.Bool("v", false, "log every session and request at debug level")
	flag.Parse()
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	if err := run(*addr, *path, log); err != nil {
		log.Error("server failed", "err", err)
		os.Exit(1)
	}
}

// newServer returns the conformance server: every tool, resource and prompt the suite's
// server scenarios use.
func newServer(log *slog.Logger) *runtime.Server {
	srv := runtime.NewServer(
		runtime.Implementation{Name: "protomcp-conformance", Title: "protomcp conformance server", Version: runtime.Version},
		runtime.WithLogger(log),
	)
	conformancev1mcp.RegisterConformanceServiceHandler(srv, &tools{reconnectDelay: 300 * time.Millisecond, srv: srv})
	addJSONSchemaTool(srv)
	addParamHeaderTool(srv)
	addTaskTools(srv)
	return srv
}

func run(addr, path string, log *slog.Logger) error {
	srv := newServer(log)
	mux := http.NewServeMux()
	mux.Handle(path, srv)
	// Hardened as the README's Security section shows (no WriteTimeout: it would cut streams).
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Printf("http://%s%s\n", ln.Addr(), path)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdownCtx)
	if err := hs.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
