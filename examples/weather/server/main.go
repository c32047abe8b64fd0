// Command server serves the example WeatherService as an MCP server over Streamable HTTP.
//
//	go run ./examples/weather/server -addr 127.0.0.1:8080 -path /mcp
package main

import (
	"context"
	"errors"
	"flag"
	"log/slog"
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
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(*addr, *path, log); err != nil {
		log.Error("server failed", "err", err)
		os.Exit(1)
	}
}

func run(addr, path string, log *slog.Logger) error {
	srv := runtime.NewServer(runtime.Implementation{Name: "weather", Title: "Weather example", Version: runtime.Version})
	weatherv1mcp.RegisterWeatherServiceHandler(srv, &weather.Service{})

	mux := http.NewServeMux()
	mux.Handle(path, srv)
	hs := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- hs.ListenAndServe() }()
	log.Info("serving MCP", "url", "http://"+addr+path)

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
