package weather_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	weatherv1 "github.com/protomcp/protomcp/gen/weather/v1"
	"github.com/protomcp/protomcp/gen/weather/v1/weatherv1mcp"
	"github.com/protomcp/protomcp/runtime"
)

// The example server built as a binary and launched with -stdio serves the generated client
// unchanged: every tool answers, and Close ends the process cleanly (it exits on stdin's end,
// before any signal).
func TestStdioServerBinary(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "weather-server")
	if out, err := exec.Command("go", "build", "-o", bin, "./server").CombinedOutput(); err != nil {
		t.Fatalf("go build ./server: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "-stdio")
	c, err := runtime.NewCommandClient(cmd, runtime.WithStdioShutdown(10*time.Second, time.Second))
	if err != nil {
		t.Fatal(err)
	}
	weather := weatherv1mcp.NewWeatherServiceClient(c)
	ctx := ctx(t)
	days := int32(2)
	fc, err := weather.GetForecast(ctx, &weatherv1.GetForecastRequest{Location: &weatherv1.GetForecastRequest_City{City: "Lima, PE"}, Days: &days})
	if err != nil || len(fc.GetDays()) != 2 {
		t.Fatalf("get_forecast: %v, %v", fc, err)
	}
	if _, err := weather.ListAlerts(ctx, &weatherv1.ListAlertsRequest{Regions: []string{"FR"}}); err != nil {
		t.Fatalf("list_alerts: %v", err)
	}
	chart, err := weather.RenderForecastChart(ctx, &weatherv1.RenderForecastChartRequest{City: "Oslo, NO"})
	if err != nil || len(chart.GetContent()) == 0 {
		t.Fatalf("forecast_chart: %v, %v", chart, err)
	}
	closeCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := c.Close(closeCtx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if cmd.ProcessState == nil || !cmd.ProcessState.Success() {
		t.Errorf("the server did not exit cleanly: %v", cmd.ProcessState)
	}
}
