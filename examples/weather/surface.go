package weather

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
	weatherv1 "github.com/protomcp/protomcp/gen/weather/v1"
	"github.com/protomcp/protomcp/gen/weather/v1/weatherv1mcp"
	"github.com/protomcp/protomcp/runtime"
)

// Service completes the station resource's {id} beyond what an enum could say.
var _ weatherv1mcp.WeatherServiceGetStationCompleter = (*Service)(nil)

// ExportForecast streams a forecast day by day: each day is sent as soon as it is computed
// (a progress notification carrying the day), and the last one is the tool's result.
func (s *Service) ExportForecast(ctx context.Context, req *weatherv1.ExportForecastRequest, stream *runtime.ServerStream[weatherv1.ExportForecastResponse]) error {
	place, err := resolve(&weatherv1.GetForecastRequest{Location: &weatherv1.GetForecastRequest_City{City: req.GetCity()}})
	if err != nil {
		return err
	}
	days := int32(maxDays)
	if req.Days != nil {
		days = req.GetDays()
	}
	if days < 1 || days > maxDays {
		return fmt.Errorf("days must be between 1 and %d, got %d", maxDays, days)
	}
	fc := forecast(place.GetName(), s.now().UTC(), int(days), weatherv1.TemperatureUnit_TEMPERATURE_UNIT_CELSIUS)
	for i, d := range fc {
		if err := stream.Send(&weatherv1.ExportForecastResponse{
			Progress: int32(i + 1),
			Total:    int32(len(fc)),
			Message:  "exported " + d.GetDate(),
			Day:      d,
		}); err != nil {
			return err
		}
	}
	return nil
}

// activities say what each activity of the trip-planning prompt needs from the weather.
var activities = map[weatherv1.Activity]string{
	weatherv1.Activity_ACTIVITY_HIKING:      "hiking: dry days with mild temperatures; avoid storms",
	weatherv1.Activity_ACTIVITY_SIGHTSEEING: "sightseeing: outdoor visits on dry days, museums on wet ones",
	weatherv1.Activity_ACTIVITY_BEACH:       "a beach holiday: sunny and warm days",
}

// PlanTrip renders the trip-planning prompt: the forecast for the trip's days and the
// activity's needs, and a request for a day-by-day plan.
func (s *Service) PlanTrip(ctx context.Context, req *weatherv1.PlanTripRequest) (*mcpv1.PromptResult, error) {
	need, ok := activities[req.GetActivity()]
	if !ok {
		return nil, runtime.Errorf(runtime.CodeInvalidParams, "choose an activity: hiking, sightseeing or beach")
	}
	days := req.GetDays()
	if days == 0 {
		days = defaultDays
	}
	fc, err := s.GetForecast(ctx, &weatherv1.GetForecastRequest{
		Location: &weatherv1.GetForecastRequest_City{City: req.GetCity()},
		Days:     &days,
	})
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Plan a %d-day trip to %s for %s.\n\nThe forecast:\n", days, fc.GetPlace().GetName(), need)
	for _, d := range fc.GetDays() {
		fmt.Fprintf(&b, "- %s: %s, %.0f to %.0f °C\n", d.GetDate(), conditionName(d.GetCondition()), d.GetLow(), d.GetHigh())
	}
	b.WriteString("\nGive one line per day: what to do, and what to bring.")
	return &mcpv1.PromptResult{
		Description: "A " + fmt.Sprint(days) + "-day trip to " + fc.GetPlace().GetName(),
		Messages: []*mcpv1.PromptMessage{{
			Role:    mcpv1.Role_ROLE_USER,
			Content: &mcpv1.Content{Kind: &mcpv1.Content_Text{Text: &mcpv1.TextContent{Text: b.String()}}},
		}},
	}, nil
}

func conditionName(c weatherv1.Condition) string {
	return strings.ToLower(strings.TrimPrefix(c.String(), "CONDITION_"))
}

// stations are the weather stations of the station resource, by identifier.
var stations = map[string]string{
	"paris-montsouris": "paris",
	"berlin-tempelhof": "berlin",
	"tokyo-otemachi":   "tokyo",
	"new-york-central": "new york",
}

// GetStation reads the weather://stations/{id} resource.
func (s *Service) GetStation(_ context.Context, req *weatherv1.GetStationRequest) (*weatherv1.Station, error) {
	city, ok := stations[req.GetId()]
	if !ok {
		return nil, runtime.Errorf(runtime.CodeResourceNotFound, "no station %q; try one of %s", req.GetId(), strings.Join(stationIDs(), ", "))
	}
	place := places[city]
	today := forecast(place.GetName(), s.now().UTC(), 1, weatherv1.TemperatureUnit_TEMPERATURE_UNIT_CELSIUS)[0]
	return &weatherv1.Station{Id: req.GetId(), Place: place, Temperature: (today.GetHigh() + today.GetLow()) / 2}, nil
}

// CompleteGetStation completes the station resource's {id} from the known stations.
func (s *Service) CompleteGetStation(_ context.Context, p *runtime.CompleteParams) (*runtime.Completion, error) {
	if p.Argument.Name != "id" {
		return nil, errors.New("the station resource has one variable, id")
	}
	var out []string
	for _, id := range stationIDs() {
		if strings.HasPrefix(id, strings.ToLower(p.Argument.Value)) {
			out = append(out, id)
		}
	}
	return &runtime.Completion{Values: out}, nil
}

func stationIDs() []string {
	ids := make([]string, 0, len(stations))
	for id := range stations {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
