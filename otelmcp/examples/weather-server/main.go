// Command weather-server serves the example WeatherService (examples/weather in the root
// module) as an MCP server over Streamable HTTP, traced and measured with OpenTelemetry: the
// otelmcp interceptor makes a span per MCP request and records
// mcp.server.operation.duration, otelhttp a span per HTTP request. Exporters come from the
// environment (go.opentelemetry.io/contrib/exporters/autoexport):
//
//	OTEL_TRACES_EXPORTER=console OTEL_METRICS_EXPORTER=none go run ./examples/weather-server
//	OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 go run ./examples/weather-server
//
// It logs the URL it serves on stderr; -addr 127.0.0.1:0 picks a free port.
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

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"

	"github.com/protomcp/protomcp/examples/weather"
	"github.com/protomcp/protomcp/gen/weather/v1/weatherv1mcp"
	"github.com/protomcp/protomcp/otelmcp"
	"github.com/protomcp/protomcp/otelmcp/examples/internal/telemetry"
	"github.com/protomcp/protomcp/runtime"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8082", "address to listen on (its own port, so that the other examples can run beside it; port 0 picks a free one)")
	path := flag.String("path", "/mcp", "URL path of the MCP endpoint")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *addr, *path, log); err != nil {
		log.Error("server failed", "err", err)
		os.Exit(1)
	}
}

// run serves until ctx is done, then shuts down the servers and flushes the telemetry.
func run(ctx context.Context, addr, path string, log *slog.Logger) (err error) {
	shutdownTelemetry, err := telemetry.Setup(ctx, "weather-server")
	if err != nil {
		return err
	}
	defer func() {
		// Exports what is still batched; bounded, in case a collector is unreachable.
		flushCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err = errors.Join(err, shutdownTelemetry(flushCtx))
	}()

	ic, err := otelmcp.NewInterceptor()
	if err != nil {
		return err
	}
	srv := runtime.NewServer(runtime.Implementation{Name: "weather", Title: "Weather example", Version: runtime.Version},
		runtime.WithInterceptors(ic))
	weatherv1mcp.RegisterWeatherServiceHandler(srv, &weather.Service{})

	mux := http.NewServeMux()
	mux.Handle(path, otelhttp.NewHandler(srv, "mcp"))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
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
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("MCP server shutdown: %w", err)
	}
	if err := hs.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("HTTP server shutdown: %w", err)
	}
	return nil
}
