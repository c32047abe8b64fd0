package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/protomcp/protomcp/examples/weather"
	weatherv1 "github.com/protomcp/protomcp/gen/weather/v1"
	"github.com/protomcp/protomcp/gen/weather/v1/weatherv1mcp"
	"github.com/protomcp/protomcp/runtime"
)

// askingService is the weather service whose forecast first asks the user (elicitation)
// how many days they want.
type askingService struct{ *weather.Service }

func (s askingService) GetForecast(ctx context.Context, req *weatherv1.GetForecastRequest) (*weatherv1.GetForecastResponse, error) {
	res, err := runtime.CallerFrom(ctx).Elicit(ctx, &runtime.ElicitParams{
		Message:         "How many days of forecast?",
		RequestedSchema: json.RawMessage(`{"type":"object","properties":{"days":{"type":"integer","minimum":1,"maximum":7}},"required":["days"]}`),
	})
	if err != nil {
		return nil, err
	}
	if days, ok := res.Content["days"].(float64); ok && res.Action == "accept" {
		d := int32(days)
		req.Days = &d
	}
	return s.Service.GetForecast(ctx, req)
}

// A generated client and a server in the same process, as in a test: no socket, no child
// process. The server's request for input (elicitation) is answered by the client's handler,
// and its progress notifications arrive, in order, before the call returns.
func ExampleNewInMemoryClient() {
	srv := runtime.NewServer(runtime.Implementation{Name: "weather", Version: "1.0.0"}, runtime.WithLogger(discardLogger()))
	weatherv1mcp.RegisterWeatherServiceHandler(srv, askingService{&weather.Service{Now: exampleNow}})
	ctx := context.Background()
	defer srv.Shutdown(ctx) // after the client's Close

	c, err := runtime.NewInMemoryClient(ctx, srv,
		runtime.WithElicitationHandler(func(_ context.Context, p *runtime.ElicitParams) (*runtime.ElicitResult, error) {
			fmt.Println("asked:", p.Message)
			return &runtime.ElicitResult{Action: "accept", Content: map[string]any{"days": 3}}, nil
		}))
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	defer c.Close(ctx)

	fc, err := weatherv1mcp.NewWeatherServiceClient(c).GetForecast(ctx,
		&weatherv1.GetForecastRequest{Location: &weatherv1.GetForecastRequest_City{City: "Paris, FR"}},
		runtime.WithProgress(func(p *runtime.ProgressParams) {
			fmt.Printf("progress: %v of %v\n", p.Progress, *p.Total)
		}))
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println(fc.GetPlace().GetName(), len(fc.GetDays()), "days")
	// Output:
	// asked: How many days of forecast?
	// progress: 1 of 3
	// progress: 2 of 3
	// progress: 3 of 3
	// Paris, FR 3 days
}
