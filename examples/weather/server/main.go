// Command server serves the example WeatherService as an MCP server over Streamable HTTP, or
// over stdio for a host that launches it (Claude Desktop, VS Code, the MCP Inspector).
//
//	go run ./examples/weather/server -addr 127.0.0.1:8080 -path /mcp
//	go run ./examples/weather/server -stdio
package main

import (
	"context"
	"errors"
	"flag"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/protomcp/protomcp/examples/weather"
	"github.com/protomcp/protomcp/gen/weather/v1/weatherv1mcp"
	"github.com/protomcp/protomcp/runtime"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "address to listen on")
	path := flag.String("path", "/mcp", "URL path of the MCP endpoint")
	stdio := flag.Bool("stdio", false, "serve over stdin and stdout instead of HTTP (logs go to stderr)")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	run := serveHTTP
	if *stdio {
		run = serveStdio
	}
	if err := run(*addr, *path, log); err != nil {
		log.Error("server failed", "err", err)
		os.Exit(1)
	}
}

func newServer(log *slog.Logger) *runtime.Server {
	srv := runtime.NewServer(runtime.Implementation{Name: "weather", Title: "Weather example", Version: runtime.Version}, runtime.WithLogger(log))
	weatherv1mcp.RegisterWeatherServiceHandler(srv, &weather.Service{})
	return srv
}

// serveStdio serves one client on stdin and stdout until stdin ends, SIGINT or SIGTERM.
func serveStdio(_, _ string, log *slog.Logger) error {
	srv := newServer(log)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := srv.ServeStdio(ctx, os.Stdin, os.Stdout)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdownCtx)
	if errors.Is(err, context.Canceled) {
		return nil // a signal: a clean exit
	}
	return err
}

func serveHTTP(addr, path string, log *slog.Logger) error {
	srv := newServer(log)
	mux := http.NewServeMux()
	mux.Handle(path, srv)
	hs := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		// No WriteTimeout: it would cut SSE streams; the MCP server bounds its writes itself.
	}

	// Listen first, so that the logged URL is one that answers (and has the real port when
	// addr asks for any free one, as make demo does with 127.0.0.1:0).
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	log.Info("serving MCP", "url", "http://"+ln.Addr().String()+path)

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The MCP server first: it ends its sessions' streams, which http.Server.Shutdown would
	// otherwise wait on until its deadline.
	if err := srv.Shutdown(shutdownCtx); err != nil {
		log.Warn("MCP server shutdown", "err", err)
	}
	if err := hs.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
