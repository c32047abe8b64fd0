// Package weather implements the example WeatherService (examples/weather/proto) with made-up
// but deterministic data, so that the example server, client and tests agree on what they see.
package weather

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"image"
	"image/color"
	"image/png"
	"math"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
	weatherv1 "github.com/protomcp/protomcp/gen/weather/v1"
	"github.com/protomcp/protomcp/gen/weather/v1/weatherv1mcp"
	"github.com/protomcp/protomcp/runtime"
)

// Service implements weatherv1mcp.WeatherServiceHandler. The zero value is ready to use.
type Service struct {
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// ReportStep is how long GetClimateReport takes per year; zero means half a second.
	ReportStep time.Duration
}

var _ weatherv1mcp.WeatherServiceHandler = (*Service)(nil)

// Limits and defaults of the forecast's length.
const (
	maxDays          = 14
	defaultDays      = 3
	defaultChartDays = 7
)

// places are the cities the service knows by name; others get made-up coordinates.
var places = map[string]*weatherv1.Place{
	"paris":    {Name: "Paris, FR", Coordinates: &weatherv1.Coordinates{Latitude: 48.8566, Longitude: 2.3522}, TimeZone: "Europe/Paris"},
	"berlin":   {Name: "Berlin, DE", Coordinates: &weatherv1.Coordinates{Latitude: 52.52, Longitude: 13.405}, TimeZone: "Europe/Berlin"},
	"tokyo":    {Name: "Tokyo, JP", Coordinates: &weatherv1.Coordinates{Latitude: 35.6762, Longitude: 139.6503}, TimeZone: "Asia/Tokyo"},
	"new york": {Name: "New York, US", Coordinates: &weatherv1.Coordinates{Latitude: 40.7128, Longitude: -74.006}, TimeZone: "America/New_York"},
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// GetForecast returns a made-up forecast: the same place and day always get the same weather.
// It reports progress (one step per day) to clients that ask for it.
func (s *Service) GetForecast(ctx context.Context, req *weatherv1.GetForecastRequest) (*weatherv1.GetForecastResponse, error) {
	place, err := resolve(req)
	if err != nil {
		return nil, err
	}
	days := int32(defaultDays)
	if req.Days != nil {
		days = req.GetDays()
	}
	if days < 1 || days > maxDays {
		return nil, fmt.Errorf("days must be between 1 and %d, got %d", maxDays, days)
	}
	unit := req.GetUnit()
	if unit == weatherv1.TemperatureUnit_TEMPERATURE_UNIT_UNSPECIFIED {
		unit = weatherv1.TemperatureUnit_TEMPERATURE_UNIT_CELSIUS
	}
	now := s.now().UTC()
	fc := forecast(place.GetName(), now, int(days), unit)
	for i, d := range fc {
		// Progress is best effort: a client that is not reading must not fail the forecast.
		_ = runtime.CallerFrom(ctx).NotifyProgress(ctx, float64(i+1), float64(len(fc)), "forecast for "+d.GetDate())
	}
	return &weatherv1.GetForecastResponse{
		Place:    place,
		Days:     fc,
		IssuedAt: timestamppb.New(now.Truncate(time.Hour)),
		Unit:     unit,
	}, nil
}

func resolve(req *weatherv1.GetForecastRequest) (*weatherv1.Place, error) {
	switch loc := req.GetLocation().(type) {
	case *weatherv1.GetForecastRequest_City:
		name := strings.TrimSpace(loc.City)
		if name == "" {
			return nil, errors.New("city is empty")
		}
		key := strings.ToLower(name)
		if i := strings.IndexByte(key, ','); i >= 0 {
			key = strings.TrimSpace(key[:i])
		}
		if p, ok := places[key]; ok {
			return p, nil
		}
		h := hash(key)
		return &weatherv1.Place{
			Name: name,
			Coordinates: &weatherv1.Coordinates{
				Latitude:  float64(h%18000)/100 - 90,
				Longitude: float64(h/18000%36000)/100 - 180,
			},
			TimeZone: "UTC",
		}, nil
	case *weatherv1.GetForecastRequest_Coordinates:
		c := loc.Coordinates
		if math.Abs(c.GetLatitude()) > 90 || math.Abs(c.GetLongitude()) > 180 || math.IsNaN(c.GetLatitude()) || math.IsNaN(c.GetLongitude()) {
			return nil, fmt.Errorf("coordinates %v, %v are not on Earth", c.GetLatitude(), c.GetLongitude())
		}
		return &weatherv1.Place{
			Name:        fmt.Sprintf("%.4f, %.4f", c.GetLatitude(), c.GetLongitude()),
			Coordinates: c,
			TimeZone:    "UTC",
		}, nil
	}
	return nil, errors.New("give a city or coordinates")
}

// baseChance is the lowest chance of precipitation, in percent, under each condition.
var baseChance = map[weatherv1.Condition]int32{
	weatherv1.Condition_CONDITION_SUNNY: 0, weatherv1.Condition_CONDITION_CLOUDY: 20,
	weatherv1.Condition_CONDITION_RAIN: 60, weatherv1.Condition_CONDITION_SNOW: 50,
	weatherv1.Condition_CONDITION_STORM: 70,
}

func forecast(place string, start time.Time, days int, unit weatherv1.TemperatureUnit) []*weatherv1.DailyForecast {
	out := make([]*weatherv1.DailyForecast, 0, days)
	for i := range days {
		date := start.AddDate(0, 0, i).Format(time.DateOnly)
		h := hash(place + "/" + date)
		low := float64(h%20) - 2 // -2..17 °C
		high := low + 3 + float64(h/20%10)
		if unit == weatherv1.TemperatureUnit_TEMPERATURE_UNIT_FAHRENHEIT {
			low, high = low*9/5+32, high*9/5+32
		}
		cond := weatherv1.Condition(1 + h/200%5)
		chance := func(part uint32) int32 {
			return baseChance[cond] + int32((h>>part)%30)
		}
		out = append(out, &weatherv1.DailyForecast{
			Date:      date,
			Condition: cond,
			High:      high,
			Low:       low,
			PrecipitationChance: map[string]int32{
				"morning": chance(3), "afternoon": chance(7), "evening": chance(11), "night": chance(13),
			},
		})
	}
	return out
}

// ListAlerts returns made-up alerts: about one region in three has one.
func (s *Service) ListAlerts(_ context.Context, req *weatherv1.ListAlertsRequest) (*weatherv1.ListAlertsResponse, error) {
	day := s.now().UTC().Truncate(24 * time.Hour)
	resp := &weatherv1.ListAlertsResponse{}
	for _, region := range req.GetRegions() {
		region = strings.ToUpper(strings.TrimSpace(region))
		if len(region) != 2 {
			return nil, fmt.Errorf("region %q is not a two-letter country code", region)
		}
		h := hash(region + "/" + day.Format(time.DateOnly))
		if h%3 != 0 && region != "FR" { // France always has one, for the demo
			continue
		}
		severity := weatherv1.Severity(1 + h/3%3)
		if severity < req.GetMinSeverity() {
			continue
		}
		hazard := []string{"Strong winds", "Heavy rain", "Heat wave", "Thunderstorms"}[h/9%4]
		resp.Alerts = append(resp.Alerts, &weatherv1.Alert{
			Id:       fmt.Sprintf("%s-%s-%d", region, day.Format("20060102"), h%1000),
			Region:   region,
			Severity: severity,
			Headline: fmt.Sprintf("%s in %s", hazard, region),
			StartsAt: timestamppb.New(day.Add(6 * time.Hour)),
			EndsAt:   timestamppb.New(day.Add(30 * time.Hour)),
		})
	}
	slices.SortStableFunc(resp.Alerts, func(a, b *weatherv1.Alert) int { return int(b.GetSeverity() - a.GetSeverity()) })
	return resp, nil
}

// RenderForecastChart draws the daily highs (red) and lows (blue) as a PNG bar chart: a
// result that a message cannot express, so it returns an mcp.v1.ToolResult.
func (s *Service) RenderForecastChart(ctx context.Context, req *weatherv1.RenderForecastChartRequest) (*mcpv1.ToolResult, error) {
	days := int32(defaultChartDays)
	if req.Days != nil {
		days = req.GetDays()
	}
	fc, err := s.GetForecast(ctx, &weatherv1.GetForecastRequest{
		Location: &weatherv1.GetForecastRequest_City{City: req.GetCity()},
		Days:     &days,
	})
	if err != nil {
		return nil, err
	}
	img, err := chart(fc.GetDays())
	if err != nil {
		return nil, err
	}
	first, last := fc.GetDays()[0], fc.GetDays()[len(fc.GetDays())-1]
	summary := fmt.Sprintf("Temperatures in %s from %s to %s (°C): highs in red, lows in blue.",
		fc.GetPlace().GetName(), first.GetDate(), last.GetDate())
	return &mcpv1.ToolResult{Content: []*mcpv1.Content{
		{Kind: &mcpv1.Content_Text{Text: &mcpv1.TextContent{Text: summary}}},
		{Kind: &mcpv1.Content_Image{Image: &mcpv1.ImageContent{Data: img, MimeType: "image/png"}}},
	}}, nil
}

func chart(days []*weatherv1.DailyForecast) ([]byte, error) {
	const barW, gap, height, scale = 12, 8, 160, 4 // pixels; scale pixels per degree
	width := len(days)*(2*barW+gap) + gap
	img := image.NewRGBA(image.Rect(0, 0, width, height))
	fill := func(x0, y0, x1, y1 int, c color.Color) {
		for y := max(y0, 0); y < min(y1, height); y++ {
			for x := x0; x < x1; x++ {
				img.Set(x, y, c)
			}
		}
	}
	fill(0, 0, width, height, color.White)
	zero := height - 40 // the 0 °C line, leaving room for frost
	fill(0, zero, width, zero+1, color.Gray{Y: 160})
	bar := func(x int, v float64, c color.Color) {
		y := zero - int(v*scale)
		if y < zero {
			fill(x, y, x+barW, zero, c)
		} else {
			fill(x, zero, x+barW, y, c)
		}
	}
	for i, d := range days {
		x := gap + i*(2*barW+gap)
		bar(x, d.GetHigh(), color.RGBA{R: 220, G: 60, B: 40, A: 255})
		bar(x+barW, d.GetLow(), color.RGBA{R: 40, G: 90, B: 220, A: 255})
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func hash(s string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(s))
	return h.Sum32()
}
