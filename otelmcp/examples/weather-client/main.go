// Command weather-client calls the example WeatherService through the generated typed client,
// traced and measured with OpenTelemetry: one root span for the run, a CLIENT span per MCP
// request (its trace context sent in params._meta, so the server's spans join the trace), an
// HTTP client span per HTTP request, and mcp.client.operation.duration. Exporters come from
// the environment (go.opentelemetry.io/contrib/exporters/autoexport):
//
//	OTEL_TRACES_EXPORTER=console OTEL_METRICS_EXPORTER=none go run ./examples/weather-client -url http://127.0.0.1:8082/mcp
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"

	weatherv1 "github.com/protomcp/protomcp/gen/weather/v1"
	"github.com/protomcp/protomcp/gen/weather/v1/weatherv1mcp"
	"github.com/protomcp/protomcp/otelmcp"
	"github.com/protomcp/protomcp/otelmcp/examples/internal/telemetry"
	"github.com/protomcp/protomcp/runtime"
)

func main() {
	url := flag.String("url", "http://127.0.0.1:8082/mcp", "URL of the MCP endpoint (the traced weather server's default)")
	city := flag.String("city", "Paris, FR", "city of the forecast")
	timeout := flag.Duration("timeout", 30*time.Second, "time allowed for all calls")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := run(ctx, *url, *city, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "client:", err)
		os.Exit(1)
	}
}

// run calls get_forecast and list_alerts in one trace and prints the answers to w.
func run(ctx context.Context, url, city string, w io.Writer) (err error) {
	shutdownTelemetry, err := telemetry.Setup(ctx, "weather-client")
	if err != nil {
		return err
	}
	defer func() {
		flushCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err = errors.Join(err, shutdownTelemetry(flushCtx))
	}()

	ic, err := otelmcp.NewInterceptor()
	if err != nil {
		return err
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	defer transport.CloseIdleConnections()
	c := runtime.NewClient(url,
		runtime.WithInterceptors(ic),
		runtime.WithHTTPClient(&http.Client{Transport: otelhttp.NewTransport(transport)}))
	defer func() {
		err = errors.Join(err, c.Close(context.WithoutCancel(ctx)))
	}()
	weather := weatherv1mcp.NewWeatherServiceClient(c)

	ctx, span := otel.Tracer("github.com/protomcp/protomcp/otelmcp/examples/weather-client").Start(ctx, "weather-client")
	defer span.End()
	defer func() {
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
		}
	}()

	fc, err := weather.GetForecast(ctx, &weatherv1.GetForecastRequest{
		Location: &weatherv1.GetForecastRequest_City{City: city},
	})
	if err != nil {
		return fmt.Errorf("get_forecast: %w", err)
	}
	fmt.Fprintf(w, "Forecast for %s:\n", fc.GetPlace().GetName())
	for _, d := range fc.GetDays() {
		fmt.Fprintf(w, "  %s  %-16s %5.1f / %5.1f\n", d.GetDate(), d.GetCondition(), d.GetHigh(), d.GetLow())
	}
	alerts, err := weather.ListAlerts(ctx, &weatherv1.ListAlertsRequest{Regions: []string{"FR", "DE", "JP"}})
	if err != nil {
		return fmt.Errorf("list_alerts: %w", err)
	}
	fmt.Fprintf(w, "Alerts: %d\n", len(alerts.GetAlerts()))
	return nil
}
