// Command client calls every tool, the prompt and the resource template of the example
// WeatherService through the generated typed client and prints the results. It exits with a non-zero status on any error.
//
//	go run ./examples/weather/client -url http://127.0.0.1:8081/mcp
//	go run ./examples/weather/client -stdio -- go run ./examples/weather/server -stdio
//
// With -login, it logs in to a protected server (one started with -auth-issuer) with the
// OAuth authorization code grant: it prints the authorization URL to open in a browser and
// receives the redirect on a loopback port.
//
//	go run ./examples/weather/client -url http://127.0.0.1:8081/mcp -login
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
	weatherv1 "github.com/protomcp/protomcp/gen/weather/v1"
	"github.com/protomcp/protomcp/gen/weather/v1/weatherv1mcp"
	"github.com/protomcp/protomcp/runtime"
	"github.com/protomcp/protomcp/runtime/oauth"
)

func main() {
	url := flag.String("url", "http://127.0.0.1:8081/mcp", "URL of the MCP endpoint (the weather server's default)")
	timeout := flag.Duration("timeout", 30*time.Second, "time allowed for all calls")
	stdio := flag.Bool("stdio", false, "launch the server command given after -- and speak stdio to it")
	login := flag.Bool("login", false, "log in with OAuth when the server requires it (prints the URL to open in a browser)")
	clientID := flag.String("client-id", "", "with -login: a client pre-registered with the authorization server (default: register dynamically)")
	clientSecret := flag.String("client-secret", "", "with -login: the pre-registered client's secret")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	var (
		c   *runtime.Client
		err error
	)
	if *stdio {
		if flag.NArg() == 0 {
			fmt.Fprintln(os.Stderr, "client: -stdio needs the server command after --, e.g. -stdio -- weather-server -stdio")
			os.Exit(2)
		}
		c, err = runtime.NewCommandClient(exec.Command(flag.Arg(0), flag.Args()[1:]...))
	} else {
		var opts []runtime.ClientOption
		if *login {
			lr, lerr := oauth.NewLoopbackRedirect("/callback")
			if lerr != nil {
				fmt.Fprintln(os.Stderr, "client:", lerr)
				os.Exit(1)
			}
			defer lr.Close()
			opts = append(opts, oauth.WithOAuth(oauth.Config{
				ClientID:     *clientID,
				ClientSecret: *clientSecret,
				ClientName:   "weather example client",
				RedirectURL:  lr.RedirectURL(),
				Authorize: lr.Authorize(func(authURL string) error {
					fmt.Fprintf(os.Stderr, "Open this URL in your browser to log in:\n%s\n", authURL)
					return nil
				}),
			}))
		}
		c = runtime.NewClient(*url, opts...)
	}
	if err == nil {
		err = run(ctx, c, os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "client:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, c *runtime.Client, w io.Writer) (err error) {
	defer func() {
		if cerr := c.Close(ctx); err == nil {
			err = cerr
		}
	}()
	weather := weatherv1mcp.NewWeatherServiceClient(c)

	days := int32(3)
	fc, err := weather.GetForecast(ctx, &weatherv1.GetForecastRequest{
		Location: &weatherv1.GetForecastRequest_City{City: "Paris, FR"},
		Days:     &days,
	})
	if err != nil {
		return fmt.Errorf("get_forecast: %w", err)
	}
	fmt.Fprintf(w, "Forecast for %s (issued %s):\n", fc.GetPlace().GetName(), fc.GetIssuedAt().AsTime().Format(time.RFC3339))
	for _, d := range fc.GetDays() {
		fmt.Fprintf(w, "  %s  %-16s %5.1f / %5.1f  rain %d%% in the afternoon\n",
			d.GetDate(), d.GetCondition(), d.GetHigh(), d.GetLow(), d.GetPrecipitationChance()["afternoon"])
	}

	alerts, err := weather.ListAlerts(ctx, &weatherv1.ListAlertsRequest{Regions: []string{"FR", "DE", "JP"}})
	if err != nil {
		return fmt.Errorf("list_alerts: %w", err)
	}
	fmt.Fprintf(w, "Alerts: %d\n", len(alerts.GetAlerts()))
	for _, a := range alerts.GetAlerts() {
		fmt.Fprintf(w, "  [%s] %s (%s, until %s)\n", a.GetSeverity(), a.GetHeadline(), a.GetId(), a.GetEndsAt().AsTime().Format(time.RFC3339))
	}

	chart, err := weather.RenderForecastChart(ctx, &weatherv1.RenderForecastChartRequest{City: "Tokyo"})
	if err != nil {
		return fmt.Errorf("forecast_chart: %w", err)
	}
	fmt.Fprintln(w, "Chart:")
	for _, c := range chart.GetContent() {
		switch k := c.GetKind().(type) {
		case *mcpv1.Content_Text:
			fmt.Fprintf(w, "  text: %s\n", k.Text.GetText())
		case *mcpv1.Content_Image:
			fmt.Fprintf(w, "  image: %s, %d bytes\n", k.Image.GetMimeType(), len(k.Image.GetData()))
		default:
			fmt.Fprintf(w, "  %T\n", k)
		}
	}
	if chart.GetIsError() {
		return fmt.Errorf("forecast_chart reported an error")
	}

	// A server-streaming rpc: each day arrives as soon as the server sends it.
	fmt.Fprintln(w, "Export:")
	exportDays := int32(4)
	for msg, err := range weather.ExportForecast(ctx, &weatherv1.ExportForecastRequest{City: "Berlin", Days: &exportDays}).All() {
		if err != nil {
			return fmt.Errorf("export_forecast: %w", err)
		}
		fmt.Fprintf(w, "  %d/%d %s: %s\n", msg.GetProgress(), msg.GetTotal(), msg.GetMessage(), msg.GetDay().GetCondition())
	}

	// A slow tool that may run as a task: started, then waited for. A server that runs it
	// as a task answers with a handle at once; one that does not answers with the report,
	// which the handle holds (its ID is then "").
	report, err := weather.StartGetClimateReport(ctx, &weatherv1.GetClimateReportRequest{City: "Paris"})
	if err != nil {
		return fmt.Errorf("get_climate_report: %w", err)
	}
	if id := report.ID(); id != "" {
		fmt.Fprintf(w, "Climate report: task %s started\n", id)
	}
	climate, err := report.Wait(ctx)
	if err != nil {
		return fmt.Errorf("get_climate_report: %w", err)
	}
	fmt.Fprintf(w, "Climate report: %s\n", climate.GetSummary())

	// A prompt and a resource template, declared in the proto like the tools.
	plan, err := weather.PlanTrip(ctx, &weatherv1.PlanTripRequest{City: "Paris", Activity: weatherv1.Activity_ACTIVITY_SIGHTSEEING, Days: 2})
	if err != nil {
		return fmt.Errorf("plan_trip: %w", err)
	}
	fmt.Fprintf(w, "Prompt %q: %d message(s)\n", plan.GetDescription(), len(plan.GetMessages()))
	station, err := weather.GetStation(ctx, &weatherv1.GetStationRequest{Id: "tokyo-otemachi"})
	if err != nil {
		return fmt.Errorf("station: %w", err)
	}
	fmt.Fprintf(w, "Station %s in %s: %.1f °C\n", station.GetId(), station.GetPlace().GetName(), station.GetTemperature())
	return nil
}
